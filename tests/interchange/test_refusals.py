"""Every refusal of an import, whatever stopped it, answers in one shape: error.details.errors,
a list of {"file", "line", "message"} naming every problem found, and a one-line message."""

from __future__ import annotations

import io
import warnings
import zipfile
from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.memories.models import Memory
from memoryhub.sessions.models import AgentSession
from projects.models import Project
from tests.interchange.helpers import import_url, tree_files, upload, zip_bytes

TOPIC = "---\nname: {name}\ndescription: d\ntype: {type}\n---\n\nbody of {name}\n"


def errors_of(response: Any, status: int = 400) -> list[dict[str, Any]]:
    """The refusal's problems, after checking its shape."""
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert "\n" not in error["message"] and error["message"]
    problems = error["details"]["errors"]
    assert problems and all(set(p) == {"file", "line", "message"} for p in problems), problems
    assert Memory.objects.count() == 0
    return list(problems)


def test_every_broken_topic_file_is_listed(project: Project, alice_client: APIClient) -> None:
    files = {
        "memory/a.md": TOPIC.format(name="a", type="bogus").encode(),
        "memory/b.md": TOPIC.format(name="b", type="user").encode(),
        "memory/c.md": b"no frontmatter at all\n",
    }
    problems = errors_of(upload(alice_client, "alpha", "claude_code", zip_bytes(files)))
    assert [(p["file"], p["line"]) for p in problems] == [("memory/a.md", 4), ("memory/c.md", 1)]
    assert "bogus" in problems[0]["message"] and "frontmatter" in problems[1]["message"]


def test_every_bad_line_of_a_file_is_listed(project: Project, alice_client: APIClient) -> None:
    text = "- before any header\n### 未知分类\n- under it\n### 项目知识\n- fine\n"
    files = {".mewcode/memories.md": text.encode()}
    problems = errors_of(upload(alice_client, "alpha", "mewcode", zip_bytes(files)))
    assert [(p["file"], p["line"]) for p in problems] == [
        (".mewcode/memories.md", 1),
        (".mewcode/memories.md", 2),
    ]


def test_a_broken_transcript_is_listed_with_the_other_files_problems(
    project: Project, alice_client: APIClient
) -> None:
    files = {
        ".mewcode/memories.md": b"- before any header\n",
        ".mewcode/sessions/s1.jsonl": b'{"type": "user", "content": "hi"}\n{bad json\n',
        ".mewcode/sessions/s2.jsonl": b'{"type": "user", "content": "fine"}\n',
    }
    problems = errors_of(upload(alice_client, "alpha", "mewcode", zip_bytes(files)))
    assert [(p["file"], p["line"]) for p in problems] == [
        (".mewcode/memories.md", 1),
        (".mewcode/sessions/s1.jsonl", 2),
    ]
    assert not AgentSession.objects.exists()


def test_files_that_are_not_utf8_are_listed_with_the_rest(
    project: Project, alice_client: APIClient
) -> None:
    files = {
        ".mewcode/memories.md": "### 项目知识\n- fine\n".encode("gbk"),
        ".mewcode/memory/notes.md": b"\xff\xfe not utf-8\n",
        ".mewcode/memory/ok.md": b"---\nname: ok\n---\nfine\n",
    }
    problems = errors_of(upload(alice_client, "alpha", "mewcode", zip_bytes(files)))
    assert [(p["file"], p["line"]) for p in problems] == [
        (".mewcode/memories.md", None),
        (".mewcode/memory/notes.md", None),
    ]
    assert all("not valid UTF-8" in p["message"] for p in problems)


def test_every_bad_raw_memory_and_summary_is_listed(
    project: Project, alice_client: APIClient
) -> None:
    files = {
        "raw_memories.md": b"# Raw Memories\n\nstray text\n\n## t-1\nupdated_at: soon\n- x\n",
        "rollout_summaries/t-1.md": b"no header here\n",
    }
    problems = errors_of(upload(alice_client, "alpha", "omp", zip_bytes(files)))
    assert [(p["file"], p["line"]) for p in problems] == [
        ("raw_memories.md", 3),
        ("raw_memories.md", 6),
        ("rollout_summaries/t-1.md", 1),
    ]


def _zip_with_member(name: str, *, mode: int | None = None, twice: bool = False) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate we make on purpose
        archive.writestr(".mewcode/memories.md", "### 项目知识\n- fine\n")
        for _ in range(2 if twice else 1):
            info = zipfile.ZipInfo(name)
            if mode is not None:
                info.external_attr = mode << 16
            archive.writestr(info, b"x")
    return out.getvalue()


def test_archive_problems_name_the_member(project: Project, alice_client: APIClient) -> None:
    cases = [
        (_zip_with_member("../escape.md"), "../escape.md", "'..'"),
        (_zip_with_member("/etc/passwd"), "/etc/passwd", "absolute path"),
        (_zip_with_member("link.md", mode=0o120777), "link.md", "symbolic link"),
        (_zip_with_member("docs/a.md", twice=True), "docs/a.md", "twice"),
    ]
    for data, member, reason in cases:
        response = upload(alice_client, "alpha", "mewcode", data)
        [problem] = errors_of(response)
        assert problem["file"] == member and problem["line"] is None, problem
        assert reason in problem["message"] and reason in response.json()["error"]["message"]


