"""Memory browser and memory detail with its actions. Reads through memoryhub.memories.
selectors (and recall's ranking for search), writes through memoryhub.memories.services."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q, QuerySet, prefetch_related_objects
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from memoryhub.core.exceptions import ApplicationError
from memoryhub.memories import selectors, services
from memoryhub.memories.kinds import Scope
from memoryhub.memories.models import Memory
from memoryhub.recall import search, similar
from memoryhub.web import diff, forms
from memoryhub.web.access import project_view
from memoryhub.web.htmx import htmx_target, is_htmx
from memoryhub.web.pagination import decode_cursor, encode_cursor, error_text
from projects.models import Role
from projects.selectors import ProjectAccess

PAGE_SIZE = 50
SEARCH_MAX_PAGES = 20  # search pages by rank (indexed offset): 1,000 results at most
CHAIN_MAX = 10


# --- the browser ------------------------------------------------------------------------------


def _statuses(value: str) -> tuple[str, ...]:
    statuses = forms.ChoiceListField.values(value)
    if "all" in statuses:
        return tuple(Memory.Status.values)
    return statuses or selectors.DEFAULT_STATUSES


def _filters(data: dict[str, Any]) -> selectors.MemoryFilters:
    age = forms.AGES.get(data.get("age") or "")
    return selectors.MemoryFilters(
        kinds=forms.ChoiceListField.values(data.get("kind") or ""),
        scope=data.get("scope") or None,
        statuses=_statuses(data.get("status") or ""),
        subcategory=data.get("subcategory") or None,
        importance=data.get("importance"),
        created_after=timezone.now() - timedelta(days=age[0]) if age else None,
    )


@dataclass
class Row:
    memory: Memory
    score: float | None = None
    url: str = ""


def _with_urls(access: ProjectAccess, rows: list[Row]) -> list[Row]:
    """Each row's link from one reverse(): fifty {% url %} tags cost more than the query."""
    placeholder = UUID(int=0)
    pattern = reverse("web:memory", kwargs={"slug": access.project.slug, "memory_id": placeholder})
    for row in rows:
        row.url = pattern.replace(str(placeholder), str(row.memory.public_id))
    return rows


def _browse(
    access: ProjectAccess, data: dict[str, Any]
) -> tuple[list[Row], str | None, int | None]:
    """A page of the list: keyset pagination on (sort field, id), both descending."""
    qs: QuerySet[Memory] = selectors.memory_list(access=access, filters=_filters(data))
    if data.get("owner"):
        qs = qs.filter(created_by_user__username=data["owner"])
    field = forms.SORTS.get(data.get("sort") or "updated", forms.SORTS["updated"])[0]
    name = field.lstrip("-")
    cursor = decode_cursor(data.get("cursor") or "", name)
    if cursor is not None:
        value, pk = cursor
        qs = qs.filter(Q(**{f"{name}__lt": value}) | Q(**{name: value, "pk__lt": pk}))
    memories = list(qs.order_by(field, "-id")[: PAGE_SIZE + 1])
    next_cursor = None
    if len(memories) > PAGE_SIZE:
        memories = memories[:PAGE_SIZE]
        last = memories[-1]
        next_cursor = encode_cursor(getattr(last, name), last.pk)
    return [Row(m) for m in memories], next_cursor, None


def _search(
    access: ProjectAccess, data: dict[str, Any]
) -> tuple[list[Row], str | None, int | None]:
    """Ranked by the recall ranking (BM25 × recency), paged by rank."""
    page = data.get("page") or 1
    filters = _filters(data)
    # The ranking knows no author or importance: with either filter, rank every hit the pages
    # can reach and filter before paging (filtering each page's window left pages empty).
    narrowed = bool(data.get("importance") or data.get("owner"))
    pages = SEARCH_MAX_PAGES if narrowed else min(page, SEARCH_MAX_PAGES)
    hits = search.memory_search(
        access=access,
        query=search.SearchQuery(
            text=data["q"],
            k=pages * PAGE_SIZE + 1,
            kinds=filters.kinds,
            scope=filters.scope,
            statuses=filters.statuses,
            subcategory=filters.subcategory,
            days=forms.AGES[data["age"]][0] if data.get("age") else None,
            record=False,
        ),
    )
    # The hits are whole memories the caller may see (the search is scoped to them): only their
    # authors are fetched, in one small query. Fetching the rows again with their joins cost a
    # tenth of a search at 100,000 memories.
    if narrowed:
        prefetch_related_objects([hit.memory for hit in hits], "created_by_user")
        hits = [
            hit
            for hit in hits
            if (not data.get("importance") or hit.memory.importance == data["importance"])
            and (
                not data.get("owner")
                or getattr(hit.memory.created_by_user, "username", "") == data["owner"]
            )
        ]
    window = hits[(page - 1) * PAGE_SIZE : page * PAGE_SIZE + 1]
    has_next = len(window) > PAGE_SIZE and page < SEARCH_MAX_PAGES
    window = window[:PAGE_SIZE]
    if not narrowed:
        prefetch_related_objects([hit.memory for hit in window], "created_by_user")
    return [Row(hit.memory, hit.score) for hit in window], None, page + 1 if has_next else None


