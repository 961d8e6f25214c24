"""The project dashboard: the bank at a glance, pipeline health, LLM budget, 30-day charts."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Case, Count, DateField, When
from django.db.models.functions import TruncDate
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.translation import gettext as _

from memoryhub.core.health import worker_status
from memoryhub.llm import selectors as llm_selectors
from memoryhub.memories.kinds import Kind
from memoryhub.memories.models import Memory
from memoryhub.memories.selectors import memory_review_queue, memory_visible
from memoryhub.pipeline import selectors as pipeline_selectors
from memoryhub.recall.models import RecallSeen
from memoryhub.web import charts
from memoryhub.web.access import project_view
from projects.models import Role
from projects.selectors import ProjectAccess

DAYS = 30


def _bank_counts(access: ProjectAccess, start: datetime) -> tuple[dict[str, Any], charts.Chart]:
    """The bank by kind and status, and memories created per day since `start` (with the
    total before it): ONE grouped scan over the visible memories, not one per figure — at
    100,000 memories each scan is most of the page's time."""
    day = Case(
        When(created_at__gte=start, then=TruncDate("created_at")),
        default=None,
        output_field=DateField(),
    )
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    totals: dict[str, int] = defaultdict(int)
    created: dict[date, int] = defaultdict(int)
    before = 0
    for row in (
        memory_visible(access=access)
        .order_by()
        .annotate(day=day)
        .values("kind", "status", "day")
        .annotate(n=Count("id"))
    ):
        counts[row["kind"]][row["status"]] += row["n"]
        totals[row["status"]] += row["n"]
        if row["day"] is None:
            before += row["n"]
        else:
            created[row["day"]] += row["n"]
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
    bank = {
        "statuses": Memory.Status.values,
        "rows": rows,
        "totals": [totals.get(status, 0) for status in Memory.Status.values],
        "proposed": totals.get(Memory.Status.PROPOSED, 0),
        "all": sum(totals.values()),
    }
    days = charts.days_back(timezone.localdate(), DAYS)
    chart = charts.daily_chart(_("Memories created per day"), days, created, cumulative_from=before)
    return bank, chart


def _hits_chart(access: ProjectAccess, start: datetime) -> charts.Chart:
    # Recall hits: memories shown to agent sessions (searched or injected), per day. Through
    # the visibility rule, so someone else's private memories never count here.
    visible = memory_visible(access=access)
    hits = {
        row["day"]: row["n"]
        for row in RecallSeen.objects.filter(memory__in=visible.values("pk"), created_at__gte=start)
        .annotate(day=TruncDate("created_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("id"))
    }
    days = charts.days_back(timezone.localdate(), DAYS)
    return charts.daily_chart(_("Recall hits per day"), days, hits)


@project_view()
def dashboard(request: HttpRequest, access: ProjectAccess) -> TemplateResponse:
    jobs = pipeline_selectors.job_overview(project=access.project)
    usage = llm_selectors.llm_usage(project=access.project)
    budget = usage.daily_token_budget
    start = timezone.make_aware(
        datetime.combine(charts.days_back(timezone.localdate(), DAYS)[0], time.min)
    )
    bank, created_chart = _bank_counts(access, start)
    # "Awaiting review" is what the viewer's review queue shows: a maintainer's is every visible
    # proposal (already counted), a member's only their own private ones.
    awaiting = bank["proposed"]
    if access.at_least(Role.MEMBER) and not access.at_least(Role.MAINTAINER):
        awaiting = memory_review_queue(access=access).count()
    context = {
        "bank": bank,
        "awaiting_review": awaiting,
        "jobs": jobs,
        "worker": worker_status(),
        "usage": usage,
        "budget_percent": min(100, round(100 * usage.budget_used / budget)) if budget else None,
        "charts": [created_chart, _hits_chart(access, start)],
        "since": timezone.now() - timedelta(days=DAYS),
    }
    return TemplateResponse(request, "web/project/dashboard.html", context)
