from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.http import Http404

from accounts.actors import Actor
from memoryhub.core.exceptions import ApplicationError
from memoryhub.pipeline.dream import runner, schedule, selectors
from projects.commands import project_for_command


class Command(BaseCommand):
    help = (
        "Dream about one session window of a project now (the latest session by default), "
        "bypassing idle time, suppression windows and cooldown; on a worker, or --now."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--session", help="a session id or external id")
        parser.add_argument("--now", action="store_true", help="run here instead of a worker")

    def handle(self, *args: Any, **options: Any) -> str:
        project = project_for_command(options["slug"])
        try:
            session = (
                selectors.window_get(project=project, ref=options["session"])
                if options["session"]
                else selectors.latest_window(project=project)
            )
            job = schedule.dream_request(
                project=project,
                session=session,
                actor=Actor.for_system("cli"),
                enqueue=not options["now"],
            )
        except (ApplicationError, Http404) as exc:
            raise CommandError(str(exc)) from exc
        if not options["now"]:
            return f"Dream of {session.external_id} queued (job {job.pk}); see bank/dream/."
        outcome = runner.dream_run(job_id=job.pk)
        job.refresh_from_db()
        if outcome != "done":
            return f"Dream of {session.external_id} {outcome}: {job.last_error or 'lease held'}"
        rounds = ", ".join(
            f"{r['name']} {r.get('operations') or r.get('skipped') or {}}"
            for r in job.detail.get("rounds", [])
        )
        return f"Dream of {session.external_id} done: {rounds}; {job.detail['stamped']} stamped."
