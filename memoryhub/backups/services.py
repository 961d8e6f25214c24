"""Restoring a project from a backup (memoryhub/backups/format.py) under a new slug.

A restore is a bulk load of a whole project, like loaddata: every row is inserted raw (its
timestamps kept, no auto_now), in one transaction, after the file has been read to its closing
line. Rows get new primary keys and new public ids (the original project may live on the same
server); references inside the backup are remapped, people are matched by username (created,
with a random password nobody knows, when missing), agent tokens are not restored.
"""

from __future__ import annotations

import gzip
import json
import uuid
import zlib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.conf import settings
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.db import models, transaction

from accounts.actors import Actor
from accounts.models import User
from accounts.services import user_get_or_create
from memoryhub.backups import format as fmt
from memoryhub.core.exceptions import ApplicationError
from memoryhub.core.services import audit_record
from memoryhub.memories import services as memory_services
from memoryhub.pipeline import services as pipeline_services
from projects.models import Project
from projects.services import project_create

BATCH = 1000


class BackupInvalid(ApplicationError):
    status_code = 400
    code = "backup_invalid"


@dataclass
class RestoreReport:
    project: Project
    rows: dict[str, int]
    users_created: list[str] = field(default_factory=list)


def _lines(stream: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        for number, raw in enumerate(gzip.GzipFile(fileobj=stream, mode="rb"), start=1):
            try:
                yield number, json.loads(raw)
            except ValueError as exc:
                raise BackupInvalid(f"Line {number} is not JSON: {exc}.") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise BackupInvalid(f"Not a complete gzip file: {exc}.") from None


class _Restorer:
    def __init__(self, project: Project, owner: User, actor: Actor) -> None:
        self.project = project
        self.owner = owner
        self.actor = actor
        self.pk_maps: dict[str, dict[int, int]] = defaultdict(dict)
        self.users: dict[str, User] = {owner.username: owner}
        self.users_created: list[str] = []
        self.counts: dict[str, int] = defaultdict(int)
        self.deferred: list[tuple[str, int, str, int]] = []  # self-references, set at the end
        self.exported = fmt.exported_labels()

    def user(self, username: str) -> User:
        if username not in self.users:
            user, created, _ = user_get_or_create(username=username, actor=self.actor)
            if created:
                self.users_created.append(username)
            self.users[username] = user
        return self.users[username]

    def build(self, label: str, model: type[models.Model], row: dict[str, Any]) -> models.Model:
        obj = model()
        for name, value in row["fields"].items():
            if (label, name) in fmt.RETIRED_FIELDS:
                continue
            try:
                f = model._meta.get_field(name)
            except FieldDoesNotExist:
                raise BackupInvalid(f"{label} has no field {name!r}.") from None
            if not f.concrete or f.primary_key:
                raise BackupInvalid(f"{label} has no field {name!r}.")
            if f.is_relation:
                assert f.related_model is not None
                target = f.related_model._meta.label
                if value is None:
                    setattr(obj, f.attname, None)
                elif target == settings.AUTH_USER_MODEL:
                    setattr(obj, f.attname, self.user(value).pk)
                elif target == label:
                    self.deferred.append((label, row["pk"], f.attname, value))
                    setattr(obj, f.attname, None)
                elif target in self.exported:
                    try:
                        setattr(obj, f.attname, self.pk_maps[target][value])
                    except KeyError:
                        raise BackupInvalid(
                            f"{label} {row['pk']} refers to {target} {value}, not in the backup."
                        ) from None
                continue
            setattr(obj, f.attname, fmt.decode(f, value))
        for f in model._meta.concrete_fields:
            if f.is_relation and f.related_model is Project:
                setattr(obj, f.attname, self.project.pk)
        return obj

    def insert(self, label: str, rows: list[dict[str, Any]]) -> None:
        model = fmt.model_of(label)
        objs = [self.build(label, model, row) for row in rows]
        self.keep_free_global_ids(model, rows, objs)
        fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        if label.startswith("memories.") and label != "memories.BankArtifact":
            # The bank's rows are written by the bank's services only (one write path).
            new_pks = memory_services.bank_rows_restore(objs=objs, fields=fields)
        else:
            returned = model._base_manager._insert(  # type: ignore[attr-defined]
                objs, fields=fields, returning_fields=[model._meta.pk], raw=True
            )
            new_pks = [row[0] for row in returned]
        for row, new_pk in zip(rows, new_pks, strict=True):
            self.pk_maps[label][row["pk"]] = new_pk
        self.counts[label] += len(rows)

    @staticmethod
    def keep_free_global_ids(
        model: type[models.Model], rows: list[dict[str, Any]], objs: list[models.Model]
    ) -> None:
        """Public ids are kept (a restore after a loss answers on the same URLs), except where
        this server already uses one (a copy beside the original): that row gets a new one."""
        for name in fmt.GLOBAL_IDS:
            if not any(f.name == name for f in model._meta.concrete_fields):
                continue
            wanted = [getattr(obj, name) for obj in objs]
            taken = set(
                model._base_manager.filter(**{f"{name}__in": wanted}).values_list(name, flat=True)
            )
            for obj in objs:
                if getattr(obj, name) in taken:
                    setattr(obj, name, uuid.uuid4())

    def finish(self) -> None:
        for label, old_pk, attname, old_target in self.deferred:
            model = fmt.model_of(label)
            link = (self.pk_maps[label][old_pk], attname, self.pk_maps[label][old_target])
            if label.startswith("memories."):  # the bank's rows: its services write them
                memory_services.bank_rows_relink(model=model, links=[link])
            else:
                model._base_manager.filter(pk=link[0]).update(**{attname: link[2]})


def _batches(
    lines: Iterable[tuple[int, dict[str, Any]]], order: list[str]
) -> Iterator[tuple[str, list[dict[str, Any]]] | dict[str, Any]]:
    """Rows grouped by model (each model's rows must be contiguous and in MODELS order), then
    the closing line."""
    position = -1
    batch: list[dict[str, Any]] = []
    label = ""
    for number, line in lines:
        if line.get("end"):
            if batch:
                yield label, batch
            yield line
            return
        row_label = line.get("model")
        if row_label not in order or not isinstance(line.get("fields"), dict):
            raise BackupInvalid(f"Line {number}: unknown row {str(row_label)[:80]!r}.")
        if row_label != label:
            if order.index(row_label) <= position:
                raise BackupInvalid(f"Line {number}: {row_label} rows out of order.")
            if batch:
                yield label, batch
            batch, label, position = [], row_label, order.index(row_label)
        batch.append(line)
        if len(batch) >= BATCH:
            yield label, batch
            batch = []
    raise BackupInvalid("The backup ends before its closing line (truncated file).")


def restore_check(actor: Actor) -> None:
    """Server administrators only (staff, or the operator's command line): a restore makes the
    people a backup names members of the new project and gives them the private memories it
    holds for them, and a backup is a file anyone can edit."""
    if actor.restricted_project_id is not None:
        raise PermissionDenied("A project-restricted token cannot create projects.")
    if not actor.system and not (actor.user is not None and actor.user.is_staff):
        raise PermissionDenied(
            "Only server administrators can restore a backup: a restore adds the people it"
            " names to the project, with the private memories it holds for them."
        )


@transaction.atomic
def project_restore(*, stream: IO[bytes], slug: str, owner: User, actor: Actor) -> RestoreReport:
    """Restore a backup as a new project `slug` owned by `owner`; all or nothing."""
    restore_check(actor)
    lines = _lines(stream)
    try:
        _, header = next(lines)
    except StopIteration:
        raise BackupInvalid("The file is empty.") from None
    if header.get("format") != fmt.FORMAT or header.get("version") != fmt.VERSION:
        raise BackupInvalid(f"Not a {fmt.FORMAT} version {fmt.VERSION} file.")
    meta = header.get("project") or {}
    project = project_create(
        slug=slug,
        owner=owner,
        actor=actor,
        name=str(meta.get("name") or slug),
        description=str(meta.get("description") or ""),
        timezone=str(meta.get("timezone") or "UTC"),
        settings=meta.get("settings") or {},
    )
    restorer = _Restorer(project, owner, actor)
    order = [label for label, _ in fmt.MODELS]
    for item in _batches(lines, order):
        if isinstance(item, dict):
            expected = item.get("rows") or {}
            got = dict(restorer.counts)
            if label_mismatch := {k: v for k, v in expected.items() if got.get(k, 0) != v}:
                raise BackupInvalid(f"Row counts differ from the closing line: {label_mismatch}.")
            break
        label, rows = item
        if label == "projects.ProjectMembership":
            # The restoring owner already owns the new project.
            restorer.counts[label] += sum(1 for r in rows if r["fields"]["user"] == owner.username)
            rows = [r for r in rows if r["fields"]["user"] != owner.username]
            if not rows:
                continue
        restorer.insert(label, rows)
    restorer.finish()
    pipeline_services.stage1_progress_restore(project=project)
    audit_record(
        actor=actor,
        project=project,
        verb="project.restored",
        target_type="project",
        target_id=project.public_id,
        after={"from": meta.get("slug"), "rows": dict(restorer.counts)},
    )
    counts = {label: restorer.counts.get(label, 0) for label, _ in fmt.MODELS}
    return RestoreReport(project, counts, restorer.users_created)
