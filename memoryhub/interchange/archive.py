"""Reading and writing the on-disk trees that every format lives in: a directory, a zip or tar
of one, or a single file.

Reading is defensive (the archive comes from the network): members are extracted one by one
into a private temporary directory, and an archive is refused as a whole — before anything is
imported — when a member has an absolute path, a `..` part, a NUL, a backslash or a drive
letter (zip-slip), when it is a symlink, hard link or device, or when the members add up to
more than the import limit (SESSION_IMPORT_MAX_BYTES) or MAX_MEMBERS files. Timestamps are kept:
tar's mtime, and zip's extended-timestamp field (UTC seconds) when present, else its DOS time.

Writing produces byte-stable archives for a given tree (sorted members, fixed modes).
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import shutil
import stat
import struct
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from django.conf import settings
from django.utils.translation import gettext

from memoryhub.core.exceptions import PayloadTooLarge
from memoryhub.interchange.bundle import FormatError, ImportFailed, problem

MAX_MEMBERS = 20_000
_DRIVE = re.compile(r"^[A-Za-z]:")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_ZIP_UT_EXTRA = 0x5455  # "extended timestamp": UTC seconds, which DOS times lack
ARCHIVE_KINDS = ("zip", "tar")
# What reading a damaged, encrypted or oddly compressed zip member raises.
_ZIP_READ_ERRORS = (zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError, EOFError)


class InvalidArchive(ImportFailed):
    """The upload cannot be read safely or is not an archive of the expected shape: refused
    whole, as one problem naming the member (or the upload) at fault."""

    def __init__(self, message: str, *, file: str = "") -> None:
        super().__init__([problem(file, None, message)])


def too_large(file: str, *, unpacked: bool = False) -> PayloadTooLarge:
    """The 413 of an upload (or what it unpacks to) past the import limit, with its problem in
    the refusals' shape."""
    limit = _limit()
    if unpacked:
        message = gettext("The unpacked upload exceeds %(limit)s bytes.") % {"limit": limit}
    else:
        message = gettext("The upload exceeds %(limit)s bytes.") % {"limit": limit}
    return PayloadTooLarge(
        message,
        details={"limit_bytes": limit, "errors": [problem(file, None, message)]},
    )


def _limit() -> int:
    return int(settings.SESSION_IMPORT_MAX_BYTES)


def check_member_name(name: str) -> str:
    """The member's path, normalised; InvalidArchive when it could escape the tree."""
    reason = ""
    if not name or "\x00" in name:
        reason = gettext("the archive member has an empty name or a NUL character")
    elif "\\" in name:
        reason = gettext("the archive member has a backslash")
    elif name.startswith("/") or _DRIVE.match(name):
        reason = gettext("the archive member has an absolute path")
    elif ".." in name.split("/"):
        reason = gettext("the archive member has a '..' part")
    if reason:
        raise InvalidArchive(reason, file=name)
    normalized = posixpath.normpath(name)
    return "" if normalized == "." else normalized


@dataclass(frozen=True)
class Member:
    """One regular file of a tree: where it is on local disk and its modification time."""

    path: str  # relative, '/'-separated
    fs_path: Path
    mtime: datetime | None

    def read_bytes(self) -> bytes:
        return self.fs_path.read_bytes()

    def read_text(self) -> str:
        """UTF-8 (a BOM is dropped); a FormatError naming the file otherwise."""
        try:
            return self.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            message = gettext("not valid UTF-8 (at byte %(byte)s)") % {"byte": exc.start}
            raise FormatError(self.path, None, message) from None

    def open(self) -> IO[bytes]:
        return self.fs_path.open("rb")


class Tree:
    """The regular files of an unpacked upload or a directory, by relative path."""

    def __init__(self, members: Mapping[str, Member]) -> None:
        self.members = dict(members)

    def __contains__(self, path: str) -> bool:
        return path in self.members

    def get(self, path: str) -> Member | None:
        return self.members.get(path)

    def paths(self) -> list[str]:
        return sorted(self.members)

    def under(self, directory: str) -> list[Member]:
        """Members below `directory` ("" = all), sorted by path."""
        prefix = directory.rstrip("/") + "/" if directory else ""
        return [self.members[p] for p in self.paths() if p.startswith(prefix)]

    def rooted(self, markers: tuple[str, ...]) -> Tree:
        """This tree, or its single top-level directory's contents when none of `markers` is at
        the root but they are inside that directory (a zip of the folder itself)."""
        if any(self._has(m) for m in markers):
            return self
        tops = {p.split("/", 1)[0] for p in self.members if "/" in p}
        if len(tops) != 1 or any("/" not in p for p in self.members):
            return self
        top = tops.pop() + "/"
        inner = Tree(
            {
                p[len(top) :]: Member(p[len(top) :], m.fs_path, m.mtime)
                for p, m in self.members.items()
            }
        )
        return inner if any(inner._has(m) for m in markers) else self

    def _has(self, marker: str) -> bool:
        if marker.endswith("/"):
            return any(p.startswith(marker) for p in self.members)
        return marker in self.members


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, tz=UTC)


