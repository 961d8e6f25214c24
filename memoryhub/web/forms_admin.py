"""Forms of the dashboard's admin pages. They only shape input; every rule that the API also
enforces (roles, settings bounds, slugs, last owner…) stays in the services, whose
ApplicationError / ValidationError the views turn into form errors."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime
from typing import Any

from django import forms
from django.utils import timezone
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from memoryhub.recall.injection import Profile
from memoryhub.recall.models import RecallFile
from memoryhub.web.templatetags.web_tags import ROLES, SCOPES
from projects.models import Role

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
FRONTMATTER_FIELDS = ("name", "description", "type")


def split_frontmatter(content: str) -> tuple[dict[str, str], list[str], str]:
    """(name/description/type, the frontmatter's other lines, the body) of a recall file."""
    match = _FRONTMATTER.match(content)
    if match is None:
        return {}, [], content
    known: dict[str, str] = {}
    other: list[str] = []
    for line in match.group(1).split("\n"):
        key, colon, value = line.partition(":")
        if colon and key.strip() in FRONTMATTER_FIELDS:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            known[key.strip()] = value
        elif line.strip():
            other.append(line)
    return known, other, content[match.end() :]


def join_frontmatter(fields: dict[str, str], other: list[str], body: str) -> str:
    lines = [f"{key}: {fields[key]}" for key in FRONTMATTER_FIELDS if fields.get(key)]
    lines += other
    if not lines:
        return body
    return "---\n" + "\n".join(lines) + "\n---\n" + body


class OneLineField(forms.CharField):
    """Frontmatter values are one line each: a newline would end the value early."""

    def to_python(self, value: Any) -> str:
        text = str(super().to_python(value) or "")
        if "\n" in text or "\r" in text:
            raise forms.ValidationError(_("Use a single line."))
        return str(text)


def file_text_field(label: Any, *, rows: int = 18) -> forms.CharField:
    """A file's text as typed: kept byte for byte (no stripping), no spell checking."""
    return forms.CharField(
        label=label,
        widget=forms.Textarea(attrs={"rows": rows, "spellcheck": "false"}),
        required=False,
        strip=False,
    )


# RecallFile.Type's labels, translated (the stored value is the English word).
RECALL_FILE_TYPES = {
    RecallFile.Type.USER: pgettext_lazy("recall file type", "User"),
    RecallFile.Type.FEEDBACK: pgettext_lazy("recall file type", "Feedback"),
    RecallFile.Type.PROJECT: pgettext_lazy("recall file type", "Project"),
    RecallFile.Type.REFERENCE: pgettext_lazy("recall file type", "Reference"),
}


class RecallFileForm(forms.Form):
    scope = forms.ChoiceField(label=_("Scope"), choices=list(SCOPES.items()))
    path = forms.CharField(
        label=_("Path"), max_length=500, help_text=_("For example testing.md or ops/deploy.md")
    )
    name = OneLineField(label=_("Name"), max_length=RecallFile.NAME_MAX_CHARS, required=False)
    description = OneLineField(
        label=_("Description"), max_length=RecallFile.DESCRIPTION_MAX_CHARS, required=False
    )
    type = forms.ChoiceField(
        label=_("Type"),
        choices=[("", "—"), *RECALL_FILE_TYPES.items()],
        required=False,
    )
    body = file_text_field(_("Content"))

    def __init__(self, *args: Any, scopes: list[str] | None = None, **kwargs: Any) -> None:
        """`scopes`: the ones the person may write; a new file offers only those (a viewer
        picking "Project" would be refused with 403 and lose what they typed)."""
        super().__init__(*args, **kwargs)
        if scopes is not None:
            scope = self.fields["scope"]
            assert isinstance(scope, forms.ChoiceField)
            scope.choices = [(k, v) for k, v in SCOPES.items() if k in scopes]


class InstructionFileForm(forms.Form):
    path = forms.CharField(
        label=_("Path"), max_length=500, help_text=_("MEWCODE.md, .mewcode/MEWCODE.md or docs/…")
    )
    content = file_text_field(_("Content"))


class UserInstructionForm(forms.Form):
    content = file_text_field(_("Your own instructions (~/.mewcode/MEWCODE.md)"), rows=12)


class PreviewForm(forms.Form):
    profile = forms.ChoiceField(
        label=_("Agent"),
        choices=[
            (Profile.MEWCODE, "MewCode"),
            (Profile.OMP, "oh-my-pi"),
            (Profile.MEOW, "meow-memory"),
            (Profile.DEFAULT, _("Default")),
        ],
        initial=Profile.MEWCODE,
    )
    prompt = forms.CharField(
        label=_("Prompt"),
        max_length=4000,
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
    )


class ConfirmForm(forms.Form):
    confirm = forms.CharField(label=_("Type the project's slug to confirm"), max_length=64)


class ClearForm(ConfirmForm):
    include_transcripts = forms.BooleanField(
        label=_("Also delete the stored transcripts"), required=False
    )


class MemberAddForm(forms.Form):
    username = forms.CharField(label=_("Username"), max_length=150)
    role = forms.ChoiceField(label=_("Role"), choices=list(ROLES.items()), initial=Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(label=_("Role"), choices=list(ROLES.items()))


class TokenCreateForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=100)
    this_project_only = forms.BooleanField(
        label=_("Only for this project"), required=False, initial=True
    )
    read_only = forms.BooleanField(label=_("Read-only"), required=False)
    expires_at = forms.DateTimeField(
        label=_("Expires"),
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Read in the active time zone: the project's (memoryhub.web.access.project_view).
        self.fields["expires_at"].help_text = _("In the project's time zone, %(zone)s.") % {
            "zone": timezone.get_current_timezone_name()
        }


# --- per-project settings -----------------------------------------------------------------


class ReviewSettingsForm(forms.Form):
    review_required = forms.BooleanField(
        label=_("Hold what the pipeline learns as proposed until a maintainer approves it"),
        required=False,
    )

    def section_value(self) -> bool:
        return bool(self.cleaned_data["review_required"])


# What the settings page calls each knob (its API key is shown beside it).
KNOB_LABELS = {
    "search_k1": _("Term-frequency saturation (BM25 k1)"),
    "search_b": _("Length normalisation (BM25 b)"),
    "search_decay": _("Recency decay"),
    "signal_session": _("Session coherence weight"),
    "signal_neighbour": _("Neighbour smoothing weight"),
    "signal_subject": _("Subject boost"),
    "summary_injection_token_limit": _("memory_summary.md tokens in payloads"),
    "embedding_weight": _("Embedding re-scorer share"),
    "single_result_char_limit": _("Largest tool result kept inline (characters)"),
    "aggregate_char_limit": _("Tool results per message (characters)"),
    "preview_chars": _("Preview of a trimmed result (characters)"),
    "keep_recent_turns": _("Recent turns kept whole"),
    "old_result_snip_chars": _("Older results longer than this are cut (characters)"),
    "old_result_preview_chars": _("What is left of an older result (characters)"),
    "summary_output_reserve": _("Tokens reserved for the summary"),
    "auto_compact_safety_margin": _("Automatic compaction margin (tokens)"),
    "manual_compact_safety_margin": _("Manual compaction margin (tokens)"),
    "keep_recent_tokens": _("Tokens kept after compaction"),
    "min_keep_messages": _("Messages kept after compaction, at least"),
    "keep_max_tokens": _("Kept tail, at most (tokens)"),
    "min_summarize_prefix_tokens": _("Smallest prefix worth compacting (tokens)"),
    "compact_max_failures": _("Failed automatic compactions before it stops"),
    "redact_secrets": _("Redact secrets in transcripts"),
    "stage1_max_sessions_per_scan": _("Sessions extracted per scan"),
    "stage1_max_session_age_days": _("Oldest session extracted (days)"),
    "stage1_min_session_idle_hours": _("Idle time before extraction (hours)"),
    "session_scan_limit": _("Sessions looked at per scan"),
    "stage2_max_raw_memories": _("Extraction outputs per consolidation"),
    "stage1_concurrency": _("Extractions at once"),
    "stage1_lease_seconds": _("Extraction lease (seconds)"),
    "stage1_retry_delay_seconds": _("Extraction retry delay (seconds)"),
    "stage2_lease_seconds": _("Consolidation lease (seconds)"),
    "stage2_retry_delay_seconds": _("Consolidation retry delay (seconds)"),
    "stage2_heartbeat_seconds": _("Consolidation heartbeat (seconds)"),
    "stage1_payload_percent": _("Share of the context window for the transcript (a fraction, 0–1)"),
    "stage1_input_token_limit": _("Transcript tokens per extraction"),
    "fallback_token_limit": _("Transcript tokens without a known window"),
    "retries": _("Attempts per job"),
    "context_window": _("Model context window (tokens)"),
    "dream_idle_minutes": _("Idle time before a dream (minutes)"),
    "dream_suppress_windows": _("No dreams during (HH:MM-HH:MM)"),
    "dream_lead_minutes": _("Dream lead before a quiet window ends (minutes)"),
    "dream_cooldown_hours": _("Time between dreams (hours)"),
    "dream_lease_seconds": _("Dream lease (seconds)"),
    "dream_heartbeat_seconds": _("Dream heartbeat (seconds)"),
    "dream_max_attempts": _("Attempts per dream"),
}


def section_form_class(config_cls: type, defaults: Any) -> type[forms.Form]:
    """A form with one optional field per knob of a settings dataclass (an empty field keeps
    the default). Types and bounds are checked by the section's own validator, the one the API
    runs when a project is saved."""
    fields: dict[str, forms.Field] = {}
    for f in dataclasses.fields(config_cls):
        default = getattr(defaults, f.name)
        label = KNOB_LABELS.get(f.name, f.name.replace("_", " "))
        shown: Any = ", ".join(default) if isinstance(default, tuple) else str(default)
        if isinstance(default, bool):
            shown = _("yes") if default else _("no")
        help_text = format_lazy("{} · {} {}", f.name, _("default:"), shown)
        if isinstance(default, bool):
            fields[f.name] = forms.TypedChoiceField(
                label=label,
                choices=[("", _("default")), ("true", _("yes")), ("false", _("no"))],
                coerce=lambda v: v == "true",
                empty_value=None,
                required=False,
                help_text=help_text,
            )
        elif isinstance(default, int):
            fields[f.name] = forms.IntegerField(label=label, required=False, help_text=help_text)
        elif isinstance(default, float):
            fields[f.name] = forms.FloatField(label=label, required=False, help_text=help_text)
        else:  # a tuple of strings, e.g. dream_suppress_windows
            fields[f.name] = forms.CharField(
                label=label,
                required=False,
                help_text=format_lazy("{}{}", _("comma-separated; "), help_text),
            )

    def section_value(self: forms.Form) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for name, v in self.cleaned_data.items():
            if v is None or v == "":
                continue
            if isinstance(getattr(defaults, name), tuple):
                v = [part.strip() for part in str(v).split(",") if part.strip()]
            value[name] = v
        return value

    return type(
        f"{config_cls.__name__}Form", (forms.Form,), {**fields, "section_value": section_value}
    )


def section_initial(current: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (
            ", ".join(v)
            if isinstance(v, list)
            else ("true" if v is True else "false" if v is False else v)
        )
        for k, v in current.items()
    }


class LlmSettingsForm(forms.Form):
    provider = forms.ChoiceField(
        label=_("Provider"),
        choices=[
            ("", _("server default")),
            ("offline", "offline"),
            ("openai", "openai"),
            ("anthropic", "anthropic"),
        ],
        required=False,
    )
    base_url = forms.CharField(label=_("Base URL"), required=False, max_length=500)
    model = forms.CharField(label=_("Model"), required=False, max_length=200)
    smol_model = forms.CharField(label=_("Small model"), required=False, max_length=200)
    daily_token_budget = forms.IntegerField(label=_("Daily token budget"), required=False)
    timeout_seconds = forms.FloatField(label=_("Timeout (seconds)"), required=False)

    def section_value(self) -> dict[str, Any]:
        return {k: v for k, v in self.cleaned_data.items() if v not in (None, "")}


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """One or more uploaded files, as a list."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(**kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data] or [single(None, initial)]
        return [single(data, initial)]


FORMAT_LABELS = {
    "mewcode": _("MewCode workspace"),
    "claude_code": _("Claude Code memory directory"),
    "meow": _("meow-memory database"),
    "omp": _("oh-my-pi memory root"),
}
# What each format's bundle holds (interchange.formats.DESCRIPTIONS, in the page's language).
FORMAT_FILES = {
    "mewcode": _(
        "MEWCODE.md (+ @include), .mewcode/memories.md, .mewcode/memory/*.md, "
        ".mewcode/sessions/*.jsonl + .meta"
    ),
    "claude_code": _("MEMORY.md + typed topic files, CLAUDE.md"),
    "meow": _(".dsh-meow/memory.db (SQLite)"),
    "omp": _(
        "MEMORY.md, memory_summary.md, skills/, raw_memories.md, rollout_summaries/, learned.md"
    ),
}


class ImportForm(forms.Form):
    format = forms.ChoiceField(label=_("Format"), choices=list(FORMAT_LABELS.items()))
    upload = MultipleFileField(
        label=_("Files"),
        help_text=_("A zip or tar(.gz) of the folder, or one or more of its files."),
    )
    # {file name: modification time in ms since the epoch}, filled in by admin.js from what
    # the browser knows of each chosen file; an upload's own field carries no time.
    mtimes = forms.CharField(widget=forms.HiddenInput, required=False)

    def mtime_of(self, name: str) -> datetime | None:
        try:
            value = json.loads(self.cleaned_data.get("mtimes") or "{}").get(name)
            return datetime.fromtimestamp(int(value) / 1000, tz=UTC) if value else None
        except (ValueError, TypeError, AttributeError, OverflowError, OSError):
            return None
