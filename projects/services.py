from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core import project_settings
from memoryhub.core.deletion import cascade_delete
from memoryhub.core.exceptions import ApplicationError, Conflict
from memoryhub.core.services import audit_record
from projects.models import Project, ProjectMembership, Role
from projects.selectors import ProjectAccess

PROJECT_EDITABLE_FIELDS = ("name", "description", "timezone", "settings")


@transaction.atomic
def project_create(
    *,
    slug: str,
    owner: User,
    actor: Actor,
    name: str = "",
    description: str = "",
    timezone: str = "UTC",
    settings: dict[str, Any] | None = None,
) -> Project:
    project = Project(
        slug=slug,
        name=name or slug,
        description=description,
        timezone=timezone,
        settings=settings or {},
        created_by=owner,
    )
    project.full_clean(validate_unique=False)
    project_settings.validate(project.settings)
    try:
        # A savepoint, so a taken slug leaves the outer transaction usable.
        with transaction.atomic():
            project.save()
    except IntegrityError:
        raise Conflict("This slug is not available.", details={"slug": ["not available"]}) from None
    ProjectMembership.objects.create(project=project, user=owner, role=Role.OWNER)
    audit_record(
        actor=actor,
        project=project,
        verb="project.created",
        target_type="project",
        target_id=project.public_id,
        after=project.to_dict() | {"owner": owner.username},
    )
    return project


@transaction.atomic
def project_update(
    *, access: ProjectAccess, changes: dict[str, Any], merge_settings: bool = False
) -> Project:
    """Change the project's editable fields. `settings` replaces the whole object, or with
    merge_settings only the sections it names (a section given as None is removed): the API's
    PATCH, so tuning one section never drops another."""
    project = access.project
    unknown = set(changes) - set(PROJECT_EDITABLE_FIELDS)
    if unknown:
        raise ApplicationError(f"Cannot change {', '.join(sorted(unknown))}.")
    if merge_settings and "settings" in changes:
        # Locked: a concurrent writer of another section keeps its change.
        stored = Project.objects.select_for_update().get(pk=project.pk).settings
        project.settings = stored
        merged = dict(stored)
        for section, value in changes["settings"].items():
            if value is None:
                merged.pop(section, None)
            else:
                merged[section] = value
        changes = {**changes, "settings": merged}
    before = project.to_dict()  # every editable field, as stored
    for field, value in changes.items():
        setattr(project, field, value)
    try:
        project.full_clean(validate_unique=False)
        if "settings" in changes:
            project_settings.validate(project.settings)
    except Exception:
        # refused: the caller's instance (a page re-rendered with it) keeps what was stored
        for field in changes:
            setattr(project, field, before[field])
        raise
    changed = [f for f in changes if before[f] != getattr(project, f)]
    if changed:
        project.save(update_fields=[*changed, "updated_at"])
        audit_record(
            actor=access.actor,
            project=project,
            verb="project.updated",
            target_type="project",
            target_id=project.public_id,
            before={f: before[f] for f in changed},
            after={f: getattr(project, f) for f in changed},
        )
    return project


def _check_can_manage(access: ProjectAccess, *, target_role: Role, new_role: Role | None) -> None:
    """Owners manage everyone; maintainers manage roles up to maintainer."""
    if access.role == Role.OWNER:
        return
    if (
        access.role == Role.MAINTAINER
        and target_role != Role.OWNER
        and (new_role is None or new_role != Role.OWNER)
    ):
        return
    raise PermissionDenied("Only owners can grant, change or remove the owner role.")


def _check_not_last_owner(membership: ProjectMembership) -> None:
    if membership.role != Role.OWNER:
        return
    owners = ProjectMembership.objects.select_for_update().filter(
        project_id=membership.project_id, role=Role.OWNER
    )
    if owners.count() <= 1:
        raise ApplicationError("A project must keep at least one owner.")