@project_view()
def memory_list(request: HttpRequest, access: ProjectAccess) -> TemplateResponse:
    form = forms.MemoryFilterForm(request.GET)
    status = 200
    rows: list[Row] = []
    next_cursor = None
    next_page = None
    if form.is_valid():
        data = form.cleaned_data
        if data.get("q", "").strip():
            rows, next_cursor, next_page = _search(access, data)
        else:
            rows, next_cursor, next_page = _browse(access, data)
        rows = _with_urls(access, rows)
    else:
        status = 400
    query = request.GET.copy()
    for key in ("cursor", "page"):
        query.pop(key, None)
    context = {
        "form": form,
        "rows": rows,
        "searching": bool(form.is_valid() and form.cleaned_data.get("q", "").strip()),
        "next_url": _with(query, cursor=next_cursor, page=next_page)
        if (next_cursor or next_page)
        else None,
        "first_url": "?" + query.urlencode()
        if ("cursor" in request.GET or "page" in request.GET)
        else None,
        "nav_section": "memories",
    }
    template = "web/memories/list.html"
    if htmx_target(request) == "memory-results":
        template += "#results"
    return TemplateResponse(request, template, context, status=status)


def _with(query: Any, **params: Any) -> str:
    query = query.copy()
    for key, value in params.items():
        if value is not None:
            query[key] = value
    return "?" + query.urlencode()


# --- detail -----------------------------------------------------------------------------------


def _session_url(access: ProjectAccess, memory: Memory) -> str | None:
    """The transcript page of the memory's source session, once the sessions page exists."""
    if not memory.source_session:
        return None
    try:
        url = reverse(
            "web:session", kwargs={"slug": access.project.slug, "ref": memory.source_session}
        )
    except NoReverseMatch:
        return None
    if memory.source_record_start is not None:
        url += f"#record-{memory.source_record_start}"
    return url


def _chain(access: ProjectAccess, memory: Memory) -> list[Memory]:
    """The superseded-by chain from this memory to the one that stands now (visible ones)."""
    chain: list[Memory] = []
    seen = {memory.pk}
    current = memory
    while current.superseded_by is not None and len(chain) < CHAIN_MAX:
        try:
            current = selectors.memory_get(
                access=access, public_id=str(current.superseded_by.public_id)
            )
        except Http404:  # the successor is not visible to this person
            break
        if current.pk in seen:
            break
        seen.add(current.pk)
        chain.append(current)
    return chain


def _merged_from(access: ProjectAccess, events: list[Any]) -> list[Memory]:
    ids = [
        e.after["merged_from"]
        for e in events
        if isinstance(e.after, dict) and e.after.get("merged_from")
    ]
    if not ids:
        return []
    return list(selectors.memory_visible(access=access).filter(public_id__in=ids))


def _permissions(access: ProjectAccess, memory: Memory) -> dict[str, bool]:
    """What the page offers; the same checks as the API (services re-check)."""
    member = access.at_least(Role.MEMBER)
    maintainer = access.at_least(Role.MAINTAINER)
    status = memory.status
    return {
        "can_edit": member and status != Memory.Status.ARCHIVED,
        "can_archive": member and status != Memory.Status.ARCHIVED,
        "can_mark_stale": member and status in (Memory.Status.ACTIVE, Memory.Status.PROPOSED),
        "can_restore": member and status in (Memory.Status.STALE, Memory.Status.ARCHIVED),
        "can_review": status == Memory.Status.PROPOSED
        and (maintainer or (member and memory.scope == Scope.USER)),
        "can_merge": member and status in services.MERGEABLE_STATUSES,
        "can_promote": member
        and memory.scope == Scope.USER
        and memory.owner_id == getattr(access.actor.user, "pk", None),
        "can_delete": access.at_least(Role.OWNER),
    }


