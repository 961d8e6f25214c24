"""The admin pages in Simplified Chinese (Accept-Language), with what agents wrote untouched."""

from __future__ import annotations

from collections.abc import Callable

from django.test import Client
from rest_framework.test import APIClient

from accounts.models import User
from memoryhub.pipeline import jobs
from memoryhub.pipeline.models import Job
from projects.models import Project
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
