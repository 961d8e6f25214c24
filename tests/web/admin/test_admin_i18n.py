"""The admin pages in Simplified Chinese (Accept-Language), with what agents wrote untouched."""

from __future__ import annotations

from collections.abc import Callable

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.pipeline import jobs
from memoryhub.pipeline.models import Job
from projects.models import Project
from tests.interchange.helpers import zip_bytes
from tests.web.admin.helpers import push_session

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}


def test_pages_speak_chinese(
    alice: User, alice_client: APIClient, project: Project, web_client: Callable[[User], Client]
) -> None:
    sid = push_session(alice_client)
    client = web_client(alice)
    expected = {
        "sessions/": "最近活动",
        f"sessions/{sid}/": "MemoryHub 注入",
        "recall-files/": "新建召回文件",
        "instructions/": "为你解析后的结果",
        "preview/": "注入预览",
        "bank/": "从会话记录重建",
        "members/": "你的智能体令牌",
        "settings/": "召回排序",
    }
    for url, text in expected.items():
        html = client.get("/p/alpha/" + url, **ZH).content.decode()  # type: ignore[arg-type]
        assert text in html, url
        assert 'lang="zh-Hans"' in html
    transcript = client.get(f"/p/alpha/sessions/{sid}/", **ZH).content.decode()  # type: ignore[arg-type]
    assert "Please fix the flaky test" in transcript  # the agent's words are not translated
    settings_page = client.get("/p/alpha/settings/", **ZH).content.decode()  # type: ignore[arg-type]
    assert "默认： 0.3" in settings_page
    # Knobs by name, with the API key beside each (it was the bare key, in English).
    assert "词频饱和度（BM25 k1）" in settings_page and "search_k1 · 默认" in settings_page
    assert "删除此项目" in settings_page and "下载备份" in settings_page


def test_the_bank_page_names_job_states_in_chinese(
    alice: User, alice_client: APIClient, project: Project, web_client: Callable[[User], Client]
) -> None:
    jobs.ensure(kind=Job.Kind.STAGE1, key="s-1", project=project, bump=True)  # queued
    html = web_client(alice).get("/p/alpha/bank/", **ZH).content.decode()  # type: ignore[arg-type]
    assert "<td>提取</td>" in html and ">stage1<" not in html  # the job's kind
    assert ">排队中</span>" in html and ">pending<" not in html  # its status
    assert '<span class="ok">正常</span>' in html and ">ok<" not in html  # the LLM's state


def test_session_and_extraction_states_are_named_in_chinese(
    alice: User, alice_client: APIClient, project: Project, web_client: Callable[[User], Client]
) -> None:
    sid = push_session(alice_client, "s-1", end=True)
    client = web_client(alice)
    listing = client.get("/p/alpha/sessions/", **ZH).content.decode()  # type: ignore[arg-type]
    assert ">已结束</span>" in listing and ">ended<" not in listing  # badge and filter
    page = client.get(f"/p/alpha/sessions/{sid}/", **ZH).content.decode()  # type: ignore[arg-type]
    assert ">已结束</span>" in page


def test_import_refusals_speak_chinese(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    broken_zip = zip_bytes({".mewcode/memories.md": "### 项目知识\n- fine\n".encode()})[:40]
    cases = [
        ("mewcode", "memories.md", b"### \xff\xfe\n", "不是有效的 UTF-8（位于第 4 字节）"),
        ("mewcode", "ws.zip", broken_zip, "不是可读取的 zip 文件"),
        ("claude_code", "a.md", b"no frontmatter\n", "frontmatter 开头，包含 name、description"),
    ]
    for fmt, name, data, message in cases:
        response = client.post(
            "/p/alpha/import-export/import/",
            {"format": fmt, "upload": SimpleUploadedFile(name, data), "action": "import"},
            **ZH,  # type: ignore[arg-type]
        )
        assert response.status_code == 400, name
        html = response.content.decode()
        assert "没有导入任何内容。" in html and message in html, html
        assert f"<code>{name}" in html  # the file named, as in English
        assert "not valid UTF-8" not in html and "Not a readable" not in html


def test_transcript_refusals_speak_chinese(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    meta = b'{"id": "s1", "created_at": "yesterday", "last_active": "2026-03-14T10:00:00"}'
    upload = zip_bytes(
        {
            ".mewcode/sessions/s1.jsonl": b'{"type": "user", "content": "hi"}\n{bad json\n',
            ".mewcode/sessions/s1.meta": meta,
        }
    )
    response = web_client(alice).post(
        "/p/alpha/import-export/import/",
        {"format": "mewcode", "upload": SimpleUploadedFile("ws.zip", upload), "action": "import"},
        **ZH,  # type: ignore[arg-type]
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "meta：&#x27;created_at&#x27; &#x27;yesterday&#x27; 不是 ISO 8601 时间戳" in html, html
    assert "not an ISO 8601" not in html


def test_an_import_a_member_may_not_make_says_why_in_chinese(
    bob: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    upload = SimpleUploadedFile("cc.zip", zip_bytes({"CLAUDE.md": b"# Rules\n"}))
    response = web_client(bob).post(
        "/p/alpha/import-export/import/",
        {"format": "claude_code", "upload": upload, "action": "import"},
        **ZH,  # type: ignore[arg-type]
    )
    assert response.status_code == 403
    html = response.content.decode()
    assert "此次上传包含项目指令文件，需要维护者或更高的角色；你是成员。" in html, html
