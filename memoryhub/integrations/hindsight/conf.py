"""The "hindsight" section of project settings: the bank's missions (PUT bank) and the
definitions of its mental models. Their content lives in the bank's artifacts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memoryhub.core.exceptions import ApplicationError

SECTION = "hindsight"
MISSION_MAX_CHARS = 5_000
NAME_MAX_CHARS = 200
QUERY_MAX_CHARS = 2_000
TAGS_MAX = 32
TAG_MAX_CHARS = 200
MAX_TOKENS_LIMIT = 32_000
DEFAULT_MODEL_TOKENS = 2_048
# Hindsight allows lowercase letters, digits and hyphens; oh-my-pi derives ids from directory
# names, so dots and underscores are accepted too. The id is an artifact file name.
MODEL_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
MODES = ("full", "delta")


@dataclass(frozen=True)
class MentalModelDef:
    id: str
    name: str
    source_query: str
    tags: tuple[str, ...] = ()
    max_tokens: int = DEFAULT_MODEL_TOKENS
    mode: str = "full"
    refresh_after_consolidation: bool = False
    created_at: str = ""

    def to_settings(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source_query": self.source_query,
            "tags": list(self.tags),
            "max_tokens": self.max_tokens,
            "trigger": {
                "mode": self.mode,
                "refresh_after_consolidation": self.refresh_after_consolidation,
            },
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class HindsightConfig:
    reflect_mission: str = ""
    retain_mission: str = ""
    mental_models: dict[str, MentalModelDef] = field(default_factory=dict)


def check_model_id(model_id: str) -> str:
    if not MODEL_ID.fullmatch(model_id) or ".." in model_id:
        raise ApplicationError(
            f"Invalid mental model id {model_id!r}: 1-128 lowercase letters, digits, '-', '_' "
            "or '.', starting with a letter or digit."
        )
    return model_id


def check_tags(tags: Any, where: str) -> tuple[str, ...]:
    if not isinstance(tags, list | tuple) or not all(isinstance(t, str) for t in tags):
        raise ApplicationError(f"{where} must be a list of strings.")
    if len(tags) > TAGS_MAX or any(len(t) > TAG_MAX_CHARS for t in tags):
        raise ApplicationError(f"{where}: at most {TAGS_MAX} tags of {TAG_MAX_CHARS} characters.")
    return tuple(dict.fromkeys(tags))


def _text(value: Any, name: str, limit: int, *, required: bool = False) -> str:
    if not isinstance(value, str) or len(value) > limit or (required and not value.strip()):
        need = "a non-empty string" if required else "a string"
        raise ApplicationError(f"hindsight.{name} must be {need} of at most {limit} characters.")
    return value


def _model(model_id: str, raw: Any) -> MentalModelDef:
    check_model_id(model_id)
    where = f"hindsight.mental_models.{model_id}"
    if not isinstance(raw, dict):
        raise ApplicationError(f"{where} must be an object.")
    trigger = raw.get("trigger") or {}
    max_tokens = raw.get("max_tokens", DEFAULT_MODEL_TOKENS)
    if (
        not isinstance(trigger, dict)
        or trigger.get("mode", "full") not in MODES
        or not isinstance(trigger.get("refresh_after_consolidation", False), bool)
    ):
        raise ApplicationError(
            f"{where}.trigger must be {{mode: full|delta, refresh_after_consolidation: bool}}."
        )
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise ApplicationError(f"{where}.max_tokens must be an integer.")
    if not 1 <= max_tokens <= MAX_TOKENS_LIMIT:
        raise ApplicationError(f"{where}.max_tokens must be from 1 to {MAX_TOKENS_LIMIT}.")
    return MentalModelDef(
        id=model_id,
        name=_text(
            raw.get("name"), f"mental_models.{model_id}.name", NAME_MAX_CHARS, required=True
        ),
        source_query=_text(
            raw.get("source_query"),
            f"mental_models.{model_id}.source_query",
            QUERY_MAX_CHARS,
            required=True,
        ),
        tags=check_tags(raw.get("tags", []), f"{where}.tags"),
        max_tokens=max_tokens,
        mode=trigger.get("mode", "full"),
        refresh_after_consolidation=trigger.get("refresh_after_consolidation", False),
        created_at=_text(raw.get("created_at", ""), "created_at", 64),
    )


def hindsight_config(project_settings: dict[str, Any]) -> HindsightConfig:
    """The project's hindsight section, validated (ApplicationError names what is wrong)."""
    section = project_settings.get(SECTION) or {}
    if not isinstance(section, dict):
        raise ApplicationError("project settings 'hindsight' must be an object.")
    unknown = set(section) - {"reflect_mission", "retain_mission", "mental_models"}
    if unknown:
        raise ApplicationError(f"Unknown hindsight setting(s): {', '.join(sorted(unknown))}.")
    models = section.get("mental_models", {})
    models = {} if models is None else models
    if not isinstance(models, dict):
        raise ApplicationError("hindsight.mental_models must be an object keyed by id.")
    return HindsightConfig(
        reflect_mission=_text(
            section.get("reflect_mission", ""), "reflect_mission", MISSION_MAX_CHARS
        ),
        retain_mission=_text(
            section.get("retain_mission", ""), "retain_mission", MISSION_MAX_CHARS
        ),
        mental_models={mid: _model(mid, raw) for mid, raw in sorted(models.items())},
    )