def sniff(head: bytes) -> str:
    """'zip', 'tar' (plain, gz, bz2, xz), 'sqlite' or 'file' from an upload's first bytes."""
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if head.startswith(_SQLITE_MAGIC):
        return "sqlite"
    if head.startswith((b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")):
        return "tar"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    return "file"


class Unpacked:
    """An upload unpacked into a private temporary directory; use as a context manager."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="mh-interchange-"))
        self.members: dict[str, Member] = {}
        self._total = 0

    def __enter__(self) -> Unpacked:
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    @property
    def tree(self) -> Tree:
        return Tree(self.members)

    def _add(self, name: str, source: IO[bytes], mtime: datetime | None) -> None:
        path = check_member_name(name)
        if not path:
            return
        if path in self.members:
            raise InvalidArchive(gettext("the archive member appears twice"), file=path)
        if len(self.members) >= MAX_MEMBERS:
            raise InvalidArchive(
                gettext("the archive has more than %(max)s files") % {"max": MAX_MEMBERS}
            )
        target = self._dir / "files" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as out:
            while chunk := source.read(1 << 20):
                self._total += len(chunk)
                if self._total > _limit():
                    raise too_large(path, unpacked=True)
                out.write(chunk)
        self.members[path] = Member(path, target, mtime)

    def add_file(self, name: str, source: IO[bytes], mtime: datetime | None) -> None:
        self._add(name, source, mtime)

    def unzip(self, file: IO[bytes], name: str = "") -> None:
        """`name`: the upload's, for the problems of the archive as a whole."""
        try:
            archive = zipfile.ZipFile(file)
        except zipfile.BadZipFile as exc:
            message = gettext("not a readable zip file (%(error)s)") % {"error": exc}
            raise InvalidArchive(message, file=name) from None
        with archive:
            infos = archive.infolist()
            _check_count(len(infos), name)
            # Refused at once when the sizes it declares are too large (a zip bomb says so);
            # _add still counts what is really unpacked, for archives that lie.
            declared = 0
            for info in infos:
                declared += info.file_size
                if declared > _limit():
                    raise too_large(info.filename, unpacked=True)
            for info in infos:  # refuse the whole archive before unpacking any of it
                check_member_name(info.filename.rstrip("/") or info.filename)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise InvalidArchive(
                        gettext("the archive member is a symbolic link; links are not accepted"),
                        file=info.filename,
                    )
            for info in infos:
                if info.is_dir():
                    continue
                try:
                    with archive.open(info) as source:
                        self._add(info.filename, source, _zip_mtime(info))
                except _ZIP_READ_ERRORS as exc:
                    message = gettext("cannot read the member from the zip (%(error)s)")
                    raise InvalidArchive(message % {"error": exc}, file=info.filename) from None

    def untar(self, file: IO[bytes], name: str = "") -> None:
        try:
            archive = tarfile.open(fileobj=file, mode="r:*")  # noqa: SIM115 - `with` below
        except tarfile.TarError as exc:
            message = gettext("not a readable tar file (%(error)s)") % {"error": exc}
            raise InvalidArchive(message, file=name) from None
        with archive:
            try:
                members = archive.getmembers()
            except (tarfile.TarError, EOFError, OSError) as exc:
                message = gettext("the tar file is damaged (%(error)s)") % {"error": exc}
                raise InvalidArchive(message, file=name) from None
            _check_count(len(members), name)
            for info in members:
                check_member_name(info.name.rstrip("/") or info.name)
                if not (info.isfile() or info.isdir()):
                    if info.issym():
                        message = gettext(
                            "the archive member is a symbolic link; only regular files and "
                            "directories are accepted"
                        )
                    else:
                        message = gettext(
                            "the archive member is a link or special file; only regular files "
                            "and directories are accepted"
                        )
                    raise InvalidArchive(message, file=info.name)
            for info in members:
                if not info.isfile():
                    continue
                source = archive.extractfile(info)
                if source is None:  # pragma: no cover - isfile() members always have data
                    continue
                with source:
                    self._add(info.name, source, _utc(info.mtime))


def _check_count(count: int, name: str) -> None:
    if count > MAX_MEMBERS:
        message = gettext("the archive has %(count)s entries; at most %(max)s are read")
        raise InvalidArchive(message % {"count": count, "max": MAX_MEMBERS}, file=name)


def _zip_mtime(info: zipfile.ZipInfo) -> datetime:
    """The UTC mtime from the extended-timestamp extra field, else the DOS time (as UTC)."""
    extra = info.extra
    position = 0
    while position + 4 <= len(extra):
        tag, size = struct.unpack("<HH", extra[position : position + 4])
        body = extra[position + 4 : position + 4 + size]
        if tag == _ZIP_UT_EXTRA and len(body) >= 5 and body[0] & 1:
            return _utc(struct.unpack("<i", body[1:5])[0])
        position += 4 + size
    return datetime(*info.date_time, tzinfo=UTC)


def unpack_upload(file: IO[bytes], *, filename: str, mtime: datetime | None = None) -> Unpacked:
    """Unpack an uploaded zip or tar, or take a single file as a one-file tree named by its
    basename (dated `mtime`, when the sender knows it). The caller owns the result (a context
    manager that deletes the files)."""
    head = file.read(512)
    file.seek(0)
    if not head:
        raise InvalidArchive(gettext("the upload is empty"), file=filename)
    kind = sniff(head)
    unpacked = Unpacked()
    try:
        if kind == "zip":
            unpacked.unzip(file, filename)
        elif kind == "tar":
            unpacked.untar(file, filename)
        else:
            base = posixpath.basename(filename.replace("\\", "/")) or (
                "memory.db" if kind == "sqlite" else "upload"
            )
            unpacked.add_file(base, file, mtime)
    except BaseException:
        unpacked.__exit__()
        raise
    return unpacked


def read_directory(root: Path) -> Tree:
    """The regular files below `root` (for the management command); symlinks are refused like
    an archive's."""
    members: dict[str, Member] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            full = Path(dirpath) / name
            if full.is_symlink():
                rel = full.relative_to(root).as_posix()
                message = gettext("a symbolic link; links are not accepted")
                raise InvalidArchive(message, file=rel)
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            members[rel] = Member(rel, full, _utc(full.stat().st_mtime))
    return Tree(members)


# --- writing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutFile:
    content: bytes
    mtime: datetime | None = None


def _epoch(moment: datetime | None) -> int:
    return int(moment.timestamp()) if moment is not None else 0


def _sorted(files: Mapping[str, OutFile]) -> Iterator[tuple[str, OutFile]]:
    for path in sorted(files):
        yield check_member_name(path), files[path]


def write_zip(files: Mapping[str, OutFile], out: IO[bytes]) -> None:
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, file in _sorted(files):
            seconds = max(_epoch(file.mtime), 315532800)  # DOS time starts in 1980
            info = zipfile.ZipInfo(path, date_time=_utc(seconds).timetuple()[:6])
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            info.extra = struct.pack("<HHBi", _ZIP_UT_EXTRA, 5, 1, seconds)
            archive.writestr(info, file.content)


def write_tar(files: Mapping[str, OutFile], out: IO[bytes]) -> None:
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        for path, file in _sorted(files):
            info = tarfile.TarInfo(path)
            info.size = len(file.content)
            info.mtime = _epoch(file.mtime)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(file.content))


def write_directory(files: Mapping[str, OutFile], root: Path) -> None:
    for path, file in _sorted(files):
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(file.content)
        if file.mtime is not None:
            os.utime(target, (file.mtime.timestamp(), file.mtime.timestamp()))


def unpack_files(files: Sequence[tuple[IO[bytes], str, datetime | None]]) -> Unpacked:
    """Several plain files chosen together (a browser's multiple-file pick) as a one-level
    tree named by their basenames, dated by the times the browser reported; one file is read
    as unpack_upload reads it (so it may be an archive)."""
    if len(files) == 1:
        source, name, mtime = files[0]
        return unpack_upload(source, filename=name, mtime=mtime)
    unpacked = Unpacked()
    try:
        for source, name, mtime in files:
            head = source.read(512)
            source.seek(0)
            if sniff(head) in ("zip", "tar"):
                raise InvalidArchive(
                    gettext("an archive: upload one archive on its own, or plain files"),
                    file=name,
                )
            unpacked.add_file(posixpath.basename(name.replace("\\", "/")), source, mtime)
    except BaseException:
        unpacked.__exit__()
        raise
    return unpacked
