from __future__ import annotations

from typing import Any

from django import template
from django.utils.translation import gettext_lazy as _

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


@register.filter
def lookup(mapping: Any, key: Any) -> Any:
    """{{ dict|lookup:key }}: a dict entry by a variable key (None when absent)."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def verb_label(verb: str) -> Any:
    return VERBS.get(verb, verb)


@register.filter
def short_id(value: Any) -> str:
    return str(getattr(value, "public_id", value))[:8]
