"""The language of the fixed wording agents read beside memories: headings, notes, relative times.

MemoryHub has no language setting per project. Agent-facing text follows the memories it shows,
as MewCode's payload headings always have: Chinese when at least half of them are Chinese,
English otherwise (and when there are none). meow-memory does the same with its own switch
(promptLang, zh or en): its framework words and relative times are in the language the
memories are written in. A caller may ask for a language explicitly (MCP over HTTP: an
Accept-Language naming English or Chinese), which wins over the memories'.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum


class Language(StrEnum):
    EN = "en"
    ZH = "zh"


_CJK = re.compile(r"[\u3400-\u9fff]")


def text_language(texts: Iterable[str]) -> Language:
    """Chinese when at least half of `texts` contain Chinese, English otherwise (or when
    there are none)."""
    items = list(texts)
    chinese = sum(1 for text in items if _CJK.search(text))
    return Language.ZH if items and 2 * chinese >= len(items) else Language.EN


def relative_time(then: datetime, now: datetime, language: Language) -> str:
    """How long ago `then` was, as meow-memory shows it beside a memory ("3天前", "3 d ago");
    months and years beyond meow's days. A time in the future (clock skew) is "just now"."""
    seconds = (now - then).total_seconds()
    zh = language == Language.ZH
    if seconds < 60:
        return "刚刚" if zh else "just now"
    if seconds < 3600:
        n = int(seconds // 60)
        return f"{n}分钟前" if zh else f"{n} min ago"
    if seconds < 86_400:
        n = int(seconds // 3600)
        return f"{n}小时前" if zh else f"{n} h ago"
    days = int(seconds // 86_400)
    if days < 30:
        return f"{days}天前" if zh else f"{days} d ago"
    if days < 365:
        return f"{days // 30}个月前" if zh else f"{days // 30} mo ago"
    return f"{days // 365}年前" if zh else f"{days // 365} yr ago"


def accept_language(header: str) -> Language | None:
    """English or Chinese, whichever an Accept-Language header prefers (by q, then order);
    None when it names neither ("*" names no language)."""
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate(header.split(",")):
        tag, _, params = part.partition(";")
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if not 0.0 <= quality <= 1.0:  # NaN too
            quality = 0.0
        ranked.append((-quality, index, tag.strip().lower()))
    for negative_quality, _, tag in sorted(ranked):
        if negative_quality >= 0:
            break  # q=0: not acceptable, nor is anything after it
        primary = tag.split("-")[0]
        if primary in (Language.EN, Language.ZH):
            return Language(primary)
    return None