@transaction.atomic
def membership_add(*, access: ProjectAccess, user: User, role: Role) -> ProjectMembership:
    _check_can_manage(access, target_role=role, new_role=role)
    if ProjectMembership.objects.filter(project=access.project, user=user).exists():
        raise Conflict(f"{user.username} is already a member.")
    membership = ProjectMembership.objects.create(project=access.project, user=user, role=role)
    audit_record(
        actor=access.actor,
        project=access.project,
        verb="member.added",
        target_type="user",
        target_id=user.public_id,
        after={"username": user.username, "role": role},
    )
    return membership


@transaction.atomic
def membership_change_role(
    *, access: ProjectAccess, membership: ProjectMembership, role: Role
) -> ProjectMembership:
    old = Role(membership.role)
    if old == role:
        return membership
    _check_can_manage(access, target_role=old, new_role=role)
    _check_not_last_owner(membership)
    membership.role = role
    membership.save(update_fields=["role"])
    audit_record(
        actor=access.actor,
        project=access.project,
        verb="member.role_changed",
        target_type="user",
        target_id=membership.user.public_id,
        before={"role": old},
        after={"role": role},
    )
    return membership


@transaction.atomic
def membership_remove(*, access: ProjectAccess, membership: ProjectMembership) -> None:
    leaving = membership.user_id == getattr(access.actor.user, "pk", None)
    if not leaving:
        if not access.at_least(Role.MAINTAINER):
            raise PermissionDenied("Only maintainers and owners can remove other members.")
        _check_can_manage(access, target_role=Role(membership.role), new_role=None)
    _check_not_last_owner(membership)
    user = membership.user
    role = membership.role
    membership.delete()
    audit_record(
        actor=access.actor,
        project=access.project,
        verb="member.removed",
        target_type="user",
        target_id=user.public_id,
        before={"username": user.username, "role": role},
    )


def project_settings_section_put(
    *, access: ProjectAccess, section: str, value: dict[str, Any] | None
) -> Project:
    """Set (or, with None, remove) one section of the project's settings, leaving the others;
    idempotent (the same value again records nothing). The caller decides which role may
    write the section."""
    return project_update(
        access=access, changes={"settings": {section: value}}, merge_settings=True
    )


def confirmation_check(project: Project, confirm: str) -> None:
    """What cannot be undone (clearing, rebuilding or deleting a project) is confirmed by
    typing the project's slug."""
    if confirm != project.slug:
        raise ApplicationError(
            "Type the project's slug in 'confirm' to proceed.",
            details={"confirm": [f"must be {project.slug!r}"]},
        )


@transaction.atomic
def project_delete(*, access: ProjectAccess, confirm: str) -> dict[str, int]:
    """Delete the project and everything in it (memories with their history, sessions, jobs,
    files, memberships, the tokens limited to it); owners only, confirmed by typing the slug.
    Returns what was deleted, by kind. The audit event outlives the project (project=None)."""
    project = access.project
    if access.role != Role.OWNER:
        raise PermissionDenied("Only the project's owners can delete it.")
    if access.actor.restricted_project_id is not None:
        raise PermissionDenied("A project-restricted token cannot delete its project.")
    confirmation_check(project, confirm)
    # Waits for a bank clear or rebuild start (they lock the row too); workers writing into the
    # project meanwhile fail on its foreign key once this commits and their jobs are gone.
    Project.objects.select_for_update().filter(pk=project.pk).first()
    before = project.to_dict()
    public_id = project.public_id
    per_model = cascade_delete(Project, pk=project.pk)
    deleted = {
        name: per_model.get(label, 0)
        for name, label in (
            ("memories", "memories.Memory"),
            ("sessions", "agent_sessions.AgentSession"),
            ("records", "agent_sessions.SessionRecord"),
            ("members", "projects.ProjectMembership"),
            ("tokens", "accounts.ApiToken"),
        )
    }
    audit_record(
        actor=access.actor,
        project=None,
        verb="project.deleted",
        target_type="project",
        target_id=public_id,
        before=before,
        after={"deleted": deleted},
    )
    return deleted
