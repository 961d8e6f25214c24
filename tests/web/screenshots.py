"""`make screenshots`: the main pages in English and Chinese, light and dark, rendered by
Chromium into docs/screenshots/. Not part of `make test` (the file name does not match
test_*.py); run by path. The bank is the demo project after its sessions were extracted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import NoReverseMatch, reverse

from accounts.models import User
from memoryhub.memories.models import Memory
from memoryhub.pipeline import services as pipeline_services
from projects.models import Project
from tests.interchange.helpers import tree_files, zip_bytes
from tests.web.conftest import PASSWORD, BrowserPage

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def _pages(project: Project) -> list[tuple[str, str]]:
    stale = Memory.objects.filter(project=project, status="stale").first()
    assert stale is not None
    slug = {"slug": project.slug}
    pages = [
        ("projects", reverse("web:home")),
        ("dashboard", reverse("web:project", kwargs=slug)),
        ("review", reverse("web:review", kwargs=slug)),
        ("memories", reverse("web:memories", kwargs=slug) + "?status=all"),
        ("search", reverse("web:memories", kwargs=slug) + "?q=deploy+release"),
        ("memory", reverse("web:memory", kwargs={**slug, "memory_id": stale.public_id})),
    ]
    # The second half of the dashboard, where it exists.
    for name, url_name, kwargs in (
        ("sessions", "web:sessions", slug),
        ("session", "web:session", {**slug, "ref": "demo-open-session"}),
        ("recall-files", "web:recall_files", slug),
        ("instructions", "web:instructions", slug),
        ("preview", "web:preview", slug),
        ("bank", "web:bank", slug),
        ("members", "web:members", slug),
        ("import-export", "web:interchange", slug),
        ("settings", "web:settings", slug),
    ):
        try:
            url = reverse(url_name, kwargs=kwargs)
            if name == "preview":  # with a prompt, so that the scores show
                url += "?profile=mewcode&user=demo&prompt=how+do+we+deploy+a+release"
            pages.append((name, url))
        except NoReverseMatch:
            continue
    return pages


def _preview_an_upload(browser: BrowserPage, tmp_path: Path) -> None:
    upload = tmp_path / "claude-code-memory.zip"
    upload.write_bytes(zip_bytes(tree_files("claude_code")))
    browser.page.locator("#id_format").select_option("claude_code")
    browser.page.locator("input[type=file][name=upload]").set_input_files(str(upload))
    browser.page.locator("button[value=preview]").click()
    browser.page.locator("#import-result table").wait_for()
    browser.page.locator("#import-result").scroll_into_view_if_needed()


@pytest.mark.browser
def test_render_screenshots(
    transactional_db: None, new_browser_page: Callable[..., BrowserPage], tmp_path: Path
) -> None:
    call_command("demo_setup")
    project = Project.objects.get(slug="demo")
    user = User.objects.get(username="demo")
    user.set_password(PASSWORD)
    user.save(update_fields=["password"])
    for job_id in pipeline_services.stage1_enqueue_due(project=project):
        pipeline_services.stage1_run(job_id=job_id)
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    for language, locale in (("en", "en-US"), ("zh", "zh-CN")):
        for scheme in ("light", "dark"):
            browser = new_browser_page(
                locale=locale, color_scheme=scheme, viewport={"width": 1280, "height": 860}
            )
            browser.goto(reverse("web:login"))
            browser.page.locator("#id_username").fill("demo")
            browser.page.locator("#id_password").fill(PASSWORD)
            browser.page.locator("form.form button[type=submit]").click()
            browser.page.wait_for_url(browser.base_url + reverse("web:home"))
            for name, url in _pages(project):
                browser.goto(url)
                browser.page.wait_for_load_state("load")
                if name == "import-export":  # with a preview's summary, as after choosing files
                    _preview_an_upload(browser, tmp_path)
                path = OUT / f"{name}-{language}-{scheme}.png"
                browser.page.screenshot(path=str(path))
                written.append(path)
    assert all(path.stat().st_size > 10_000 for path in written)
