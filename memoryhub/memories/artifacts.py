"""The bank's derived documents: path rules, reads and the write services.

Stage 2 (consolidation) produces MEMORY.md, memory_summary.md and skills/<name>/SKILL.md with
scripts/, templates/ and examples/ beside it (seed 003, seed-algorithms §3.4); maintainers may
also edit or import them. Paths are validated exactly as seed 003 validates the files it writes:
no absolute path, no `..`, no `:`, no NUL, and every part matches `[A-Za-z0-9._-]+`. On top of
that we refuse `.` parts (they would alias another path) and keep the skills layout:
skills/<sanitized name>/SKILL.md or skills/<sanitized name>/<bucket>/<path>.

Every change writes an AuditEvent (verb artifact.created / artifact.updated / artifact.deleted)
in the same transaction. Writes are idempotent (ensure-style): putting the content an artifact
already has changes nothing and records nothing, so stage 2 can re-run freely.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.db.models.functions import Length
from django.http import Http404
from django.utils import timezone

from accounts.actors import Actor
from memoryhub.core import redaction
from memoryhub.core.services import audit_record
from memoryhub.memories import markup, trees
from memoryhub.memories.models import BankArtifact
from projects.models import Project

MEMORY_MD = "MEMORY.md"
MEMORY_SUMMARY = "memory_summary.md"
SKILLS_DIR = "skills"
SKILL_FILE = "SKILL.md"
SKILL_BUCKETS = ("scripts", "templates", "examples")
# Documents other writers keep in the bank (the Hindsight API's mental models): stage 2's full
# replace leaves them alone, because stage 2 never produces them.
NOT_STAGE2_DIRS = ("mental-models",)
SKILL_NAME_MAX = 64
PATH_MAX_CHARS = 512
CONTENT_MAX_CHARS = 2_000_000

_PART = re.compile(r"[A-Za-z0-9._-]+")
_SKILL_NAME_JUNK = re.compile(r"[^a-z0-9_-]+")


def validate_relative_path(path: str) -> str:
    """`path` if it is a safe relative path by seed 003's rules, else ValidationError."""
    if not path:
        raise ValidationError("The path is empty.")
    if "\0" in path:
        raise ValidationError("The path contains a NUL character.")
    if path.startswith(("/", "\\")):
        raise ValidationError("The path must be relative, not absolute.")
    if ".." in path:
        raise ValidationError("The path must not contain '..'.")
    if ":" in path:
        raise ValidationError("The path must not contain ':'.")
    if len(path) > PATH_MAX_CHARS:
        raise ValidationError(f"The path has more than {PATH_MAX_CHARS} characters.")
    for part in path.split("/"):
        if part == "." or not _PART.fullmatch(part):
            raise ValidationError(
                f"Invalid path part {part!r}: each part must match [A-Za-z0-9._-]+ "
                "(no empty or '.' parts)."
            )
    return path


def sanitize_skill_name(name: str) -> str:
    """Seed 003's skill directory name: lowercase, runs of [^a-z0-9_-] → '-', '-' trimmed,
    at most 64 characters."""
    sanitized = _SKILL_NAME_JUNK.sub("-", name.lower()).strip("-")[:SKILL_NAME_MAX]
    if not sanitized:
        raise ValidationError(f"The skill name {name!r} has no usable characters.")
    return sanitized


def validate_artifact_path(path: str) -> str:
    """A relative path (validate_relative_path) that also keeps the skills layout."""
    validate_relative_path(path)
    parts = path.split("/")
    if parts[0] != SKILLS_DIR:
        return path
    layout = (
        f"Skill files live at {SKILLS_DIR}/<name>/{SKILL_FILE} or "
        f"{SKILLS_DIR}/<name>/{{{','.join(SKILL_BUCKETS)}}}/<path>."
    )
    if len(parts) < 3:
        raise ValidationError(layout)
    if sanitize_skill_name(parts[1]) != parts[1]:
        raise ValidationError(
            f"Invalid skill name {parts[1]!r}: lowercase [a-z0-9_-], at most {SKILL_NAME_MAX}."
        )
    if (len(parts) == 3 and parts[2] == SKILL_FILE) or (
        len(parts) >= 4 and parts[2] in SKILL_BUCKETS
    ):
        return path
    raise ValidationError(layout)


