"""The project dashboard: the bank at a glance, pipeline health, LLM budget, 30-day charts."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, time, timedelta
from typing import Any

from django.db.models import Count
from django.db.models.functions import TruncDate
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.translation import gettext as _

from memoryhub.core.health import worker_status
from memoryhub.llm import selectors as llm_selectors
from memoryhub.memories.kinds import Kind
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_visible
from memoryhub.pipeline import selectors as pipeline_selectors
from memoryhub.recall.models import RecallSeen
from memoryhub.web import charts
from memoryhub.web.access import project_view
from projects.selectors import ProjectAccess

DAYS = 30


def _by_kind_and_status(access: ProjectAccess) -> dict[str, Any]:
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    totals: dict[str, int] = defaultdict(int)
    for row in (
        memory_visible(access=access).order_by().values("kind", "status").annotate(n=Count("id"))
    ):
        counts[row["kind"]][row["status"]] = row["n"]
        totals[row["status"]] += row["n"]
    rows = [
        {
            "kind": kind,
            "label": label,
            "counts": [counts[kind].get(status, 0) for status in Memory.Status.values],
            "total": sum(counts[kind].values()),
        }
        for kind, label in Kind.choices
        if counts.get(kind)
    ]
    return {
        "statuses": Memory.Status.values,
        "rows": rows,
        "totals": [totals.get(status, 0) for status in Memory.Status.values],
        "proposed": totals.get(Memory.Status.PROPOSED, 0),
        "all": sum(totals.values()),
    }


def _charts(access: ProjectAccess) -> list[charts.Chart]:
    today = timezone.localdate()
    days = charts.days_back(today, DAYS)
    start = timezone.make_aware(datetime.combine(days[0], time.min))
    visible = memory_visible(access=access)
    created = {
        row["day"]: row["n"]
        for row in visible.filter(created_at__gte=start)
        .annotate(day=TruncDate("created_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("id"))
    }
    before = visible.filter(created_at__lt=start).count()
    # Recall hits: memories shown to agent sessions (searched or injected), per day. Through
    # the visibility rule, so someone else's private memories never count here.
    hits = {
        row["day"]: row["n"]
        for row in RecallSeen.objects.filter(memory__in=visible.values("pk"), created_at__gte=start)
        .annotate(day=TruncDate("created_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("id"))
    }
    return [
        charts.daily_chart(_("Memories created per day"), days, created, cumulative_from=before),
        charts.daily_chart(_("Recall hits per day"), days, hits),
    ]


@project_view()
def dashboard(request: HttpRequest, access: ProjectAccess) -> TemplateResponse:
    jobs = pipeline_selectors.job_overview(project=access.project)
    usage = llm_selectors.llm_usage(project=access.project)
    budget = usage.daily_token_budget
    context = {
        "bank": _by_kind_and_status(access),
        "jobs": jobs,
        "worker": worker_status(),
        "usage": usage,
        "budget_percent": min(100, round(100 * usage.budget_used / budget)) if budget else None,
        "charts": _charts(access),
        "since": timezone.now() - timedelta(days=DAYS),
    }
    return TemplateResponse(request, "web/project/dashboard.html", context)
