"""Forms of the memory pages. They validate shape only; the services validate meaning (and
their ValidationErrors are shown on the same form)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import BadRequest, ValidationError
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from memoryhub.memories.kinds import Kind, Scope, Subcategory
from memoryhub.memories.models import Memory
from memoryhub.web.templatetags.web_tags import KIND_NAMES, SUBCATEGORIES

SORTS = {
    "updated": ("-updated_at", _("Recently updated")),
    "created": ("-created_at", _("Recently created")),
    "importance": ("-importance", _("Importance")),
    "hits": ("-hit_count", _("Most recalled")),
}
AGES = {
    "1": (1, _("last day")),
    "7": (7, _("last 7 days")),
    "30": (30, _("last 30 days")),
    "90": (90, _("last 90 days")),
    "365": (365, _("last year")),
}
STATUS_CHOICES = [
    ("", _("Proposed, active, stale")),
    (Memory.Status.ACTIVE, _("Active")),
    (Memory.Status.PROPOSED, _("Proposed")),
    (Memory.Status.STALE, _("Stale")),
    (Memory.Status.ARCHIVED, _("Archived")),
    ("all", _("All")),
]


# Kinds by their stored name: short, and the same word the API and the agents use (translated
# on pages in another language).
KIND_CHOICES: list[tuple[str, Any]] = [(kind, KIND_NAMES[kind]) for kind in Kind.values]
SUBCATEGORY_CHOICES: list[tuple[str, Any]] = [(s, SUBCATEGORIES[s]) for s in Subcategory.values]


def _blank(label: Any) -> list[tuple[str, Any]]:
    return [("", label)]


class ChoiceListField(forms.ChoiceField):
    """One choice, or several in the API's comma-separated form (`?status=active,stale`), so a
    link copied from an API query opens the page it names. A list is added to the menu as
    one more entry, labelled with its parts, so the page shows what it filters by."""

    def to_python(self, value: Any) -> str:
        parts = [p.strip() for p in str(value or "").split(",") if p.strip()]
        return ",".join(dict.fromkeys(parts))

    def bound_data(self, data: Any, initial: Any) -> Any:
        return self.to_python(data)  # the menu marks "active, stale" as the entry it added

    def validate(self, value: str) -> None:
        if self.required and not value:
            raise ValidationError(self.error_messages["required"], code="required")
        choices: list[tuple[Any, Any]] = list(self.choices)  # type: ignore[arg-type]
        labels = {str(key): str(label) for key, label in choices}
        for part in self.values(value):
            if part not in labels:
                raise ValidationError(
                    self.error_messages["invalid_choice"],
                    code="invalid_choice",
                    params={"value": part},
                )
        if value not in labels:
            entry = ", ".join(labels[p] for p in self.values(value))
            self.choices = [*choices, (value, entry)]

    @staticmethod
    def values(value: str) -> tuple[str, ...]:
        return tuple(value.split(",")) if value else ()


class MemoryFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=500, label=_("Search"))
    kind = ChoiceListField(
        required=False, choices=_blank(_("Any kind")) + KIND_CHOICES, label=_("Kind")
    )
    scope = forms.ChoiceField(
        required=False,
        choices=[("", _("Any scope")), (Scope.PROJECT, _("Project")), (Scope.USER, _("Mine"))],
        label=_("Scope"),
    )
    status = ChoiceListField(required=False, choices=STATUS_CHOICES, label=_("Status"))
    importance = forms.IntegerField(
        required=False, min_value=1, max_value=32767, label=_("Importance")
    )
    owner = forms.CharField(required=False, max_length=150, label=_("Author"))
    subcategory = forms.ChoiceField(
        required=False,
        choices=_blank(_("Any subcategory")) + SUBCATEGORY_CHOICES,
        label=_("Subcategory"),
    )
    age = forms.ChoiceField(
        required=False,
        choices=_blank(_("Any age")) + [(k, label) for k, (_d, label) in AGES.items()],
        label=_("Age"),
    )
    sort = forms.ChoiceField(
        required=False,
        choices=[(k, label) for k, (_f, label) in SORTS.items()],
        label=_("Sort"),
    )
    cursor = forms.CharField(
        required=False, max_length=200, widget=forms.HiddenInput, label=_("Page")
    )
    page = forms.IntegerField(
        required=False, min_value=1, max_value=20, widget=forms.HiddenInput, label=_("Page")
    )


def split_keywords(value: str) -> list[str]:
    return [part.strip() for part in value.replace("，", ",").split(",") if part.strip()]


class MemoryEditForm(forms.Form):
    title = forms.CharField(required=False, max_length=200, label=_("Title"))
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 8}), label=_("Content"))
    keywords = forms.CharField(required=False, label=_("Keywords"), help_text=_("Comma-separated."))
    kind = forms.ChoiceField(choices=KIND_CHOICES, label=_("Kind"))
    subcategory = forms.ChoiceField(
        required=False, choices=_blank("—") + SUBCATEGORY_CHOICES, label=_("Subcategory")
    )
    goal = forms.CharField(required=False, max_length=500, label=_("Goal"))
    importance = forms.IntegerField(min_value=1, max_value=32767, label=_("Importance"))

    @classmethod
    def for_memory(cls, memory: Memory, **kwargs: Any) -> MemoryEditForm:
        return cls(
            initial={
                "title": memory.title,
                "content": memory.content,
                "keywords": ", ".join(memory.keywords),
                "kind": memory.kind,
                "subcategory": memory.subcategory,
                "goal": memory.goal,
                "importance": memory.importance,
            },
            **kwargs,
        )

    def changes(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        data["keywords"] = split_keywords(data["keywords"])
        return data

    def add_service_errors(self, exc: ValidationError) -> None:
        for name, messages in exc.message_dict.items():
            self.add_error(name if name in self.fields else None, messages)


class MergeForm(forms.Form):
    other = forms.UUIDField(label=_("Memory to merge into this one"))
    content = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 8}), label=_("Merged text")
    )


class DeleteForm(forms.Form):
    confirm = forms.CharField(max_length=100, label=_("Confirmation"))


def posted_reason(request: HttpRequest) -> str:
    """The `reason` of a status change posted without a form (review, archive, stale, bulk)."""
    reason = str(request.POST.get("reason", ""))[:1000]
    if "\x00" in reason:  # PostgreSQL text cannot hold it; a form field refuses it the same way
        raise BadRequest("The reason contains a NUL character.")
    return reason