def test_a_truncated_zip_names_the_upload(project: Project, alice_client: APIClient) -> None:
    data = zip_bytes(tree_files("mewcode"))
    response = upload(alice_client, "alpha", "mewcode", data[: len(data) // 2], "ws.zip")
    [problem] = errors_of(response)
    assert problem["file"] == "ws.zip" and "zip" in problem["message"]


def test_too_large_an_upload_keeps_its_413(
    project: Project, alice_client: APIClient, settings: Any
) -> None:
    settings.SESSION_IMPORT_MAX_BYTES = 4096
    unpacked = zip_bytes({".mewcode/memories.md": b"### x\n- " + b"a" * 20_000 + b"\n"})
    [problem] = errors_of(upload(alice_client, "alpha", "mewcode", unpacked), 413)
    assert problem["file"] == ".mewcode/memories.md" and "4096" in problem["message"]
    raw = alice_client.post(
        import_url("alpha", "meow") + "?filename=memory.db",
        b"x" * 5000,
        content_type="application/octet-stream",
    )
    [problem] = errors_of(raw, 413)
    assert problem["file"] == "memory.db"
    assert raw.json()["error"]["details"]["limit_bytes"] == 4096


def test_a_post_without_a_file_says_so(project: Project, alice_client: APIClient) -> None:
    url = import_url("alpha", "mewcode")
    for response in (
        alice_client.post(url),
        alice_client.post(url, {"other": "x"}, format="multipart"),
        alice_client.post(url, b"", content_type="application/octet-stream"),
    ):
        [problem] = errors_of(response)
        assert response.json()["error"]["code"] == "validation_error"
        assert problem["message"] == "No file was uploaded.", problem
    [problem] = errors_of(upload(alice_client, "alpha", "mewcode", b"", "empty.zip"))
    assert problem["file"] == "empty.zip" and "empty" in problem["message"]


def test_the_import_page_lists_the_same_problems(project: Project, alice: User) -> None:
    client = Client()
    client.force_login(alice)
    files = {
        "memory/a.md": TOPIC.format(name="a", type="bogus").encode(),
        "memory/c.md": b"no frontmatter at all\n",
    }
    for upload_data, shown in (
        (zip_bytes(files), ["memory/a.md:4", "memory/c.md:1"]),
        (_zip_with_member("../escape.md"), ["../escape.md"]),
    ):
        response = client.post(
            "/p/alpha/import-export/import/",
            {
                "format": "claude_code",
                "upload": SimpleUploadedFile("up.zip", upload_data),
                "action": "import",
            },
        )
        assert response.status_code == 400
        html = response.content.decode()
        assert "Nothing was imported." in html
        assert all(f"<code>{where}</code>" in html for where in shown), html


def test_a_zip_with_damaged_data_names_the_member(
    project: Project, alice_client: APIClient
) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(".mewcode/memories.md", bytes(range(256)) * 400)
    data = bytearray(out.getvalue())
    for position in range(80, 300):  # inside the compressed data, after the local header
        data[position] ^= 0x5A
    [problem] = errors_of(upload(alice_client, "alpha", "mewcode", bytes(data)))
    assert problem["file"] == ".mewcode/memories.md" and "zip" in problem["message"]


def test_a_zip_declaring_too_much_is_refused_before_anything_is_unpacked(
    project: Project, alice_client: APIClient, settings: Any
) -> None:
    settings.SESSION_IMPORT_MAX_BYTES = 4096
    data = bytearray(zip_bytes({".mewcode/memories.md": b"### x\n- " + b"a" * 20_000 + b"\n"}))
    # Damage the compressed data: unpacking it would fail (a 400), so a 413 naming the member
    # shows the declared size was enough to refuse it, unread.
    start = data.index(b"memories.md") + len(b"memories.md")
    data[start + 4 : start + 24] = b"\xff" * 20
    [problem] = errors_of(upload(alice_client, "alpha", "mewcode", bytes(data)), 413)
    assert problem["file"] == ".mewcode/memories.md"


def test_refusals_follow_the_requests_language(project: Project, alice_client: APIClient) -> None:
    """Accept-Language, as DRF's own messages do; the shape and the file names do not change."""
    zh = {"Accept-Language": "zh-CN,zh;q=0.9"}
    url = import_url("alpha", "mewcode")
    [problem] = errors_of(alice_client.post(url, headers=zh))
    assert problem == {"file": "", "line": None, "message": "没有上传文件。"}
    files = {
        ".mewcode/memory/notes.md": b"\xff\xfe not utf-8\n",
        ".mewcode/memories.md": "- 标题之前\n".encode(),
    }
    response = alice_client.post(
        url,
        {"file": SimpleUploadedFile("ws.zip", zip_bytes(files))},
        format="multipart",
        headers=zh,
    )
    problems = errors_of(response)
    assert [(p["file"], p["line"], p["message"]) for p in problems] == [
        (".mewcode/memories.md", 1, "记忆行出现在任何 '### 分类' 标题之前"),
        (".mewcode/memory/notes.md", None, "不是有效的 UTF-8（位于第 0 字节）"),
    ]
    assert response.json()["error"]["message"] == (
        "没有导入任何内容：.mewcode/memories.md:1: 记忆行出现在任何 '### 分类' 标题之前"
        "（另有 1 个问题）"
    )
    damaged = alice_client.post(
        url,
        {"file": SimpleUploadedFile("ws.zip", b"PK\x03\x04broken")},
        format="multipart",
        headers=zh,
    )
    [problem] = errors_of(damaged)
    assert problem["file"] == "ws.zip" and problem["message"].startswith("不是可读取的 zip 文件（")
    # English stays word for word what it was.
    english = alice_client.post(
        url, {"file": SimpleUploadedFile("ws.zip", zip_bytes(files))}, format="multipart"
    )
    assert english.json()["error"]["message"] == (
        "Nothing was imported: .mewcode/memories.md:1: a memory line before any '### category' "
        "header (and 1 more)"
    )