@dataclass(frozen=True)
class SkillAsset:
    path: str  # relative to the bucket
    content: str


def skill_files(
    *,
    name: str,
    content: str,
    scripts: Iterable[SkillAsset] = (),
    templates: Iterable[SkillAsset] = (),
    examples: Iterable[SkillAsset] = (),
) -> dict[str, str]:
    """The artifact paths and contents of one skill of stage 2's output (name sanitized, asset
    paths validated), ready for artifacts_replace_all."""
    directory = f"{SKILLS_DIR}/{sanitize_skill_name(name)}"
    files = {f"{directory}/{SKILL_FILE}": content}
    for bucket, assets in zip(SKILL_BUCKETS, (scripts, templates, examples), strict=True):
        for asset in assets:
            path = f"{directory}/{bucket}/{validate_relative_path(asset.path)}"
            files[validate_artifact_path(path)] = asset.content
    return files


def content_digest(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()


MEMORY_URI_SCHEME = "memory://"
MEMORY_URI_ROOT = "root"


def parse_memory_uri(uri: str) -> str | None:
    """The artifact path a memory:// URI names, or None for the root itself.

    Only the `root` namespace exists (as in oh-my-pi); the path must pass
    validate_relative_path, so nothing can escape the bank.
    """
    if not uri.startswith(MEMORY_URI_SCHEME):
        raise ValidationError(f"A memory URI starts with {MEMORY_URI_SCHEME}.")
    namespace, _, path = uri[len(MEMORY_URI_SCHEME) :].partition("/")
    if namespace != MEMORY_URI_ROOT:
        raise ValidationError(f"Unknown memory namespace {namespace!r}; only 'root' exists.")
    if not path:
        return None
    return validate_relative_path(path)


# --- reads ------------------------------------------------------------------------------------


def artifact_list(*, project: Project) -> QuerySet[BankArtifact]:
    """The project's artifacts in path order, without their content (`chars` instead)."""
    return (
        BankArtifact.objects.filter(project=project)
        .annotate(chars=Length("content"))
        .defer("content")
        .order_by("path")
    )


def artifact_find(*, project: Project, path: str) -> BankArtifact | None:
    return BankArtifact.objects.filter(project=project, path=path).first()


def artifact_get(*, project: Project, path: str) -> BankArtifact:
    artifact = artifact_find(project=project, path=path)
    if artifact is None:
        raise Http404("Artifact not found.")
    return artifact


def artifact_root_listing(*, project: Project) -> list[BankArtifact]:
    """What memory://root lists: MEMORY.md, memory_summary.md, then each skills/*/SKILL.md."""
    rows = (
        BankArtifact.objects.filter(project=project)
        .filter(
            Q(path__in=[MEMORY_MD, MEMORY_SUMMARY])
            | Q(path__startswith=f"{SKILLS_DIR}/", path__endswith=f"/{SKILL_FILE}")
        )
        .annotate(chars=Length("content"))
        .defer("content")
    )
    top = {MEMORY_MD: 0, MEMORY_SUMMARY: 1}
    return sorted(
        (a for a in rows if a.path in top or a.path.count("/") == 2),
        key=lambda a: (top.get(a.path, 2), a.path),
    )


# --- writes -----------------------------------------------------------------------------------


def _audit(
    actor: Actor,
    verb: str,
    artifact: BankArtifact,
    *,
    pk: int | None = None,
    before: dict[str, object] | None = None,
    after: dict[str, object] | None = None,
) -> None:
    """An artifact's audit row (pk: its id before a delete cleared it)."""
    audit_record(
        actor=actor,
        verb=verb,
        target_type="artifact",
        target_id=artifact.pk if pk is None else pk,
        project=artifact.project,
        before=before,
        after=after,
    )


def _state(artifact: BankArtifact) -> dict[str, object]:
    """What the audit trail keeps of a version (the content itself can be large)."""
    return {
        "path": artifact.path,
        "version": artifact.version,
        "content_hash": artifact.content_hash,
        "chars": len(artifact.content),
    }


def _check_content(content: str) -> None:
    if len(content) > CONTENT_MAX_CHARS:
        raise ValidationError(
            {"content": f"An artifact has at most {CONTENT_MAX_CHARS} characters."}
        )


@transaction.atomic
def artifact_put(
    *, project: Project, path: str, content: str, actor: Actor, mtime: datetime | None = None
) -> tuple[BankArtifact, bool]:
    """Create or replace the artifact at `path`; returns (artifact, changed).

    Idempotent: the same content again is no new version and no event. An import passes the
    source file's `mtime`, which a new version is dated by (else now).
    """
    try:
        validate_artifact_path(path)
    except ValidationError as exc:
        raise ValidationError({"path": exc.messages}) from None
    _check_content(content)
    content = redaction.redact(content)[0]  # secrets never reach an artifact, whoever writes
    # Artifacts are injected and served inside wrappers: their text must not close one.
    content = markup.neutralize(content)
    digest = content_digest(content)
    artifact = BankArtifact.objects.select_for_update().filter(project=project, path=path).first()
    if artifact is None:
        try:
            # A savepoint: a concurrent writer of the same path makes the insert fail, and we
            # then update its row like any existing one.
            with transaction.atomic():
                artifact = BankArtifact(
                    project=project,
                    path=path,
                    content=content,
                    content_hash=digest,
                    updated_by=actor.label,
                    **({"created_at": mtime, "updated_at": mtime} if mtime else {}),
                )
                artifact.full_clean()
                artifact.save()
        except IntegrityError:
            artifact = BankArtifact.objects.select_for_update().get(project=project, path=path)
        else:
            _audit(actor, "artifact.created", artifact, after=_state(artifact))
            return artifact, True
    if artifact.content_hash == digest:
        return artifact, False
    before = _state(artifact)
    artifact.content = content
    artifact.content_hash = digest
    artifact.version += 1
    artifact.updated_at = mtime or timezone.now()
    artifact.updated_by = actor.label
    artifact.full_clean()
    artifact.save(update_fields=["content", "content_hash", "version", "updated_at", "updated_by"])
    _audit(actor, "artifact.updated", artifact, before=before, after=_state(artifact))
    return artifact, True


@transaction.atomic
def artifact_delete(*, project: Project, path: str, actor: Actor) -> bool:
    """Delete the artifact at `path`; False (and no event) when there is none."""
    artifact = BankArtifact.objects.select_for_update().filter(project=project, path=path).first()
    if artifact is None:
        return False
    _delete(artifact, actor)
    return True


def _delete(artifact: BankArtifact, actor: Actor) -> None:
    before = _state(artifact)
    pk = artifact.pk
    artifact.delete()
    _audit(actor, "artifact.deleted", artifact, pk=pk, before=before)


ReplaceResult = trees.TreeWriteResult


@transaction.atomic
def artifacts_replace_all(
    *, project: Project, files: Mapping[str, str], actor: Actor
) -> ReplaceResult:
    """Make the project's artifacts exactly `files` (path → content): stage 2's full replace.

    All paths are validated first (nothing is written when one is invalid). Artifacts absent
    from `files` are deleted (stale skills are pruned); an empty mapping removes them all, as
    seed 003 does when consolidation has no inputs. Idempotent: unchanged files stay at their
    version and record nothing.
    """
    errors: dict[str, list[str]] = {}
    for path, content in files.items():
        try:
            validate_artifact_path(path)
            _check_content(content)
        except ValidationError as exc:
            errors[path] = exc.messages
    if errors:
        raise ValidationError({"files": [f"{p}: {'; '.join(m)}" for p, m in errors.items()]})
    # Lock the project's artifacts first: two replaces of one project apply one after the other.
    existing = {
        a.path: a
        for a in BankArtifact.objects.select_for_update().filter(project=project)
        if a.path.split("/")[0] not in NOT_STAGE2_DIRS
    }

    def put(path: str, content: str, _: BankArtifact | None) -> bool:
        return artifact_put(project=project, path=path, content=content, actor=actor)[1]

    def delete(gone: Sequence[BankArtifact]) -> None:
        for artifact in gone:
            _delete(artifact, actor)

    return trees.tree_replace(stored=existing, wanted=files, put=put, delete=delete)
