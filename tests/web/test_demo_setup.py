"""`make run`'s demo project has something to look at: sessions and memories to review."""

from __future__ import annotations

from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from accounts.models import User
from memoryhub.memories.models import Memory
from memoryhub.pipeline import services as pipeline_services
from memoryhub.sessions.models import AgentSession
from projects.models import Project


def test_demo_setup_fills_the_dashboard(db: None) -> None:
    call_command("demo_setup")
    project = Project.objects.get(slug="demo")
    assert project.settings["review_required"] is True
    assert AgentSession.objects.filter(project=project).count() == 4
    proposed = Memory.objects.filter(project=project, status="proposed")
    assert proposed.count() == 3
    assert Memory.objects.filter(project=project, status="stale").exists()
    client = Client()
    client.force_login(User.objects.get(username="demo"))
    review = client.get(reverse("web:review", kwargs={"slug": "demo"})).content.decode()
    assert "3 proposed memories" in review and "stream rows" in review
    assert "[memoryhub-context]" in review  # the injected block, folded in the excerpt
    # The worker extracts the three ended sessions into more proposed memories.
    for job_id in pipeline_services.stage1_enqueue_due(project=project):
        assert pipeline_services.stage1_run(job_id=job_id) == "done"
    learned = Memory.objects.filter(project=project, created_via="pipeline")
    assert learned.count() >= 3 and {m.status for m in learned} == {"proposed"}
    contents = " ".join(learned.values_list("content", flat=True))
    assert "time.sleep" in contents and "PostgreSQL 15" in contents
