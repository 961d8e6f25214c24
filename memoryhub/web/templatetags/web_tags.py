from __future__ import annotations

from typing import Any

from django import template
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

register = template.Library()

VERBS = {
    "created": _("created"),
    "updated": _("edited"),
    "merged": _("merged new text"),
    "merged_from": _("merged another memory in"),
    "merged_into": _("merged into another memory"),
    "archived": _("archived"),
    "marked_stale": _("marked stale"),
    "restored": _("restored"),
    "approved": _("approved"),
    "rejected": _("rejected"),
    "promoted": _("shared with the project"),
}


STATUSES = {
    "proposed": _("Proposed"),
    "active": _("Active"),
    "stale": _("Stale"),
    "archived": _("Archived"),
}
KINDS = {
    "soul": _("soul: the agent's own identity and manner"),
    "user": _("user: who the user is, their preferences"),
    "feedback": _("feedback: corrections the user gave"),
    "project": _("project: project knowledge"),
    "reference": _("reference: pointers to docs, URLs, dashboards"),
    "fact": _("fact"),
    "lesson": _("lesson: a pitfall learned"),
    "topic": _("topic: an ongoing thread with a goal"),
    "rule": _("rule: a design principle"),
}
ROLES = {
    "owner": _("owner"),
    "maintainer": _("maintainer"),
    "member": _("member"),
    "viewer": _("viewer"),
}
TOKEN_STATUSES = {
    "active": _("active"),
    "revoked": _("revoked"),
    "expired": _("expired"),
}
JOB_STATUSES = {
    "pending": _("queued"),
    "running": _("running"),
    "done": _("done"),
    "error": _("error, will retry"),
    "failed": _("failed"),
}
JOB_KINDS = {
    "stage1": _("extraction"),
    "stage2": _("consolidation"),
    "rebuild": _("rebuild"),
    "dream": _("dream"),
    "import": _("import"),
}
SESSION_STATUSES = {
    "active": pgettext_lazy("session", "active"),
    "ended": pgettext_lazy("session", "ended"),
}
LLM_STATES = {
    "ok": _("ok"),
    "budget_exhausted": _("budget exhausted"),
    "misconfigured": _("misconfigured"),
}
SCOPES = {
    "project": _("Project: every member sees it"),
    "user": _("Private: only its owner sees it"),
}


# {{ value|status_label }} and the like: a stored code as a person reads it, translated (an
# unknown code as it is).
_LABELS = {
    "status_label": STATUSES,
    "kind_label": KINDS,
    "scope_label": SCOPES,
    "token_status_label": TOKEN_STATUSES,
    "job_status_label": JOB_STATUSES,
    "job_kind_label": JOB_KINDS,
    "session_status_label": SESSION_STATUSES,
    "llm_state_label": LLM_STATES,
    "role_label": ROLES,
    "verb_label": VERBS,
}


def _label_filter(labels: dict[str, Any]) -> Any:
    def label(value: str) -> Any:
        return labels.get(value, value)

    return label


for _name, _labels in _LABELS.items():
    register.filter(_name, _label_filter(_labels))


@register.filter
def lookup(mapping: Any, key: Any) -> Any:
    """{{ dict|lookup:key }}: a dict entry by a variable key (None when absent)."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def short_id(value: Any) -> str:
    return str(getattr(value, "public_id", value))[:8]
