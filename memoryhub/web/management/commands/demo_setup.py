from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from accounts.actors import Actor
from accounts.services import token_create, user_get_or_create
from memoryhub.web.demo import demo_content
from projects.models import Project
from projects.services import project_create


class Command(BaseCommand):
    help = (
        "Create the demo user, project and token once, with sessions and memories to review "
        "(used by `make run`)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="demo")
        parser.add_argument("--project", default="demo")

    def handle(self, *args: Any, **options: Any) -> str:
        if Project.objects.filter(slug=options["project"]).exists():
            return (
                f"Demo project {options['project']!r} exists; create more tokens with "
                f"`manage.py token_create --user {options['username']}`."
            )
        actor = Actor.for_system("cli")
        user, _, password = user_get_or_create(username=options["username"], actor=actor)
        project = project_create(
            slug=options["project"], name="Demo project", owner=user, actor=actor
        )
        _, raw = token_create(user=user, name="demo agent", project=project, actor=actor)
        demo_content(project=project, user=user)
        lines = [
            "Demo setup (shown once, keep it):",
            f"  user:     {user.username}" + (f"  password: {password}" if password else ""),
            f"  project:  {project.slug}",
            f"  token:    {raw}",
            f"  dashboard: {settings.SITE_URL}/  (sign in as {user.username}; the worker turns "
            "the demo sessions into proposed memories within a minute)",
            "  try:     curl -H 'Authorization: Bearer <token>' "
            f"{settings.SITE_URL}/api/v1/projects/{project.slug}/memories/",
        ]
        return "\n".join(lines)
