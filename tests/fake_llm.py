"""A fake LLM server for tests: real HTTP on 127.0.0.1, scripted replies.

Speaks enough of OpenAI's Chat Completions (POST /v1/chat/completions) and Anthropic's
Messages API (POST /v1/messages) for the official SDKs. Each request takes the next scripted
reply from one queue, whatever its path:

    fake_llm.reply('{"ok": true}', tokens_in=120, tokens_out=8)
    fake_llm.fail(429)            # Retry-After: 0 (+ retry-after-ms so the SDK retries quickly)
    fake_llm.fail(500, times=5)
    fake_llm.delay(2, "late")     # answers after 2 s (longer than a short client timeout)
    fake_llm.raw(200, "<html>", content_type="text/html")
    fake_llm.configure(settings)  # point the LLM_* settings here (pytest-django `settings`)
    fake_llm.requests[0].body["model"], .messages, .headers["authorization"]

POST /v1/embeddings needs no script: it answers deterministic vectors (fake_embedding: words
hashed into EMBEDDING_DIMS buckets, so texts sharing words have a higher cosine), unless
`fake_llm.fail_embeddings(503)` queued a failure for it.

With the queue empty it answers 500 "fake_llm: no scripted reply …" and tells the SDK not to
retry. Use it through the `fake_llm` fixture (register with pytest_plugins = ["tests.fake_llm"]).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

DEFAULT_MODEL = "fake-default"
EMBEDDING_DIMS = 64
API_KEY = "sk-fake-test-key"


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any

    @property
    def model(self) -> str:
        return str(self.body["model"])

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body["messages"])


@dataclass(frozen=True)
class _Script:
    status: int = 200
    text: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    delay: float = 0.0
    raw_body: str | None = None
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    gate: threading.Event | None = None  # answer only once it is set (see hold)


class FakeLlm:
    def __init__(self) -> None:
        self.requests: list[Received] = []
        self._queue: deque[_Script] = deque()
        self._embedding_failures: deque[_Script] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits for it, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def root(self) -> str:
        """http://127.0.0.1:PORT — the Anthropic SDK's base URL (it adds /v1/messages)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def url(self) -> str:
        """http://127.0.0.1:PORT/v1 — the OpenAI SDK's base URL."""
        return self.root + "/v1"

    # --- scripting ---------------------------------------------------------------------------
    def reply(self, text: str, *, tokens_in: int = 100, tokens_out: int = 10) -> None:
        self._push(_Script(text=text, tokens_in=tokens_in, tokens_out=tokens_out))

    def fail(self, status: int, *, times: int = 1, message: str = "scripted failure") -> None:
        # The SDKs honour retry-after-ms over Retry-After and ignore a zero delay, so both are
        # sent: the retry happens after 10 ms instead of the SDK's 0.5-8 s backoff.
        headers = {"Retry-After": "0", "retry-after-ms": "10"}
        body = json.dumps({"error": {"message": message, "type": "fake_error"}})
        for _ in range(times):
            self._push(_Script(status=status, raw_body=body, headers=headers))

    def fail_embeddings(self, status: int, *, times: int = 1) -> None:
        """The next `times` POST /v1/embeddings answer `status` (the SDK does not retry them)."""
        body = json.dumps({"error": {"message": "scripted failure", "type": "fake_error"}})
        with self._lock:
            for _ in range(times):
                self._embedding_failures.append(
                    _Script(status=status, raw_body=body, headers={"x-should-retry": "false"})
                )

    def delay(
        self, seconds: float, text: str, *, tokens_in: int = 100, tokens_out: int = 10
    ) -> None:
        self._push(_Script(text=text, tokens_in=tokens_in, tokens_out=tokens_out, delay=seconds))

    def hold(self, text: str, *, tokens_in: int = 100, tokens_out: int = 10) -> threading.Event:
        """Script a reply that waits until the returned event is set: the test sees the call in
        flight (the job mid-run) and decides when it ends, instead of guessing a delay."""
        gate = threading.Event()
        self._push(_Script(text=text, tokens_in=tokens_in, tokens_out=tokens_out, gate=gate))
        return gate

    def raw(self, status: int, body: str, *, content_type: str = "application/json") -> None:
        self._push(_Script(status=status, raw_body=body, content_type=content_type))

    def _push(self, script: _Script) -> None:
        with self._lock:
            self._queue.append(script)

    def _pop(self) -> _Script | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def configure(
        self,
        settings: Any,
        provider: str = "openai",
        *,
        model: str = DEFAULT_MODEL,
        smol_model: str = "",
        api_key: str = API_KEY,
        timeout: float = 5,
        max_retries: int = 2,
        daily_token_budget: int = 0,
    ) -> None:
        """Point the LLM settings at this server (`settings`: pytest-django's fixture)."""
        settings.LLM_PROVIDER = provider
        settings.LLM_BASE_URL = self.root if provider == "anthropic" else self.url
        settings.LLM_API_KEY = api_key
        settings.LLM_MODEL = model
        settings.LLM_SMOL_MODEL = smol_model
        settings.LLM_TIMEOUT_SECONDS = timeout
        settings.LLM_MAX_RETRIES = max_retries
        settings.LLM_DAILY_TOKEN_BUDGET = daily_token_budget
        settings.LLM_ALLOWED_BASE_URLS = []

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers still sleeping in a delay
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _ended_while_waiting(self, script: _Script) -> bool:
        """Wait out the script's delay or gate; True when the test ended meanwhile."""
        if script.delay and self._stopping.wait(script.delay):
            return True
        while script.gate is not None and not script.gate.wait(0.05):
            if self._stopping.is_set():
                return True
        return False

    # --- serving -----------------------------------------------------------------------------
    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length).decode() if length else ""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw
        headers = {name.lower(): value for name, value in handler.headers.items()}
        self.requests.append(Received(handler.command, handler.path, headers, body))

        path = handler.path.split("?")[0]
        if path == "/v1/embeddings":
            self._embeddings(handler, body)
            return
        script = self._pop() if path in {"/v1/chat/completions", "/v1/messages"} else None
        if script is None:
            message = f"fake_llm: no scripted reply for {handler.command} {path}"
            error = json.dumps({"error": {"message": message, "type": "fake_error"}})
            _send(handler, 500, error, headers={"x-should-retry": "false"})
        elif self._ended_while_waiting(script):
            pass  # the test is over: no answer
        elif script.raw_body is not None:
            _send(handler, script.status, script.raw_body, script.content_type, script.headers)
        else:
            model = body.get("model", "") if isinstance(body, dict) else ""
            payload = (
                _anthropic_message(model, script)
                if path == "/v1/messages"
                else _chat_completion(model, script)
            )
            _send(handler, script.status, json.dumps(payload), headers=script.headers)

    def _embeddings(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        with self._lock:
            failure = self._embedding_failures.popleft() if self._embedding_failures else None
        if failure is not None:
            _send(handler, failure.status, failure.raw_body or "", headers=failure.headers)
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        payload = {
            "object": "list",
            "model": body.get("model", ""),
            "data": [
                {"object": "embedding", "index": i, "embedding": fake_embedding(text)}
                for i, text in enumerate(texts)
            ],
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
        }
        _send(handler, 200, json.dumps(payload))


def fake_embedding(text: str) -> list[float]:
    """Deterministic and unnormalised: each lower-cased word adds 1 to the bucket its sha256
    picks, so the cosine of two texts grows with the words they share."""
    vector = [0.0] * EMBEDDING_DIMS
    for word in re.findall(r"\w+", text.lower()):
        vector[hashlib.sha256(word.encode()).digest()[0] % EMBEDDING_DIMS] += 1.0
    return vector


def _chat_completion(model: str, script: _Script) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": script.text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": script.tokens_in,
            "completion_tokens": script.tokens_out,
            "total_tokens": script.tokens_in + script.tokens_out,
        },
    }


def _anthropic_message(model: str, script: _Script) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": script.text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": script.tokens_in, "output_tokens": script.tokens_out},
    }


def _send(
    handler: BaseHTTPRequestHandler,
    status: int,
    body: str,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
) -> None:
    data = body.encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client gave up (timeout) before the answer


def _handler_for(fake: FakeLlm) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            fake._answer(self)

        def do_GET(self) -> None:
            fake._answer(self)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler


@pytest.fixture
def fake_llm() -> Iterator[FakeLlm]:
    """A running FakeLlm, stopped after the test. Call .configure(settings) to use it."""
    server = FakeLlm()
    try:
        yield server
    finally:
        server.stop()
