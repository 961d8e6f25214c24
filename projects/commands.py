"""What operators' management commands share, across apps."""

from __future__ import annotations

from django.core.management.base import CommandError

from projects.models import Project
from projects.selectors import project_by_slug


def project_for_command(slug: str) -> Project:
    """The project named `slug`, or the command stops with a one-line error."""
    project = project_by_slug(slug=slug)
    if project is None:
        raise CommandError(f"No project {slug!r}.")
    return project
