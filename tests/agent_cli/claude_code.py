"""Writing a transcript the way Claude Code does (~/.claude/projects/<slug>/<session>.jsonl):
one event per line with the envelope of tests/sessions/fixtures/claude_code_session.jsonl, an
assistant message streamed as one line per content block, tool results in user lines, and a
compaction as a system compact_boundary line plus an isCompactSummary user line."""

from __future__ import annotations

import itertools
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


class ClaudeCodeTranscript:
    def __init__(self, path: Path, session_id: str, cwd: str = "/home/dev/src/inventory-api"):
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        self.parent: str | None = None
        self._clock = itertools.count()
        self._ids = itertools.count(1)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()

    def _envelope(self, kind: str, **fields: Any) -> dict[str, Any]:
        line_uuid = str(uuid.uuid4())
        line = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.37",
            "gitBranch": "main",
            "type": kind,
            **fields,
            "uuid": line_uuid,
            "timestamp": (START + timedelta(seconds=next(self._clock))).isoformat(),
        }
        self.parent = line_uuid
        return line

    def write(self, *lines: dict[str, Any], newline: bool = True) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            for i, line in enumerate(lines):
                end = "\n" if newline or i < len(lines) - 1 else ""
                handle.write(json.dumps(line, ensure_ascii=False) + end)

    def line_count(self) -> int:
        return len(self.path.read_bytes().splitlines())

    # -- events --

    def user(self, text: str) -> None:
        self.write(
            self._envelope(
                "user", message={"role": "user", "content": text}, permissionMode="default"
            )
        )

    def assistant(self, *blocks: dict[str, Any]) -> None:
        """One message, one line per content block (Claude Code streams them so)."""
        message_id = f"msg_{next(self._ids):04d}"
        self.write(
            *(
                self._envelope(
                    "assistant",
                    message={
                        "model": "claude-sonnet-4-5-20250929",
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "content": [block],
                        "stop_reason": None,
                        "usage": {"input_tokens": 4, "output_tokens": 9},
                    },
                )
                for block in blocks
            )
        )

    def say(self, text: str) -> None:
        self.assistant({"type": "text", "text": text})

    def bash(self, command: str, output: str, *, error: bool = False) -> None:
        """An assistant turn that runs a shell command, and its result."""
        tool_id = f"toolu_{next(self._ids):04d}"
        self.assistant(
            {"type": "text", "text": f"Running `{command}`."},
            {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}},
        )
        self.write(
            self._envelope(
                "user",
                message={
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": tool_id,
                            "type": "tool_result",
                            "content": output,
                            "is_error": error,
                        }
                    ],
                },
            )
        )

    def snapshot(self) -> None:
        """A bookkeeping line the importer skips."""
        self.write(
            {
                "type": "file-history-snapshot",
                "messageId": str(uuid.uuid4()),
                "snapshot": {"trackedFileBackups": {}, "timestamp": START.isoformat()},
                "isSnapshotUpdate": False,
            }
        )

    def compacted(self, summary: str, trigger: str = "auto") -> None:
        """What Claude Code appends when it has compacted."""
        logical_parent = self.parent
        self.parent = None
        self.write(
            self._envelope(
                "system",
                subtype="compact_boundary",
                content="Conversation compacted",
                isMeta=False,
                level="info",
                logicalParentUuid=logical_parent,
                compactMetadata={"trigger": trigger, "preTokens": 48210},
            )
        )
        self.write(
            self._envelope(
                "user",
                message={
                    "role": "user",
                    "content": "This session continues an earlier conversation that was "
                    f"compacted. Summary:\n{summary}",
                },
                isCompactSummary=True,
                isVisibleInTranscriptOnly=True,
            )
        )
