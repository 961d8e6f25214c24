"""Beat's side of enqueueing. The services send the work they make due themselves (on
commit, memoryhub.pipeline.tasks.send_on_commit); this module only walks every project for the
periodic scan. scan_project and send stay as names for existing callers."""

from __future__ import annotations

import logging

from memoryhub.core.exceptions import ApplicationError
from memoryhub.pipeline import services
from memoryhub.pipeline.tasks import send_on_commit as send
from projects.models import Project

logger = logging.getLogger(__name__)

__all__ = ["scan_all", "scan_project", "send"]


def scan_project(project: Project) -> dict[str, int]:
    return services.pipeline_scan_project(project=project)


def scan_all() -> None:
    for project in Project.objects.order_by("pk").iterator():
        try:
            services.pipeline_scan_project(project=project)
        except ApplicationError:
            # A project whose pipeline settings are invalid must not stop the others' work.
            logger.exception("Pipeline scan of project %s skipped", project.slug)
