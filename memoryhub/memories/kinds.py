"""One taxonomy for every memory layer of the three seeds and Claude Code.

| kind      | default scope | MewCode (memories.md)       | Claude Code type | meow-memory level |
|-----------|---------------|-----------------------------|------------------|-------------------|
| soul      | user          | –                           | –                | soul              |
| user      | user          | 用户偏好 user-preference     | user             | user              |
| feedback  | user          | 纠正反馈 feedback-correction | feedback         | lesson (corrected) |
| project   | project       | 项目知识 project-knowledge   | project          | project + subcat. |
| reference | project       | 参考资料 reference           | reference        | –                 |
| fact      | project       | –                           | –                | fact              |
| lesson    | project       | –                           | –                | lesson            |
| topic     | project       | –                           | –                | topic (+ goal)    |
| rule      | project       | –                           | –                | rules             |

Inputs may use the seeds' own names (ALIASES); the stored value is always the kind on the left.
"""

from __future__ import annotations

from django.db import models


class Kind(models.TextChoices):
    SOUL = "soul", "Soul (the agent's own identity and manner)"
    USER = "user", "User (who the user is, their preferences)"
    FEEDBACK = "feedback", "Feedback (corrections the user gave)"
    PROJECT = "project", "Project knowledge"
    REFERENCE = "reference", "Reference (pointers to docs, URLs, dashboards)"
    FACT = "fact", "Fact"
    LESSON = "lesson", "Lesson (pitfall learned)"
    TOPIC = "topic", "Topic (ongoing thread with a goal)"
    RULE = "rule", "Rule (design principle)"


class Scope(models.TextChoices):
    USER = "user", "User (visible to its owner only)"
    PROJECT = "project", "Project (visible to the project's members)"


def owner_matches_scope() -> models.Q:
    """A user-scope row has its owner, a project-scope row none (memories and recall files)."""
    return models.Q(scope=Scope.USER, owner__isnull=False) | models.Q(
        scope=Scope.PROJECT, owner__isnull=True
    )


class Subcategory(models.TextChoices):
    """meow-memory's sections of a project memory (only kind=project uses them)."""

    OVERVIEW = "overview"
    STRUCTURE = "structure"
    DECISIONS = "decisions"
    QUOTES = "quotes"
    OPS = "ops"
    TODO = "todo"


DEFAULT_SCOPE: dict[str, str] = {
    Kind.SOUL: Scope.USER,
    Kind.USER: Scope.USER,
    Kind.FEEDBACK: Scope.USER,
    Kind.PROJECT: Scope.PROJECT,
    Kind.REFERENCE: Scope.PROJECT,
    Kind.FACT: Scope.PROJECT,
    Kind.LESSON: Scope.PROJECT,
    Kind.TOPIC: Scope.PROJECT,
    Kind.RULE: Scope.PROJECT,
}

# Seed names accepted on input (case-insensitive), mapped to the stored kind.
ALIASES: dict[str, str] = {
    "user-preference": Kind.USER,
    "user_preference": Kind.USER,
    "preference": Kind.USER,
    "用户偏好": Kind.USER,
    "feedback-correction": Kind.FEEDBACK,
    "feedback_correction": Kind.FEEDBACK,
    "correction": Kind.FEEDBACK,
    "纠正反馈": Kind.FEEDBACK,
    "project-knowledge": Kind.PROJECT,
    "project_knowledge": Kind.PROJECT,
    "项目知识": Kind.PROJECT,
    "参考资料": Kind.REFERENCE,
    "rules": Kind.RULE,
}


# Kind.values builds a new list at each use (25 µs; once per item of a bulk import).
_KINDS = frozenset(Kind.values)


def resolve_kind(name: str) -> str | None:
    """The stored kind for `name` (a kind or a seed alias), or None when unknown."""
    key = name.strip().lower()
    if key in _KINDS:
        return key
    return ALIASES.get(key) or ALIASES.get(name.strip())


def taxonomy() -> list[dict[str, object]]:
    """The taxonomy as data, for the API and the docs."""
    return [
        {
            "kind": kind.value,
            "label": kind.label,
            "default_scope": DEFAULT_SCOPE[kind],
            "aliases": sorted(a for a, k in ALIASES.items() if k == kind),
            "subcategories": Subcategory.values if kind == Kind.PROJECT else [],
            "has_goal": kind == Kind.TOPIC,
        }
        for kind in Kind
    ]
