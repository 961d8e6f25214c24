"""The import / export page: export links for every role, the import form for members, preview
(a dry run that writes nothing), the result summary, refusals with their file and line, the
maintainer-only parts, several plain files with the times the browser reported, Chinese."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from accounts.models import User
from memoryhub.memories.models import Memory
from memoryhub.recall.models import InstructionFile
from projects.models import Project, Role
from tests.interchange.helpers import FIXTURE_MTIME, tree_files, zip_bytes
from tests.web.admin.helpers import HOSTILE, assert_escaped

PAGE = "/p/alpha/import-export/"
IMPORT = PAGE + "import/"


def _zip(name: str = "claude_code", files: dict[str, bytes] | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(f"{name}.zip", zip_bytes(files or tree_files(name)))


def test_every_role_exports_and_members_import(
    project: Project, role_user: Callable[[Role], User], web_client: Callable[[User], Client]
) -> None:
    viewer = web_client(role_user(Role.VIEWER)).get(PAGE).content.decode()
    member = web_client(role_user(Role.MEMBER)).get(PAGE).content.decode()
    for html in (viewer, member):
        for fmt in ("mewcode", "claude_code", "meow", "omp"):
            assert f"/api/v1/projects/alpha/interchange/{fmt}/export/?archive=zip" in html
            assert f"/api/v1/projects/alpha/interchange/{fmt}/export/?archive=tar" in html
    assert 'name="upload"' not in viewer and "Importing needs the member role." in viewer
    assert 'name="upload"' in member and 'value="preview"' in member


def test_the_export_link_downloads_with_the_signed_in_session(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    client.post(IMPORT, {"format": "claude_code", "upload": _zip(), "action": "import"})
    response = client.get("/api/v1/projects/alpha/interchange/claude_code/export/?archive=zip")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    content = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    assert b"memory/feedback_testing.md" in content


def test_preview_writes_nothing_and_import_writes_it(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    preview = client.post(IMPORT, {"format": "claude_code", "upload": _zip(), "action": "preview"})
    assert preview.status_code == 200
    html = preview.content.decode()
    assert "Preview: nothing was written yet" in html
    assert '<tr data-part="memories">' in html and '<td class="created">4</td>' in html
    assert not Memory.objects.filter(project=project).exists()

    done = client.post(
        IMPORT,
        {"format": "claude_code", "upload": _zip(), "action": "import"},
        headers={"HX-Request": "true"},
    )
    assert done.status_code == 200
    fragment = done.content.decode()
    assert fragment.lstrip().startswith('<div id="import-result"')  # only the result, for htmx
    assert "Imported" in fragment and '<td class="created">4</td>' in fragment
    assert Memory.objects.filter(project=project, created_via="import").count() == 4

    again = client.post(IMPORT, {"format": "claude_code", "upload": _zip(), "action": "import"})
    assert '<td class="unchanged">4</td>' in again.content.decode()
    assert Memory.objects.filter(project=project).count() == 4


def test_a_broken_file_is_refused_with_its_file_and_line(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    files = tree_files("claude_code")
    files["memory/broken.md"] = b"---\nname: x\ntype: nonsense\n---\n\n" + HOSTILE.encode()
    response = web_client(alice).post(
        IMPORT, {"format": "claude_code", "upload": _zip(files=files), "action": "import"}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was imported." in html and "memory/broken.md:3" in html
    assert not Memory.objects.filter(project=project).exists()


def test_an_unsafe_or_wrong_upload_is_a_clear_refusal(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    nothing = client.post(
        IMPORT,
        {"format": "meow", "upload": SimpleUploadedFile("notes.txt", b"hello"), "action": "import"},
    )
    assert nothing.status_code == 400
    assert "no memory.db in the upload" in nothing.content.decode()
    missing = client.post(IMPORT, {"format": "meow", "action": "import"})
    assert missing.status_code == 400 and "This field is required." in missing.content.decode()
    unknown = client.post(IMPORT, {"format": "dos", "upload": _zip(), "action": "import"})
    assert unknown.status_code == 400 and "Select a valid choice" in unknown.content.decode()


def test_a_member_cannot_import_project_instructions(
    project: Project, role_user: Callable[[Role], User], web_client: Callable[[User], Client]
) -> None:
    client = web_client(role_user(Role.MEMBER))
    response = client.post(IMPORT, {"format": "claude_code", "upload": _zip(), "action": "import"})
    assert response.status_code == 403
    assert "project instruction files" in response.content.decode()
    assert not InstructionFile.objects.filter(project=project).exists()
    only_memories = {k: v for k, v in tree_files("claude_code").items() if k.startswith("memory/")}
    ok = client.post(
        IMPORT, {"format": "claude_code", "upload": _zip(files=only_memories), "action": "import"}
    )
    assert ok.status_code == 200 and Memory.objects.filter(project=project).count() == 4


def test_several_plain_files_keep_the_times_the_browser_reported(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    files = tree_files("claude_code")
    chosen = [
        SimpleUploadedFile(path.rsplit("/", 1)[-1], data)
        for path, data in files.items()
        if path.startswith("memory/")
    ]
    millis = int(FIXTURE_MTIME.timestamp() * 1000)
    mtimes = json.dumps({f.name: millis for f in chosen})
    response = web_client(alice).post(
        IMPORT, {"format": "claude_code", "upload": chosen, "mtimes": mtimes, "action": "import"}
    )
    assert response.status_code == 200, response.content
    memories = Memory.objects.filter(project=project)
    assert memories.count() == 4
    assert {m.updated_at for m in memories} == {FIXTURE_MTIME}
    zipped_with_plain = web_client(alice).post(
        IMPORT,
        {
            "format": "claude_code",
            "upload": [_zip(), SimpleUploadedFile("MEMORY.md", b"# Memory\n")],
            "action": "import",
        },
    )
    assert zipped_with_plain.status_code == 400
    assert "upload one archive on its own" in zipped_with_plain.content.decode()


def test_the_page_speaks_chinese(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    client = web_client(alice)
    html = client.get(PAGE, headers={"Accept-Language": "zh-CN"}).content.decode()
    assert "导入 / 导出" in html and "预览" in html
    result = client.post(
        IMPORT,
        {"format": "claude_code", "upload": _zip(), "action": "preview"},
        headers={"Accept-Language": "zh-CN"},
    ).content.decode()
    assert "预览：尚未写入任何内容" in result


def test_hostile_text_in_a_refusal_is_escaped(
    alice: User, project: Project, web_client: Callable[[User], Client]
) -> None:
    files = {"memory/x.md": b"---\nname: n\ntype: " + HOSTILE.encode() + b"\n---\nbody\n"}
    html = (
        web_client(alice)
        .post(IMPORT, {"format": "claude_code", "upload": _zip(files=files), "action": "import"})
        .content.decode()
    )
    assert "Nothing was imported." in html and "memory/x.md:3" in html
    assert_escaped(html)  # the refusal quotes the hostile type, escaped
