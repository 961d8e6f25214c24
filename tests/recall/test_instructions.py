"""The MEWCODE.md layer: stored instruction files, @include resolution, tree upload."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.actors import Actor
from accounts.models import User
from memoryhub.core.models import AuditEvent
from memoryhub.recall.instructions import (
    BLOCKED,
    SKIPPED,
    resolve,
    resolved_instructions,
)
from memoryhub.recall.models import InstructionFile
from projects.models import Project, Role
from projects.selectors import project_access
from projects.services import membership_add
from tests.factories import UserFactory

P = "/api/v1/projects/alpha/instructions/"
FILES = P + "files/"


def put(client: APIClient, path: str, content: str) -> Any:
    response = client.put(FILES + path, {"content": content}, format="json")
    assert response.status_code in (200, 201), response.content
    return response


def resolved(client: APIClient) -> dict[str, Any]:
    response = client.get(P)
    assert response.status_code == 200, response.content
    return dict(response.json())


def test_it_joins_root_dot_mewcode_and_user_file_in_the_seed_order(
    alice_client: APIClient, alice: User, project: Project
) -> None:
    put(alice_client, ".mewcode/MEWCODE.md", "second")
    alice_client.put(P + "user/", {"content": "third"}, format="json")
    put(alice_client, "MEWCODE.md", "first")
    body = resolved(alice_client)
    assert body["text"] == "first\n---\nsecond\n---\nthird"
    assert body["files"] == ["MEWCODE.md", ".mewcode/MEWCODE.md", "~/.mewcode/MEWCODE.md"]
    assert resolved_instructions(project=project, user=alice) == body["text"]


def test_it_skips_missing_layers_and_is_empty_without_files(alice_client: APIClient) -> None:
    assert resolved(alice_client) == {"text": "", "files": []}
    put(alice_client, ".mewcode/MEWCODE.md", "only this")
    assert resolved(alice_client) == {"text": "only this", "files": [".mewcode/MEWCODE.md"]}


def test_a_users_own_file_is_theirs_alone(alice_client: APIClient, bob_client: APIClient) -> None:
    put(alice_client, "MEWCODE.md", "team rules")
    assert (
        alice_client.put(P + "user/", {"content": "alice likes tabs"}, format="json").status_code
        == 201
    )
    assert bob_client.get(P + "user/").status_code == 404
    assert resolved(bob_client)["text"] == "team rules"
    assert resolved(alice_client)["text"] == "team rules\n---\nalice likes tabs"
    assert "alice likes tabs" not in str(bob_client.get(FILES).json())
    assert alice_client.get(P + "user/").json()["content"] == "alice likes tabs"
    assert alice_client.delete(P + "user/").status_code == 204
    assert resolved(alice_client)["text"] == "team rules"


def test_it_includes_files_relative_to_the_including_file(alice_client: APIClient) -> None:
    put(alice_client, "MEWCODE.md", "root\n  @include docs/style.md  \nend")
    put(alice_client, "docs/style.md", "style\n@include ../shared/lint.md")
    put(alice_client, "shared/lint.md", "lint")
    put(alice_client, ".mewcode/MEWCODE.md", "@include rules.md\n@include ../docs/style.md")
    put(alice_client, ".mewcode/rules.md", "dot rules")
    body = resolved(alice_client)
    assert body["text"] == "root\nstyle\nlint\nend\n---\ndot rules\nstyle\nlint"
    assert body["files"] == [
        "MEWCODE.md",
        "docs/style.md",
        "shared/lint.md",
        ".mewcode/MEWCODE.md",
        ".mewcode/rules.md",
    ]


def test_the_user_files_includes_resolve_against_the_project(alice_client: APIClient) -> None:
    put(alice_client, "docs/mine.md", "included for alice")
    alice_client.put(
        P + "user/", {"content": "@include docs/mine.md\n@include ../x.md"}, format="json"
    )
    assert resolved(alice_client)["text"] == f"included for alice\n{BLOCKED}"


@pytest.mark.parametrize(
    "target",
    [
        "../secret.md",  # ../ escape
        "../../etc/passwd",
        "/etc/passwd",  # absolute
        "C:\\Windows\\win.ini",
        "~/.ssh/id_rsa",
        "a/../../etc",  # a symlink-like name that climbs out once normalized
        "docs/../../etc/passwd",
        "..\\..\\etc\\passwd",
    ],
)
def test_it_blocks_includes_outside_the_project(alice_client: APIClient, target: str) -> None:
    put(alice_client, "MEWCODE.md", f"before\n@include {target}\nafter")
    assert resolved(alice_client)["text"] == f"before\n{BLOCKED}\nafter"


def test_it_marks_missing_includes_as_skipped(alice_client: APIClient) -> None:
    put(alice_client, "MEWCODE.md", "@include nope.md\n@include docs/\n@include docs/a/..")
    assert resolved(alice_client)["text"] == "\n".join([SKIPPED] * 3)


def test_a_chain_of_six_includes_stops_at_depth_five() -> None:
    files = {f"f{i}.md": f"level {i}\n@include f{i + 1}.md" for i in range(7)}
    files["MEWCODE.md"] = "@include f1.md"
    text = resolve(files=files, user_file=None).text
    # MEWCODE.md is depth 0; f1…f4 are expanded; f5 (depth 5) comes back unprocessed.
    assert text == "\n".join(
        ["level 1", "level 2", "level 3", "level 4", "level 5", "@include f6.md"]
    )
    assert "level 6" not in text


def test_an_include_cycle_is_cut_and_reported_once() -> None:
    """Issue 9 (behaviour change): MewCode copies a cycle up to the depth limit, which put three
    copies and 21 comment lines into every payload. The cycle is cut where it closes and
    reported once, however many ways lead into it."""
    files = {"MEWCODE.md": "x\n@include MEWCODE.md"}
    assert resolve(files=files, user_file=None).text == (
        "x\n<!-- @include skipped: cycle MEWCODE.md → MEWCODE.md -->"
    )
    files = {
        "MEWCODE.md": "root\n@include a.md\n@include b.md",
        "a.md": "A\n@include b.md",
        "b.md": "B\n@include a.md",
        ".mewcode/MEWCODE.md": "@include a.md",
    }
    text = resolve(files=files, user_file="@include a.md").text
    # a → b → a and b → a → b, once each; repeated (acyclic) includes still expand.
    assert text == "\n".join(
        [
            "root",
            "A",
            "B",
            "<!-- @include skipped: cycle a.md → b.md → a.md -->",
            "B",
            "A",
            "<!-- @include skipped: cycle b.md → a.md → b.md -->",
            "---",
            "<!-- @include skipped: file not found -->",  # .mewcode/a.md
            "---",
            "A",
            "B",
        ]
    )


def test_only_an_include_on_its_own_line_counts() -> None:
    files = {"MEWCODE.md": "see @include a.md\n@includea.md\n@include", "a.md": "A"}
    assert resolve(files=files, user_file=None).text == files["MEWCODE.md"]


def test_cjk_content_round_trips_and_resolves(alice_client: APIClient) -> None:
    put(alice_client, "MEWCODE.md", "# 项目说明\n@include 文档/风格.md")
    put(alice_client, "文档/风格.md", "使用四个空格缩进。")
    assert resolved(alice_client)["text"] == "# 项目说明\n使用四个空格缩进。"
    assert alice_client.get(FILES + "文档/风格.md").json()["content"] == "使用四个空格缩进。"


def test_put_creates_then_replaces_and_audits(alice_client: APIClient, project: Project) -> None:
    first = alice_client.put(FILES + "docs/./a.md", {"content": "v1"}, format="json")
    assert first.status_code == 201
    assert first.json()["path"] == "docs/a.md"
    assert first.json()["updated_by"] == "alice"
    assert (
        alice_client.put(FILES + "docs/a.md", {"content": "v2"}, format="json").status_code == 200
    )
    same = alice_client.put(FILES + "docs/a.md", {"content": "v2"}, format="json")
    assert same.status_code == 200
    verbs = list(
        AuditEvent.objects.filter(project=project, target_type="instruction_file").values_list(
            "verb", flat=True
        )
    )
    assert verbs == ["instruction_file.created", "instruction_file.updated"]  # no-op: no event
    assert alice_client.get(FILES + "docs/a.md").json()["content"] == "v2"
    listing = alice_client.get(FILES).json()
    assert [f["path"] for f in listing["results"]] == ["docs/a.md"]
    assert listing["results"][0]["bytes"] == 2
    assert alice_client.delete(FILES + "docs/a.md").status_code == 204
    assert alice_client.get(FILES + "docs/a.md").status_code == 404
    assert alice_client.delete(FILES + "docs/a.md").status_code == 404


@pytest.mark.parametrize(
    "path",
    ["../x.md", "a/../../x.md", "~/x.md", "C:x.md", "a\\b.md", "a\x00b.md", "x" * 501, "."],
)
def test_it_rejects_paths_that_cannot_be_stored(alice_client: APIClient, path: str) -> None:
    response = alice_client.post(P + "tree/", {"files": {path: "x"}}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "validation_error"
    assert InstructionFile.objects.count() == 0


def test_it_rejects_an_absolute_path_in_the_url(alice_client: APIClient) -> None:
    response = alice_client.put(FILES + "/etc/passwd", {"content": "x"}, format="json")
    assert response.status_code == 400
    assert "path" in response.json()["error"]["details"]


def test_it_limits_a_file_to_200_kb(alice_client: APIClient) -> None:
    big = "é" * (100 * 1024 + 1)  # 2 bytes each in UTF-8
    response = alice_client.put(FILES + "big.md", {"content": big}, format="json")
    assert response.status_code == 400
    assert "content" in response.json()["error"]["details"]
    assert (
        alice_client.put(FILES + "ok.md", {"content": "é" * 100 * 1024}, format="json").status_code
        == 201
    )


def test_a_tree_upload_is_all_or_nothing(alice_client: APIClient, project: Project) -> None:
    put(alice_client, "MEWCODE.md", "old root")
    put(alice_client, "old.md", "to be removed")
    response = alice_client.post(
        P + "tree/",
        {"files": {"MEWCODE.md": "new root", "../escape.md": "x"}, "replace": True},
        format="json",
    )
    assert response.status_code == 400
    assert list(response.json()["error"]["details"]) == ["../escape.md"]
    assert alice_client.get(FILES + "MEWCODE.md").json()["content"] == "old root"

    tree = {
        "MEWCODE.md": "new root\n@include .mewcode/extra.md",
        ".mewcode/MEWCODE.md": "dot",
        ".mewcode/extra.md": "extra",
    }
    response = alice_client.post(P + "tree/", {"files": tree, "replace": True}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "created": [".mewcode/MEWCODE.md", ".mewcode/extra.md"],
        "updated": ["MEWCODE.md"],
        "unchanged": [],
        "deleted": ["old.md"],
    }
    assert resolved(alice_client)["text"] == "new root\nextra\n---\ndot"
    event = AuditEvent.objects.filter(verb="instruction_tree.uploaded").get()
    assert event.after is not None and event.after["deleted"] == ["old.md"]

    again = alice_client.post(P + "tree/", {"files": {"b.md": "b"}}, format="json").json()
    assert again["created"] == ["b.md"] and again["deleted"] == []
    assert InstructionFile.objects.filter(project=project).count() == 4


def test_viewers_read_project_files_and_write_only_their_own(
    alice_client: APIClient, project: Project, alice: User, make_client: Any
) -> None:
    dave = UserFactory.create(username="dave")
    membership_add(
        access=project_access(slug="alpha", actor=Actor(user=alice)), user=dave, role=Role.VIEWER
    )
    dave_client = make_client(dave)
    put(alice_client, "MEWCODE.md", "rules")
    assert dave_client.get(FILES + "MEWCODE.md").status_code == 200
    assert resolved(dave_client)["text"] == "rules"
    denied = dave_client.put(FILES + "MEWCODE.md", {"content": "mine now"}, format="json")
    assert denied.status_code == 403
    assert dave_client.post(P + "tree/", {"files": {"a.md": "a"}}, format="json").status_code == 403
    assert dave_client.delete(FILES + "MEWCODE.md").status_code == 403
    assert dave_client.put(P + "user/", {"content": "dave's"}, format="json").status_code == 201
    assert resolved(dave_client)["text"] == "rules\n---\ndave's"
