from __future__ import annotations

import re
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
    "dream_update": _("edited while dreaming"),
    "dream_stamped": _("stamped by a dream"),
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
# A kind as one word, for chips and filters: the stored name in English (the word the API and
# the agents use), translated elsewhere. KINDS above says what each is for.
KIND_NAMES = {
    "soul": pgettext_lazy("memory kind", "soul"),
    "user": pgettext_lazy("memory kind", "user"),
    "feedback": pgettext_lazy("memory kind", "feedback"),
    "project": pgettext_lazy("memory kind", "project"),
    "reference": pgettext_lazy("memory kind", "reference"),
    "fact": pgettext_lazy("memory kind", "fact"),
    "lesson": pgettext_lazy("memory kind", "lesson"),
    "topic": pgettext_lazy("memory kind", "topic"),
    "rule": pgettext_lazy("memory kind", "rule"),
}
# meow-memory's sections of a project memory (memoryhub.memories.kinds.Subcategory).
SUBCATEGORIES = {
    "overview": pgettext_lazy("subcategory", "Overview"),
    "structure": pgettext_lazy("subcategory", "Structure"),
    "decisions": pgettext_lazy("subcategory", "Decisions"),
    "quotes": pgettext_lazy("subcategory", "Quotes"),
    "ops": pgettext_lazy("subcategory", "Ops"),
    "todo": pgettext_lazy("subcategory", "Todo"),
}
# How a memory arrived (Memory.Via), and the bank's own processes as history actors
# (accounts.actors.Actor.for_system names).
SOURCES = {
    "user": pgettext_lazy("source", "user"),
    "token": pgettext_lazy("source", "token"),
    "pipeline": pgettext_lazy("source", "pipeline"),
    "dream": pgettext_lazy("source", "dream"),
    "import": pgettext_lazy("source", "import"),
    "cli": pgettext_lazy("source", "command line"),
    "system": pgettext_lazy("source", "system"),
    "hindsight": pgettext_lazy("source", "Hindsight"),
    "bank_import": pgettext_lazy("source", "backup restore"),
}
# The fields of a memory's history (Memory.snapshot and the events' extras).
FIELDS = {
    "status": pgettext_lazy("memory field", "Status"),
    "status_reason": pgettext_lazy("memory field", "Reason"),
    "superseded_by": pgettext_lazy("memory field", "Superseded by"),
    "merged_from": pgettext_lazy("memory field", "Merged from"),
    "scope": pgettext_lazy("memory field", "Scope"),
    "owner": pgettext_lazy("memory field", "Owner"),
    "kind": pgettext_lazy("memory field", "Kind"),
    "subcategory": pgettext_lazy("memory field", "Subcategory"),
    "goal": pgettext_lazy("memory field", "Goal"),
    "title": pgettext_lazy("memory field", "Title"),
    "content": pgettext_lazy("memory field", "Content"),
    "keywords": pgettext_lazy("memory field", "Keywords"),
    "importance": pgettext_lazy("memory field", "Importance"),
    "metadata": pgettext_lazy("memory field", "Metadata"),
    "source_session": pgettext_lazy("memory field", "Source session"),
    "updated_at": pgettext_lazy("memory field", "Updated"),
}
# Transcript record types (memoryhub.sessions.records), in the review queue's excerpts.
RECORD_TYPES = {
    "user": pgettext_lazy("record", "user"),
    "assistant": pgettext_lazy("record", "assistant"),
    "system_prompt": pgettext_lazy("record", "system prompt"),
    "tool_result": pgettext_lazy("record", "tool result"),
    "compression": pgettext_lazy("record", "compression"),
    "compact_boundary": pgettext_lazy("record", "compact boundary"),
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
    "kind_name": KIND_NAMES,
    "subcategory_label": SUBCATEGORIES,
    "source_label": SOURCES,
    "field_label": FIELDS,
    "record_type_label": RECORD_TYPES,
}
# The coded values of a memory's fields, for the history: {{ value|field_value:name }}.
FIELD_VALUES = {
    "status": STATUSES,
    "kind": KIND_NAMES,
    "subcategory": SUBCATEGORIES,
    "scope": SCOPES,
}


def _label_filter(labels: dict[str, Any]) -> Any:
    def label(value: str) -> Any:
        return labels.get(value, value)

    return label


for _name, _labels in _LABELS.items():
    register.filter(_name, _label_filter(_labels))


@register.filter
def field_value(value: Any, name: str) -> Any:
    """A memory field's value in a history diff: coded ones by their label, others as they are."""
    return FIELD_VALUES.get(name, {}).get(value, value)


# Actor.label's form of a person acting through an agent token: "<username> via token <prefix>".
_VIA_TOKEN = re.compile(r"(?P<user>.+) via token (?P<token>\S+)")


@register.filter
def actor_parts(event: Any) -> dict[str, Any]:
    """Who made a change (an ActorStamped row), in parts the template words in the page's
    language: {"user"}, {"user", "token"}, or {"system", "user"} (user may be "").

    The stored actor_label is kept as it was written (English, with the names of the time);
    actor_user tells a person from a bank process of the same name."""
    label = str(event.actor_label)
    person = getattr(event.actor_user, "username", None)
    if label == person:
        return {"user": label}
    via_token = _VIA_TOKEN.fullmatch(label)
    if via_token is not None:
        return {"user": via_token["user"], "token": via_token["token"]}
    system, _colon, user = label.partition(":")
    if system in SOURCES and system not in ("user", "token"):
        return {"system": SOURCES[system], "user": user}
    return {"user": label}


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
