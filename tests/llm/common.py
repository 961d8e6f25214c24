from __future__ import annotations

from typing import Any

from memoryhub.llm import client as llm
from memoryhub.llm.models import LlmCall
from projects.models import Project

OFFLINE_ANSWER = "offline answer"


def ask(
    content: str = "Summarise the session.", *, system: str = "", **kwargs: Any
) -> llm.LlmRequest:
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": content})
    kwargs.setdefault("purpose", "test")
    kwargs.setdefault("offline", lambda: OFFLINE_ANSWER)
    return llm.LlmRequest(messages=messages, **kwargs)


def calls(project: Project | None = None) -> list[LlmCall]:
    return list(LlmCall.objects.filter(project=project).order_by("id"))