def detail_context(access: ProjectAccess, memory: Memory) -> dict[str, Any]:
    events = list(selectors.memory_events(memory=memory))
    history = [{"event": e, "changes": diff.changes(e.before, e.after)} for e in events]
    return {
        "memory": memory,
        "history": history,
        "chain": _chain(access, memory),
        "supersedes": list(
            selectors.memory_visible(access=access)
            .filter(superseded_by=memory)
            .order_by("-updated_at")[:20]
        ),
        "merged_from": _merged_from(access, events),
        "session_url": _session_url(access, memory),
        "delete_confirmation": services.memory_delete_confirmation(memory),
        "nav_section": "memories",
        **_permissions(access, memory),
    }


def _get(access: ProjectAccess, memory_id: UUID) -> Memory:
    return selectors.memory_get(access=access, public_id=str(memory_id))


@project_view()
def memory_detail(request: HttpRequest, access: ProjectAccess, memory_id: UUID) -> TemplateResponse:
    memory = _get(access, memory_id)
    return TemplateResponse(request, "web/memories/detail.html", detail_context(access, memory))


def _detail_url(access: ProjectAccess, memory: Memory) -> str:
    return reverse(
        "web:memory", kwargs={"slug": access.project.slug, "memory_id": memory.public_id}
    )


def _action(
    request: HttpRequest,
    access: ProjectAccess,
    memory_id: UUID,
    run: Callable[[Memory], Memory],
    done: str,
) -> HttpResponse:
    """Run one action; htmx gets the memory's main block back in place, others a redirect."""
    memory = _get(access, memory_id)
    error = ""
    try:
        memory = run(memory)
    except (ValidationError, ApplicationError) as exc:
        error = error_text(exc)
    memory = _get(access, memory.public_id)
    if is_htmx(request):
        context = detail_context(access, memory) | {"error": error, "notice": "" if error else done}
        return TemplateResponse(
            request, "web/memories/detail.html#memory-main", context, status=400 if error else 200
        )
    if error:
        messages.error(request, error)
    else:
        messages.success(request, done)
    return redirect(_detail_url(access, memory))


def _review_checked(access: ProjectAccess, memory: Memory) -> Memory:
    selectors.memory_review_check(access=access, memory=memory)
    return memory


ActionRun = Callable[[HttpRequest, ProjectAccess, Memory], Memory]


def _action_view(run: ActionRun, done: Promise) -> Callable[..., HttpResponse]:
    """A POST action on one memory, for members and up: the service (and, for review, the
    review rule) decides the rest, as in the API."""

    @require_POST
    @project_view(Role.MEMBER)
    def view(request: HttpRequest, access: ProjectAccess, memory_id: UUID) -> HttpResponse:
        return _action(request, access, memory_id, lambda m: run(request, access, m), str(done))

    return view


def _set_status(status: str) -> ActionRun:
    return lambda request, access, m: services.memory_set_status(
        memory=m, actor=access.actor, status=status, reason=forms.posted_reason(request)
    )


memory_archive = _action_view(_set_status(Memory.Status.ARCHIVED), gettext_lazy("Archived."))
memory_stale = _action_view(_set_status(Memory.Status.STALE), gettext_lazy("Marked stale."))
memory_restore = _action_view(_set_status(Memory.Status.ACTIVE), gettext_lazy("Restored."))
memory_approve = _action_view(
    lambda request, access, m: services.memory_approve(
        memory=_review_checked(access, m), actor=access.actor
    ),
    gettext_lazy("Approved."),
)
memory_reject = _action_view(
    lambda request, access, m: services.memory_reject(
        memory=_review_checked(access, m), actor=access.actor, reason=forms.posted_reason(request)
    ),
    gettext_lazy("Rejected."),
)
memory_promote = _action_view(
    lambda request, access, m: services.memory_promote(memory=m, actor=access.actor),
    gettext_lazy("Shared with the project."),
)


