"""The memory pages in Simplified Chinese (Accept-Language): kinds, subcategories and sources as
words, a memory's history with its fields, values and actors in the page's language, and what
agents wrote untouched. English pages keep the stored words."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.memories import services
from memoryhub.memories.models import Memory, MemoryEvent
from projects.models import Project, Role
from projects.selectors import project_access
from projects.services import membership_add
from tests.factories import UserFactory
from tests.web.conftest import remember, transcript

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def url(name: str, memory: Memory | None = None) -> str:
    kwargs: dict[str, object] = {"slug": "alpha"}
    if memory is not None:
        kwargs["memory_id"] = memory.public_id
    return reverse(f"web:{name}", kwargs=kwargs)


def page(client: Client, path: str, headers: dict[str, str], **params: str) -> str:
    response = client.get(path, params, **headers)  # type: ignore[arg-type]
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_kind_and_subcategory_chips_and_filters_are_words_in_chinese(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    ops = remember(project, alice, "Deploy from the ops host.", kind="project", subcategory="ops")
    remember(project, alice, "Lint with ruff before pushing.", kind="rule")
    remember(project, alice, "Alice likes short answers.", kind="user")
    client = web_client(alice)
    listing = page(client, url("memories"), ZH)
    # Chips: the kind as a word (its description on hover), the subcategory translated.
    assert 'title="project：项目知识">项目</span>' in listing
    assert 'title="rule：设计原则">规则</span>' in listing
    assert 'title="user：用户是谁、用户偏好">用户</span>' in listing
    assert '<span class="badge">运维</span>' in listing
    assert ">project</span>" not in listing and ">ops</span>" not in listing
    # The filters' options.
    for value, word in (("soul", "人格"), ("feedback", "反馈"), ("lesson", "教训")):
        assert f'<option value="{value}">{word}</option>' in listing
    for value, word in (("overview", "概览"), ("structure", "结构"), ("todo", "待办")):
        assert f'<option value="{value}">{word}</option>' in listing
    assert "Deploy from the ops host." in listing  # what the agent wrote is not translated

    search = page(client, url("memories"), ZH, q="ops host")
    assert "Deploy from the ops host." in search
    assert 'title="project：项目知识">项目</span>' in search and ">运维</span>" in search
    detail = page(client, url("memory", ops), ZH)
    assert 'class="badge kind-project" title="project：项目知识">项目</span>' in detail
    assert '<span class="badge">运维</span>' in detail

    # English keeps the kinds' own words (what the API and the agents use).
    english = page(client, url("memories"), EN)
    assert '<option value="rule">rule</option>' in english
    assert '<option value="ops">Ops</option>' in english
    assert 'title="project: project knowledge">project</span>' in english


def test_the_edit_form_offers_kinds_and_subcategories_in_chinese(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    memory = remember(project, alice, "Services live under src/.", subcategory="structure")
    html = page(web_client(alice), url("memory_edit", memory), ZH)
    assert '<option value="project" selected>项目</option>' in html
    assert '<option value="structure" selected>结构</option>' in html


def test_the_review_queue_names_kinds_subcategories_and_records_in_chinese(
    alice: User, bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    transcript(
        project,
        bob,
        "sess-7",
        [("user", "Where do services live?"), ("assistant", "Under src/services.")],
    )
    remember(
        project,
        bob,
        "Services live under src/services.",
        subcategory="structure",
        status="proposed",
        source_session="sess-7",
        source_record_start=0,
        source_record_end=1,
    )
    html = page(web_client(alice), reverse("web:review", kwargs={"slug": "alpha"}), ZH)
    assert 'title="project：项目知识">项目</span>' in html
    assert '<span class="badge">结构</span>' in html and ">structure<" not in html
    assert "#0 用户</span>" in html and "#1 助手</span>" in html
    assert "Where do services live?" in html  # the transcript is not translated


def test_the_history_speaks_chinese_and_stores_what_it_stored(
    alice: User,
    alice_client: APIClient,
    bob: User,
    project: Project,
    web_client: Callable[[User], Client],
) -> None:
    response = alice_client.post(
        "/api/v1/projects/alpha/memories/",
        {"content": "Deploy with make release.", "kind": "project", "keywords": ["deploy"]},
        format="json",
    )
    assert response.status_code == 201, response.content
    memory = Memory.objects.get(public_id=response.json()["id"])
    token = memory.created_by_token
    assert token is not None
    person = Actor(user=alice)
    services.memory_set_status(memory=memory, actor=person, status="stale", reason="Outdated.")
    services.memory_set_status(memory=memory, actor=person, status="active")
    other = services.memory_create(
        project=project,
        actor=Actor.for_system("pipeline", user=bob),
        data=services.MemoryInput(content="Releases are tagged.", kind="project"),
    )
    services.memory_merge(keep=memory, other=other, actor=person)
    client = web_client(alice)

    html = page(client, url("memory", memory), ZH)
    # The token's owner and prefix, worded in Chinese (in the history and the provenance).
    assert f"<strong>alice（令牌 {token.prefix}）</strong> 创建了" in html
    assert f"<dd>alice（令牌 {token.prefix}）</dd>" in html
    assert "via token" not in html and "通过令牌" not in html
    # Field names as labels, coded values translated.
    assert '<th scope="row">状态</th>' in html and '<th scope="row">原因</th>' in html
    assert '<th scope="row">合并自</th>' in html and '<th scope="row">内容</th>' in html
    assert "<del>生效</del> → <ins>过时</ins>" in html
    assert "<del>过时</del> → <ins>生效</ins>" in html
    assert "<dt>被取代为</dt>" in html and "<dt>关键词</dt>" in html
    assert "<dt>类型</dt><dd>项目</dd>" in html
    assert "<dt>范围</dt><dd>项目：所有成员可见</dd>" in html
    for raw in ("status_reason", "superseded_by", "merged_from", "status", "keywords"):
        assert f">{raw}<" not in html, raw
    assert "Outdated." in html  # a person's reason is not translated
    # A bank process, named in Chinese, with the person it worked for.
    merged = page(client, url("memory", other), ZH)
    assert "<strong>提取流水线（bob）</strong> 创建了" in merged
    assert "<del>生效</del> → <ins>已归档</ins>" in merged
    assert "(提取流水线)" in page(client, url("memories"), ZH, status="all")

    english = page(client, url("memory", memory), EN)
    assert f"<strong>alice via token {token.prefix}</strong> created" in english
    assert '<th scope="row">Reason</th>' in english and "<dt>Superseded by</dt>" in english
    assert "<del>Active</del> → <ins>Stale</ins>" in english
    assert "<strong>pipeline (bob)</strong> created" in page(client, url("memory", other), EN)
    # What is stored stays as it was written.
    labels = set(MemoryEvent.objects.filter(memory=memory).values_list("actor_label", flat=True))
    assert labels == {f"alice via token {token.prefix}", "alice"}


def test_a_person_named_like_a_bank_process_stays_a_person(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    dream = UserFactory.create(username="dream")
    membership_add(
        access=project_access(slug="alpha", actor=Actor(user=alice)), user=dream, role=Role.MEMBER
    )
    memory = remember(project, dream, "Dreams are for the night.")
    html = page(web_client(alice), url("memory", memory), ZH)
    assert "<strong>dream</strong> 创建了" in html and "梦境整理" not in html


def test_a_filter_error_names_the_filter_by_its_label(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    response = web_client(alice).get(url("memories"), {"importance": "0"}, **ZH)  # type: ignore[arg-type]
    assert response.status_code == 400
    html = response.content.decode()
    assert '<div class="form-errors" role="alert"><p>重要性: ' in html and "importance:" not in html


def test_the_services_refusals_follow_the_pages_and_the_apis_language(
    alice: User, alice_client: APIClient, project: Project, web_client: Callable[[User], Client]
) -> None:
    memory = remember(project, alice, "Node 18 in CI.")
    client = web_client(alice)
    stale = url("memory", memory) + "stale/"
    missing = client.post(stale, {"reason": " "}, HTTP_HX_REQUEST="true", **ZH)  # type: ignore[arg-type]
    assert missing.status_code == 400
    assert "请说明这条记忆为什么过时。" in missing.content.decode()
    english = client.post(stale, {"reason": " "}, HTTP_HX_REQUEST="true", **EN)  # type: ignore[arg-type]
    assert "Say why the memory is stale." in english.content.decode()

    approve = f"/api/v1/projects/alpha/memories/{memory.public_id}/approve/"
    refused = alice_client.post(approve, **ZH)  # type: ignore[arg-type]
    assert refused.status_code == 400, refused.content
    assert refused.json()["error"]["message"] == "只有待审核的记忆才能批准；这条是 active。"
    blank = alice_client.post(
        "/api/v1/projects/alpha/memories/",
        {"content": "  ", "kind": "fact"},
        format="json",
        **ZH,  # type: ignore[arg-type]
    )
    assert blank.status_code == 400
    assert "内容不能为空。" in blank.content.decode()
