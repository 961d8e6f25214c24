from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from accounts.actors import Actor
from memoryhub.pipeline import services
from projects.commands import project_for_command


class Command(BaseCommand):
    help = "Mark a project's stage 2 dirty and send its due work to the workers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")

    def handle(self, *args: Any, **options: Any) -> str:
        project = project_for_command(options["slug"])
        sent = services.bank_enqueue(project=project, actor=Actor.for_system("cli"))
        return f"Enqueued {sent['stage1']} extraction(s) and {sent['stage2']} stage 2."