@project_view(Role.MEMBER)
def memory_edit(request: HttpRequest, access: ProjectAccess, memory_id: UUID) -> HttpResponse:
    memory = _get(access, memory_id)
    if memory.status == Memory.Status.ARCHIVED:
        raise PermissionDenied(_("Restore an archived memory before editing it."))
    form = forms.MemoryEditForm.for_memory(memory)
    version = services.edit_version(memory)
    if request.method == "POST":
        form = forms.MemoryEditForm(request.POST)
        if form.is_valid():
            try:
                services.memory_update(
                    memory=memory,
                    actor=access.actor,
                    changes=form.changes(),
                    expected_version=request.POST.get("version") or None,
                )
            except ValidationError as exc:
                form.add_service_errors(exc)
            except ApplicationError as exc:
                form.add_error(None, exc.message)
                # Saving again, having seen the message, replaces the newer edit on purpose.
                version = exc.details.get("version", [version])[0]
            else:
                messages.success(request, _("Saved."))
                return redirect(_detail_url(access, memory))
        else:
            version = request.POST.get("version") or version
    context = {"memory": memory, "form": form, "version": version, "nav_section": "memories"}
    status = 400 if form.errors else 200
    return TemplateResponse(request, "web/memories/edit.html", context, status=status)


@project_view()
def memory_similar(
    request: HttpRequest, access: ProjectAccess, memory_id: UUID
) -> TemplateResponse:
    memory = _get(access, memory_id)
    found = similar.find_similar(
        access=access, target=memory, k=10, statuses=services.MERGEABLE_STATUSES
    )
    context = {
        "memory": memory,
        "similar": found,
        "can_merge": access.at_least(Role.MEMBER) and memory.status in services.MERGEABLE_STATUSES,
        "nav_section": "memories",
    }
    template = "web/memories/similar.html"
    if is_htmx(request):
        template += "#similar-list"
    return TemplateResponse(request, template, context)


@project_view(Role.MEMBER)
def memory_merge(request: HttpRequest, access: ProjectAccess, memory_id: UUID) -> HttpResponse:
    """GET ?other=<id>: both memories and the merged text to edit; POST: merge."""
    keep = _get(access, memory_id)
    source = request.POST if request.method == "POST" else request.GET
    form = forms.MergeForm(source) if "other" in source else forms.MergeForm()
    other = None
    if form.is_bound and form.is_valid():
        # Only a memory this person can see can be named (404 otherwise, as in the API).
        other = _get(access, form.cleaned_data["other"])
        if other.pk == keep.pk:  # the preview would show the text twice; the service refuses too
            form.add_error("other", _("Pick two different memories."))
            other = None
        elif request.method == "POST":
            try:
                services.memory_merge(
                    keep=keep,
                    other=other,
                    actor=access.actor,
                    content=form.cleaned_data.get("content") or None,
                )
            except (ValidationError, ApplicationError) as exc:
                form.add_error(None, error_text(exc))
            else:
                messages.success(
                    request, _("Merged. The other memory is archived and points here.")
                )
                return redirect(_detail_url(access, keep))
        else:
            form = forms.MergeForm(
                initial={"other": other.public_id, "content": f"{keep.content}\n\n{other.content}"}
            )
    context = {"memory": keep, "other": other, "form": form, "nav_section": "memories"}
    status = 400 if (request.method == "POST" and form.errors) else 200
    return TemplateResponse(request, "web/memories/merge.html", context, status=status)


@project_view(Role.OWNER)
def memory_delete(request: HttpRequest, access: ProjectAccess, memory_id: UUID) -> HttpResponse:
    memory = _get(access, memory_id)
    form = forms.DeleteForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            services.memory_delete_unsafe(
                memory=memory, actor=access.actor, confirm=form.cleaned_data["confirm"]
            )
        except ValidationError:
            form.add_error("confirm", _("Type the 8 characters shown to delete this memory."))
        else:
            messages.success(request, _("The memory was deleted for good."))
            return HttpResponseRedirect(
                reverse("web:memories", kwargs={"slug": access.project.slug})
            )
    context = {
        "memory": memory,
        "form": form,
        "delete_confirmation": services.memory_delete_confirmation(memory),
        "nav_section": "memories",
    }
    status = 400 if form.errors else 200
    return TemplateResponse(request, "web/memories/delete.html", context, status=status)
