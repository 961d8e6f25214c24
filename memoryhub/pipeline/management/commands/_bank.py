from __future__ import annotations

from django.core.management.base import CommandError

from projects.models import Project


def project_by_slug(slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise CommandError(f"No project {slug!r}.")
    return project
