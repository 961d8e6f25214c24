"""Where the client's settings, state and log live, and how they are read.

Settings come from MEMORYHUB_* environment variables, else from the config file that
`memoryhub-agent login` writes ($XDG_CONFIG_HOME/memoryhub/config.json, by default
~/.config/memoryhub/config.json, mode 0600 because it holds the token). The log goes to
$XDG_STATE_HOME/memoryhub/agent.log (by default ~/.local/state/memoryhub/agent.log).
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT = 3.0
DEFAULT_PROFILE = "default"
DEFAULT_CONTEXT_WINDOW = 200_000
# Claude Code caps the context a hook adds at 10,000 characters; 2,500 tokens (× 3.5 chars,
# the server's estimate) keeps the first-turn payload under it.
DEFAULT_BUDGET_TOKENS = 2_500
LOG_MAX_BYTES = 1_000_000  # then agent.log becomes agent.log.1 and a new one starts

# setting name → environment variable
ENV = {
    "url": "MEMORYHUB_URL",
    "token": "MEMORYHUB_TOKEN",
    "project": "MEMORYHUB_PROJECT",
    "timeout": "MEMORYHUB_TIMEOUT",
    "profile": "MEMORYHUB_PROFILE",
    "context_window": "MEMORYHUB_CONTEXT_WINDOW",
    "budget_tokens": "MEMORYHUB_BUDGET_TOKENS",
}


class ConfigError(Exception):
    """The settings are missing or malformed; the message says which and how to fix it."""


def _base(env_name: str, default: str) -> Path:
    value = os.environ.get(env_name, "")
    # The XDG spec says relative paths are invalid and must be ignored.
    return Path(value) if value and os.path.isabs(value) else Path.home() / default


def config_path() -> Path:
    explicit = os.environ.get("MEMORYHUB_CONFIG")
    if explicit:
        return Path(explicit)
    return _base("XDG_CONFIG_HOME", ".config") / "memoryhub" / "config.json"


def state_dir() -> Path:
    return _base("XDG_STATE_HOME", ".local/state") / "memoryhub"


def log_path() -> Path:
    return state_dir() / "agent.log"


@dataclass
class Settings:
    url: str
    token: str
    project: str
    timeout: float = DEFAULT_TIMEOUT
    profile: str = DEFAULT_PROFILE
    context_window: int = DEFAULT_CONTEXT_WINDOW
    budget_tokens: int = DEFAULT_BUDGET_TOKENS

    @property
    def api(self) -> str:
        return self.url.rstrip("/") + "/api/v1"

    @property
    def project_api(self) -> str:
        return f"{self.api}/projects/{self.project}"


def read_file(path: Path | None = None) -> dict[str, Any]:
    path = path or config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a JSON object")
    return data


def load(overrides: dict[str, Any] | None = None) -> Settings:
    """Command-line overrides, then the environment, then the config file."""
    values: dict[str, Any] = dict(read_file())
    for name, variable in ENV.items():
        if os.environ.get(variable):
            values[name] = os.environ[variable]
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = value
    missing = [ENV[name] for name in ("url", "token", "project") if not values.get(name)]
    if missing:
        raise ConfigError(
            f"not configured: set {', '.join(missing)} or run `memoryhub-agent login`"
        )
    try:
        timeout = float(values.get("timeout", DEFAULT_TIMEOUT))
        context_window = int(values.get("context_window", DEFAULT_CONTEXT_WINDOW))
        budget_tokens = int(values.get("budget_tokens", DEFAULT_BUDGET_TOKENS))
    except (TypeError, ValueError):
        raise ConfigError(
            "MEMORYHUB_TIMEOUT must be a number of seconds, MEMORYHUB_CONTEXT_WINDOW and "
            "MEMORYHUB_BUDGET_TOKENS integers"
        ) from None
    if timeout <= 0:
        raise ConfigError("MEMORYHUB_TIMEOUT must be positive")
    return Settings(
        url=str(values["url"]),
        token=str(values["token"]),
        project=str(values["project"]),
        timeout=timeout,
        profile=str(values.get("profile") or DEFAULT_PROFILE),
        context_window=context_window,
        budget_tokens=budget_tokens,
    )


def write_file(values: dict[str, Any], path: Path | None = None) -> Path:
    """Write the config atomically, readable by its owner only (it holds the token)."""
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".config.", dir=str(path.parent))  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(values, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def log(message: str) -> None:
    """Append one line to the log; never raises (logging must not break a hook)."""
    try:
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = " ".join(message.split())  # one line per event, whatever the error text
        fd = os.open(str(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} pid={os.getpid()} {line}\n")
    except Exception:  # noqa: S110 - nowhere left to report to
        pass
