"""Import and export in Chromium against a live server: pick a format, choose a zip, preview
(nothing written), import, see the summary in place (htmx, the file stays chosen), download an
export; the same in Chinese, with several plain files dated by the browser."""

from __future__ import annotations

import io
import os
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from accounts.models import User
from memoryhub.memories.models import Memory
from projects.models import Project
from tests.interchange.helpers import tree_files, zip_bytes
from tests.web.conftest import BrowserPage

pytestmark = pytest.mark.browser


def _page_url() -> str:
    return reverse("web:interchange", kwargs={"slug": "alpha"})


def test_preview_import_and_export_in_the_browser(
    alice: User, project: Project, browser_page: BrowserPage, tmp_path: Path
) -> None:
    upload = tmp_path / "claude.zip"
    upload.write_bytes(zip_bytes(tree_files("claude_code")))
    page = browser_page.page
    browser_page.sign_in("alice")
    browser_page.goto(_page_url())
    page.get_by_label("Format").select_option("claude_code")
    page.get_by_label("Files").set_input_files(str(upload))

    page.get_by_role("button", name="Preview").click()
    result = page.locator("#import-result")
    expect(result).to_contain_text("Preview: nothing was written yet")
    expect(result.locator('tr[data-part="memories"] td.created')).to_have_text("4")
    assert not Memory.objects.filter(project=project).exists()

    page.get_by_role("button", name="Import", exact=True).click()  # the file is still chosen
    expect(result.get_by_role("heading")).to_have_text("Imported")
    expect(result.locator('tr[data-part="memories"] td.created')).to_have_text("4")
    assert Memory.objects.filter(project=project).count() == 4

    page.get_by_role("button", name="Import", exact=True).click()
    expect(result.locator('tr[data-part="memories"] td.unchanged')).to_have_text("4")

    with page.expect_download() as info:
        page.locator('tr[data-format="claude_code"]').get_by_role("link", name=".zip").click()
    download = info.value
    assert download.suggested_filename == "alpha-claude_code.zip"
    with zipfile.ZipFile(io.BytesIO(Path(download.path()).read_bytes())) as archive:
        assert "memory/feedback_testing.md" in archive.namelist()
    assert browser_page.dialogs == [] and browser_page.console_errors == []


def test_in_chinese_several_files_keep_their_times(
    alice: User, project: Project, new_browser_page: object, tmp_path: Path
) -> None:
    browser_page = new_browser_page(locale="zh-CN")  # type: ignore[operator]
    chosen = []
    when = datetime(2025, 11, 2, 8, 0, tzinfo=UTC)
    for path, data in tree_files("claude_code").items():
        if path.startswith("memory/"):
            target = tmp_path / path.split("/", 1)[1]
            target.write_bytes(data)
            os.utime(target, (when.timestamp(), when.timestamp()))
            chosen.append(str(target))
    page = browser_page.page
    browser_page.goto(reverse("web:login"))
    page.locator("#id_username").fill("alice")
    page.locator("#id_password").fill("correct horse battery staple")
    page.locator("form button[type=submit]").last.click()
    page.wait_for_url(browser_page.base_url + reverse("web:home"))
    browser_page.goto(_page_url())
    expect(page.locator("h1")).to_have_text("导入 / 导出")
    page.get_by_label("格式").select_option("claude_code")
    page.get_by_label("文件", exact=True).set_input_files(chosen)
    page.get_by_role("button", name="导入", exact=True).click()
    result = page.locator("#import-result")
    expect(result.get_by_role("heading")).to_have_text("已导入")
    expect(result.locator('tr[data-part="memories"] td.created')).to_have_text("4")
    memories = Memory.objects.filter(project=project)
    assert {m.updated_at for m in memories} == {when}  # the browser's lastModified, not now
    assert browser_page.console_errors == []
