"""The offline stage-1 extractor: deterministic rules that turn a session into typed memories.

`extract(records)` reads MewCode records (seed 000 §1) and returns `ExtractedMemory` items in
the kind taxonomy of `memoryhub.memories.kinds`. It runs with no LLM and no database, and it
returns the same output for the same input every time. Precision comes before recall: a wrong
memory costs the team more than a missed one, so every rule below is anchored, and a sentence
that hedges, asks something or only matters for the task at hand is skipped.

What is read
============
* Only text the user wrote counts for preferences, prohibitions, corrections, facts,
  references and to-dos. The assistant's claims are never taken as durable truths. Its text is
  used in one place only: as the explanation of a fix (rule `error_fix`).
* Text between INJECTION_OPEN and INJECTION_CLOSE was injected by MemoryHub and is removed. An
  unclosed block runs to the end of the text. A record flagged `contains_injection` whose
  marker is nowhere in its readable text is skipped whole, because we cannot tell which part
  was injected. `<system-reminder>` blocks (agent-injected context), fenced code blocks and
  `>` quotes are removed from user text as well.
* `compact_boundary` records: the summary is an LLM's text and is ignored. Records of the
  `keep` tail are read only if they do not repeat a record seen earlier in the input (MewCode
  appends every message before it compacts, so the tail is normally a copy). Records read
  this way carry the index of their boundary.
* Tool calls: an assistant `tool_use` block of a shell tool (Bash, shell, run_command, …)
  with a `command` input, paired with its `tool_result` by `tool_use_id`.

Rules (the `rule` field of each memory names the one that fired)
================================================================
User text is split into sentences. Sentence ends are `. ! ?` followed by a space, `。！？；;`,
and line breaks. A sentence is also split before `, and I …`, `, never …`, `, don't …` (and
the like), and before a Chinese `，` that opens a prohibition (`，不要…`, `，别…`). Leading fillers
("Oh and", "btw", "另外", …) are dropped. These sentences are skipped: questions (`?`, `吗`,
"can you…", "要不要…"); hedges anywhere ("maybe", "probably", "I think", "not sure", "也许",
"可能", "好像"); conditionals at the start ("if", "what if", "如果", "要是"); and sentences
that point back at context ("like this", "这样", "这么") with nothing else to say. The rules
are tried in this order, and the first that fires takes the sentence:

`correction` → feedback, importance 3 if emphatic ("again", "I told you", "又", "说过"),
    else 2. A user message after an assistant turn that starts "no,", "nope", "that's
    wrong", "actually", "not quite", "I said" / "不对", "错了", "搞错了", "其实", "应该是". It
    counts only if the rest states something ("is", "should be", "use", "not X", "instead",
    "是", "用", "而不是"). A bare "no" that answers the assistant's question needs a contrast
    ("not", "instead", "而不是"). Transient replies ("just…", "only…", "let's…", "先…",
    "这次…") are skipped.
`todo` → project/todo, importance 2. "TODO:", "later we need to…", "we should … eventually /
    at some point", "remind me to…" / "待办", "之后要", "回头再", "后续要", "以后再",
    "下个版本再". There must be an object beyond the trigger ("下个迭代再说" is too vague).
`prohibition` → rule or feedback (see below), importance 3. "never <verb>", "don't ever",
    "don't/do not <verb>", "stop <verb>ing", "avoid …", "you must not", "X is not allowed" /
    "不要", "别再", "禁止", "不许", "严禁", "不能再". Transient ones ("yet", "for now", "this
    time", "先不要", "暂时", "这次") are skipped, and so are pronoun objects ("don't commit it").
`preference` → user; a rule when it names the project ("in this repo", "项目里"); feedback when
    it is about how the assistant works with the user ("ask me", "问我", "reply", "回复").
    Importance 3 with "always", "never", "from now on", "以后…都", "一律", else 2. "I
    prefer", "I'd rather", "I always/usually <verb>", "I like to…", "I don't like", "I hate",
    "I can't stand", "always …", "from now on", "going forward", "by default" / "我喜欢",
    "我习惯", "我偏好", "我更喜欢", "我不喜欢", "以后…都", "今后一律", "每次都用", "统一用",
    "默认用". Objects such as "this", "that one", "这个" are skipped.
`profile` → user, importance 2. "I'm a backend engineer", "I work on…", "my role is" /
    "我是…工程师", "我负责…".
`reference` → reference, importance 2. A URL with a reference word ("docs", "see", "runbook",
    "wiki", "spec", "文档", "参考", "见", "规范") or a docs-looking address (not localhost, not
    a PR or commit link). A doc path (`*.md`, `docs/…`) with a reference word. A README
    section.
`fact` → project, importance 2, with subcategory decisions (decided, switched, 决定, 改用,
    统一), ops (deploy, CI, server, 部署, 线上) or else structure. "we use/run/deploy/host…",
    "we decided/switched/migrated…", "the project uses…", "our X is/runs/lives…", "<thing>
    lives in <path>" / "我们用", "项目使用", "我们采用", "我们的X是", "部署在", "我们决定",
    "X在 <path> 里". Only the clause that states the fact is kept.
`remember` → as found, importance 3. "remember (that)…", "keep in mind…", "note that…" /
    "记住", "请记住", "注意：". The rest goes through the rules above. Failing those, it becomes
    a project memory when it is about the project, our systems or code, else a user memory.
`command` → project/ops, importance 1. A shell command whose result is not an error and
    that builds, tests, lints, type-checks, formats, migrates, deploys, installs dependencies
    (without naming a package) or starts local services. Never `ls`, `cat`, `cd`, `git …`,
    `grep`, `echo` and the like. There is one memory per command family (`pytest`,
    `manage.py migrate`, `npm run lint` …), with the shortest successful form.
`error_fix` → lesson, importance 2. A failed shell command whose output shows an environment
    or tooling problem (missing module or binary, refused connection, credentials, version
    conflicts, unsupported protocol, missing table…). It must be followed later by a
    successful run of the same command family, with an explanation in between. The memory
    holds the failure, the explanation (the sentences of the first explanation after the
    failure that mention the error), the commands that fixed it and the command that then
    worked. Test failures that the code under edit caused (AssertionError) are not lessons.

Prohibitions: rule or feedback? A prohibition about how the assistant works with the user
("without asking me", "apologize", "explain", "summarize", "reply", "问我", "道歉", "回复",
"擅自") is feedback. Otherwise one that names code, files or tooling (a code word such as
import, dependency, module, test, log, branch, 代码, 依赖, 分支, 文件; a path; a backticked or
snake_case identifier; in Chinese, any Latin word) is a rule. Failing both, it is feedback when
it addresses "you"/"你", else a rule.

Output
======
* Secrets: every output string goes through `memoryhub.core.redaction.redact`, and then
  through `redact_prose_secrets`, which handles secrets stated in prose ("密码是 X", "the
  password for staging is X") that the shared rules leave alone. A memory taken from a user
  sentence in which either found a secret is dropped, because such a sentence is about the
  secret. A command or lesson keeps its redacted form. Shell commands are also scrubbed of
  `redis-cli -a <password>`.
* Near-duplicates: two memories of one kind whose term sets (the bank tokenizer's) have a
  Jaccard similarity ≥ 0.8 are merged. The first one stays, with the higher importance.
* Keywords: the bank tokenizer's terms (stemmed Latin words, CJK bigrams), each written as
  the first surface word that produced it, so "deploying" rather than "deploy". Ranked by
  distinctiveness: frequency, plus a bonus for identifiers (digits, `_`, `.`, `/`, `-`,
  backticks) and long words, minus one per function character in a CJK bigram. Up to 13 are
  kept, and low-value ones are trimmed while more than 8 remain. Generic words ("use",
  "please", "always") and pure numbers are left out. There is always at least one keyword,
  falling back to the kind.
* Record range: the user record for sentence rules. For a correction, the assistant record
  that was corrected through the user record. For a command, the tool_use through its result.
  For a lesson, the failed call through the successful result.

`offline_stage1` builds oh-my-pi's stage-1 JSON from those memories (raw_memory in Codex's
layout, seed-algorithms §4). `offline_memories_md` writes MewCode's four-section memories.md.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memoryhub.core.markers import INJECTION_CLOSE, INJECTION_OPEN
from memoryhub.core.redaction import redact
from memoryhub.memories.kinds import Kind, Subcategory
from memoryhub.memories.text import STOPWORDS, tokenize
from memoryhub.sessions.conversation import text_of
from memoryhub.sessions.records import (
    ASSISTANT,
    COMPACT_BOUNDARY,
    TOOL_RESULT,
    USER,
    RecordInput,
)

__all__ = [
    "CATEGORY_FEEDBACK",
    "CATEGORY_PREFERENCES",
    "CATEGORY_PROJECT",
    "CATEGORY_REFERENCES",
    "CATEGORIES",
    "ExtractedMemory",
    "SourceRecord",
    "auto_keywords",
    "expand_records",
    "extract",
    "memory_category",
    "offline_memories_md",
    "offline_stage1",
    "readable_text",
    "redact_all",
    "redact_prose_secrets",
    "render_memories_md",
    "source_records",
    "strip_injections",
]

MIN_KEYWORDS = 8
MAX_KEYWORDS = 13
DEDUPE_JACCARD = 0.8
MAX_CONTENT_CHARS = 400
MAX_TITLE_CHARS = 60


@dataclass(frozen=True)
class SourceRecord:
    """One stored transcript record, as the extractor sees it."""

    index: int
    type: str
    content: Any
    tool_use_id: str = ""
    is_error: bool = False
    contains_injection: bool = False


@dataclass(frozen=True)
class ExtractedMemory:
    kind: str
    content: str
    title: str
    keywords: tuple[str, ...]
    importance: int
    record_start: int
    record_end: int
    subcategory: str = ""
    goal: str = ""
    rule: str = ""  # which rule fired (for debugging and the precision report)


# --- reading records ------------------------------------------------------------------------

_INJECTED = re.compile(
    re.escape(INJECTION_OPEN) + r".*?(?:" + re.escape(INJECTION_CLOSE) + r"|\Z)", re.DOTALL
)
_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)
_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)


_PROSE_SECRET = re.compile(
    r"""(?:密码|口令|密钥|秘钥|令牌|access\s*key|secret\s*key|api\s*key|password|passwd|passphrase|
        \bpwd\b|\btoken\b|\bsecret\b)
        (?:\s+(?:for|of|on|in)\s+(?:the\s+)?[\w.-]+){0,2}
        \s*(?:是|为|:|：|=|\bis\b|\bwas\b)\s*
        (?P<secret>[^\s，。,;；、]{4,})""",
    re.VERBOSE | re.IGNORECASE,
)


def redact_prose_secrets(text: str) -> tuple[str, int]:
    """Secrets stated in prose, which the shared rules leave alone: "密码是 X", "the password
    for staging is X", "access key 是 X". Only a value with a digit or a symbol, or one of 12 or
    more characters, counts, so "the token is expired" stays."""
    count = 0

    def replace_value(match: re.Match[str]) -> str:
        nonlocal count
        value = match.group("secret")
        if "[REDACTED]" in value or not (re.search(r"[\d\W_]", value) or len(value) >= 12):
            return match.group()
        count += 1
        start = match.start("secret") - match.start()
        return match.group()[:start] + "[REDACTED]"

    return _PROSE_SECRET.sub(replace_value, text), count


def redact_all(text: str) -> tuple[str, int]:
    """The shared redaction rules, then redact_prose_secrets."""
    text, found = redact(text)
    text, more = redact_prose_secrets(text)
    return text, found + more


def strip_injections(text: str) -> str:
    """`text` without the blocks MemoryHub injected (an unclosed block runs to the end)."""
    return _INJECTED.sub(" ", text)


def _contains_marker(content: Any) -> bool:
    if isinstance(content, str):
        return INJECTION_OPEN in content
    return INJECTION_OPEN in json.dumps(content, ensure_ascii=False)


def readable_text(record: SourceRecord) -> str | None:
    """The record's text with injected blocks removed; None when it cannot be trusted (flagged
    as carrying an injection, but the marker is not in its readable text)."""
    if not isinstance(record.content, str | list):
        return ""
    text = text_of(record.content)
    if INJECTION_OPEN in text:
        return strip_injections(text)
    if record.contains_injection:
        return None
    return text


def source_records(
    rows: Iterable[Mapping[str, Any] | RecordInput], *, start: int = 0
) -> list[SourceRecord]:
    """MewCode wire dicts or RecordInputs → SourceRecords numbered from `start`, with
    `contains_injection` computed as ingestion does (the marker anywhere in the content)."""
    out = []
    for offset, row in enumerate(rows):
        if isinstance(row, RecordInput):
            type_, content, tool_use_id, is_error = (
                row.type,
                row.content,
                row.tool_use_id,
                row.is_error,
            )
        else:
            type_ = str(row.get("type", ""))
            content = row.get("content", "")
            tool_use_id = str(row.get("tool_use_id") or "")
            is_error = bool(row.get("is_error", False))
        out.append(
            SourceRecord(
                index=start + offset,
                type=type_,
                content=content,
                tool_use_id=tool_use_id,
                is_error=is_error,
                contains_injection=_contains_marker(content),
            )
        )
    return out


def _signature(type_: str, content: Any, tool_use_id: str) -> str:
    return json.dumps([type_, content, tool_use_id], ensure_ascii=False, sort_keys=True)


def expand_records(records: Sequence[SourceRecord]) -> list[SourceRecord]:
    """The records in order, with each compact boundary replaced by the unseen records of its
    `keep` tail (carrying the boundary's index). Other record types pass through."""
    seen: set[str] = set()
    out: list[SourceRecord] = []
    for record in records:
        if record.type != COMPACT_BOUNDARY:
            seen.add(_signature(record.type, record.content, record.tool_use_id))
            out.append(record)
            continue
        keep = record.content.get("keep") if isinstance(record.content, dict) else None
        for item in keep if isinstance(keep, list) else []:
            if not isinstance(item, dict) or item.get("type") not in (USER, ASSISTANT, TOOL_RESULT):
                continue
            content = item.get("content", "")
            tool_use_id = str(item.get("tool_use_id") or "")
            signature = _signature(str(item["type"]), content, tool_use_id)
            if signature in seen:
                continue
            seen.add(signature)
            out.append(
                SourceRecord(
                    index=record.index,
                    type=str(item["type"]),
                    content=content,
                    tool_use_id=tool_use_id,
                    is_error=bool(item.get("is_error", False)),
                    contains_injection=_contains_marker(content),
                )
            )
    return out


# --- sentences --------------------------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u9fff]")
_SENTENCE_SPLIT = re.compile(
    r"""(?<=[.!?])\s+(?=\S)
      | (?<=[。！？；;])\s*
      | \n+
      | ,\s*(?:and\s+)?
        (?=(?:please|also|always|never|don'?t|do\s+not|stop|i|i'd|i'm|we|we're|our)\b)
      | [，,]\s*(?=(?:不要|别再|别(?![的人处])|禁止|不许|不准|严禁|千万别|千万不要|不能再))
    """,
    re.VERBOSE | re.IGNORECASE,
)
_FILLER = re.compile(
    r"""^(?:(?:oh|ok|okay|also|and|but|btw|by\s+the\s+way|one\s+more\s+thing|another\s+thing|
        hey|so|well|alright|great|thanks|thank\s+you|cool|nice|perfect|good|yes|yeah|yep|sure|
        honestly|frankly|personally|tbh|looks\s+good|lgtm|fyi)\b[\s,:;!.\-–—]*)+""",
    re.VERBOSE | re.IGNORECASE,
)
_FILLER_ZH = re.compile(
    r"^(?:(?:另外|还有|顺便说一下|顺便|对了|哦|嗯|好的|好吧|行|补充一下|还有一点|然后|此外)[，,：:、\s]*)+"
)
_QUESTION_START = re.compile(
    r"""^(?:what|why|how|when|where|which|who|whose|can\s+you|could\s+you|would\s+you|will\s+you|
        do\s+(?:we|you|i)|does|did|is\s+(?:there|it|this|that)|are\s+(?:there|we|you)|should\s+(?:we|i)|
        shall\s+we|have\s+you|要不要|是不是|能不能|可不可以|有没有|为什么|怎么|为啥|是否)\b""",
    re.VERBOSE | re.IGNORECASE,
)
_HEDGE = re.compile(
    r"""\b(?:maybe|perhaps|probably|possibly|might|i\s+think|i\s+guess|i\s+believe|i\s+suppose|
        not\s+sure|i\s+wonder|just\s+an\s+idea|no\s+idea|i\s+assume)\b
      | 也许|可能|大概|好像|不确定|说不定|或许|不一定|估计""",
    re.VERBOSE | re.IGNORECASE,
)
_CONDITIONAL_START = re.compile(
    r"^(?:if|what\s+if|in\s+case|unless|whether|suppose|imagine)\b|^(?:如果|要是|假如|万一|假设)",
    re.IGNORECASE,
)
_VAGUE = re.compile(r"\b(?:like\s+this|like\s+that|this\s+way|that\s+way)\b|这么|这样|那样", re.I)


def _sentences(text: str) -> list[str]:
    return [p.strip() for p in _SENTENCE_SPLIT.split(text) if p and p.strip()]


def _clean_user_text(text: str) -> str:
    text = _SYSTEM_REMINDER.sub(" ", strip_injections(text))
    text = _FENCED.sub(" ", text)
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(">")]
    return "\n".join(lines)


def _strip_fillers(sentence: str) -> str:
    previous = None
    while previous != sentence:
        previous = sentence
        sentence = _FILLER.sub("", sentence).strip()
        sentence = _FILLER_ZH.sub("", sentence).strip()
    return sentence


def _is_question(sentence: str) -> bool:
    stripped = sentence.rstrip(" .。!！")
    if stripped.endswith(("?", "？")):
        return True
    if re.search(r"(?:吗|么|呢|吧？)$", stripped):
        return True
    return bool(_QUESTION_START.match(sentence))


# --- the sentence rules -------------------------------------------------------------------------

_VERBS = (
    r"use|add|import|touch|modify|edit|change|commit|push|merge|call|put|write|create|delete|"
    r"remove|rename|introduce|install|mock|hardcode|hard-code|store|log|print|disable|skip|bypass|"
    r"run|deploy|force|force-push|rebase|reformat|upgrade|downgrade|bump|pin|expose|return|catch|"
    r"swallow|rely|depend|leave|format|generate|send|include|make|let|suggest|apologi[sz]e|"
    r"explain|summari[sz]e|ask|guess|assume|invent|reply|respond|answer|copy|duplicate|nest|mix|"
    r"update|overwrite|reuse|inline|block|apply|ship|release|squash|amend|reference|sleep|retry|"
    r"raise|throw|ignore|silence|suppress|comment|trust|share|leak|paste|upload|open|close|drop|"
    r"truncate|migrate|alter|query|fetch|access|read|check|hand-edit|define|wrap|start|stop|"
    r"rewrite|refactor|split|mutate|patch|bypass|vendor|fork|sign|publish|expose"
)
_TEMPORAL = (
    r"(?:(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|"
    r"henceforth)\s*,?\s*)?"
)
_PROHIBIT_EN = re.compile(
    rf"""^{_TEMPORAL}(?:please\s+)?(?:
        never\s+(?:ever\s+)?(?:{_VERBS})\b
      | (?:don'?t|do\s+not)\s+ever\b
      | (?:don'?t|do\s+not)\s+(?:{_VERBS})\b
      | stop\s+\w+ing\b
      | avoid\s+\w
      | (?:you|we)\s+(?:must|should|shall)\s*(?:not|never)\b
      | (?:you|we)\s+(?:must|should)n'?t\b
      | under\s+no\s+circumstances\b
      | no\s+more\s+\w
    )""",
    re.VERBOSE | re.IGNORECASE,
)
_PROHIBIT_EN_ANYWHERE = re.compile(
    r"\b(?:is|are)\s+(?:not\s+allowed|forbidden|banned|prohibited)\b", re.IGNORECASE
)
_PROHIBIT_ZH = re.compile(
    r"^(?:以后|今后|从现在起|从今以后|请|你|我们|千万|绝对|永远|务必|一定|记得|也|并且|而且|再也|都)*\s*"
    r"(?:不要|不许|不准|禁止|严禁|别再|别(?![的人处名扭])|不能再|不可以|不得|绝不|千万别)"
    r"|禁止|严禁"
)
_TRANSIENT_EN = re.compile(
    r"""\b(?:yet|for\s+now|right\s+now|just\s+now|this\s+time|today|tonight|tomorrow|
        at\s+the\s+moment|until|in\s+this\s+(?:pr|commit|change|task|branch|ticket)|
        for\s+this\s+(?:pr|commit|change|task|one))\b
      | (?<![.\w])now\b(?!\s*\()""",
    re.VERBOSE | re.IGNORECASE,
)
_TRANSIENT_ZH = re.compile(
    r"先不|先别|暂时|这次|本次|现在|今天|明天|目前|还没|等我|等一下|一下子|急|担心|不要紧"
)
_PRONOUN_OBJECT = re.compile(
    rf"^(?:[\w\s,']*?\b(?:{_VERBS})\b)\s+(?:it|this|that|them|these|those)\b(?:\s+\w+)?[\s.!]*$",
    re.IGNORECASE,
)

_PREF_EN = re.compile(
    r"""^(?:
        i\s+(?:really\s+|strongly\s+|generally\s+|usually\s+|much\s+|always\s+)?prefer\b
      | i'?d\s+(?:much\s+)?(?:rather|prefer)\b
      | i\s+would\s+(?:much\s+)?(?:rather|prefer)\b
      | my\s+(?:strong\s+|personal\s+)?preference\s+is\b
      | i\s+(?:always|usually|generally|normally|typically)\s+
            (?:use|want|write|run|keep|put|go\s+with|like|name|format|commit|test|do)\b
      | i\s+(?:really\s+)?like\s+(?:to\b|it\s+when\b|using\b|having\b|keeping\b|my\b|when\b)
      | i\s+(?:really\s+)?(?:don'?t|do\s+not)\s+like\b
      | i\s+(?:hate|dislike|can'?t\s+stand|cannot\s+stand)\b
      | i\s+want\s+you\s+to\s+always\b
      | i'?m\s+used\s+to\b
      | (?:please\s+)?(?:always|from\s+now\s+on|going\s+forward|moving\s+forward|henceforth|
            by\s+default)\b
      | (?:please\s+)?make\s+sure\s+(?:to\s+|you\s+)?always\b
      | in\s+(?:the\s+)?future\s*,?\s*(?:please\s+)?
            (?:use|run|write|put|add|keep|ask|make|prefer|always|stick)\b
    )""",
    re.VERBOSE | re.IGNORECASE,
)
_PREF_VAGUE_OBJECT = re.compile(
    r"""^(?:i\s+\w+\s+(?:to\s+)?|i'?d\s+\w+\s+|my\s+preference\s+is\s+)
        (?:this|that|it|these|those|your|yours|the\s+(?:first|second|third|last|other|previous|new|old)
           (?:\s+(?:one|option|approach|version|way))?|this\s+one|that\s+one)\b""",
    re.VERBOSE | re.IGNORECASE,
)
_PREF_ZH = re.compile(
    r"^(?:我(?:个人|一般|通常|平时|一直|比较|更|还是|都)*(?:喜欢|习惯|偏好|倾向于?|偏向)"
    r"|我(?:不太|不)喜欢|我讨厌"
    r"|(?:以后|今后|往后|从现在起)[^，。,；;]{0,10}?(?:都|一律|统一|每次|全部|尽量|记得|请|始终|总是|必须|一定)"
    r"|(?:请)?(?:每次|一律|统一|始终|总是|永远)都?(?:用|使用|要|先|把|写|跑|保持|加|按)"
    r"|(?:请)?记得(?:每次|都|总是|以后)"
    r"|默认都?(?:用|使用))"
)
_PREF_ZH_VAGUE = re.compile(r"^我(?:\S{0,3})(?:喜欢|习惯|偏好)(?:这|那|你|它)")
_STRONG = re.compile(
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|every\s+time|whenever|must)\b"
    r"|(?:以后|今后|往后)[^，。,；;]{0,10}?都|一律|始终|永远|务必|一定|每次都|必须",
    re.IGNORECASE,
)

_PROFILE = re.compile(
    r"""^(?:i(?:'m|\s+am)\s+(?:a|an|the)\s+(?:[\w-]+\s+){0,3}(?:developer|engineer|dev|lead|designer|
          student|maintainer|manager|pm|architect|sre|admin|administrator|scientist|analyst|
          intern|cto|founder|owner)\b
      | i\s+work\s+(?:on|at|in|for)\b
      | my\s+role\s+is\b
      | i(?:'m|\s+am)\s+responsible\s+for\b
      | 我是(?:一[名个位])?\S{0,12}(?:工程师|开发|程序员|学生|负责人|设计师|运维|架构师|经理|产品)
      | 我负责)""",
    re.VERBOSE | re.IGNORECASE,
)

_URL = re.compile(r"https?://[^\s<>\"'`，。；！？、）)\]]+")
_LOCAL_URL = re.compile(
    r"//(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]|[\w.-]*example\.(?:com|org))(?:[:/]|$)", re.I
)
_EPHEMERAL_URL = re.compile(r"/(?:pull|pulls|commit|commits|compare|merge_requests)/", re.I)
_DOC_URL = re.compile(
    r"""//(?:docs?|wiki|developers?|learn|help|support|confluence|notion|apidocs?)[.-]
      | /(?:docs?|wiki|runbooks?|handbook|guides?|reference|spec|specs|manual)(?:/|$|\#)
      | readthedocs|notion\.so|confluence|grafana|dashboard|runbook""",
    re.VERBOSE | re.IGNORECASE,
)
_DOC_PATH = re.compile(
    r"(?<![\w/.:-])(?:[\w.-]+/)*[\w.-]+\.(?:md|mdx|rst|adoc)\b|(?<![\w/.:-])docs?/[\w./-]+"
)
_README_SECTION = re.compile(
    r"\breadme\b.*?\b(?:section|heading|part|chapter)\b"
    r"|\b(?:section|heading|part|chapter)\b.*?\breadme\b"
    r"|readme\S{0,3}(?:的|里的|中的)?\S{0,20}?(?:一节|章节|部分|小节)",
    re.IGNORECASE,
)
_REF_MARKER = re.compile(
    r"""\b(?:see|read|check|refer|follow|per|according|documented|documentation|docs?|spec|
        specification|wiki|runbook|guide|guidelines|handbook|playbook|dashboard|described|
        explained|adr|conventions|reference|manual)\b
      | 参考|参见|详见|文档|规范|说明|手册|看板|地址|链接|写在|记录在
      | (?:见|看)\s*(?=https?://|[\w./-]+\.(?:md|rst)|docs?/)""",
    re.VERBOSE | re.IGNORECASE,
)

_FACT_EN = re.compile(
    r"""\b(?:
        we(?:'re|\s+are)?\s+(?:use|using|run|running|deploy|deploying|host|hosting|store|storing|
            keep|build|ship|target|targeting|support|rely\s+on|depend\s+on|standardi[sz]e\s+on)\s+
            (?!it\b|this\b|that\b|them\b|these\b|those\b|out\b|into\b|a\s+lot\b|late\b|low\b)
      | we(?:'ve|\s+have)?\s+
            (?:decided|agreed|chosen|chose|switched|moved|migrated|standardi[sz]ed|settled)\b
      | (?:the|this|our)\s+(?:project|repo|repository|codebase|service|app|application|backend|
            frontend|api|stack|team)\s+(?:uses|is\s+using|runs|is\s+built|is\s+written|targets|
            depends\s+on|relies\s+on|is\s+deployed|deploys|lives)\b
      | our\s+(?:[\w.-]+\s+){1,3}?(?:is|are|runs|run|lives|live|uses|use|sits|is\s+deployed|
            are\s+deployed|deploys|goes|go|gets\s+deployed)\b
            (?!\s+(?:failing|broken|down|slow|red|flaky|stuck|crashing|blocked|timing|not\b|acting|
               being|currently|still|getting|running\s+(?:out|late)))
      | (?:the\s+)?convention\s+(?:here|in\s+this\s+(?:repo|project|codebase))\s+is\b
    )""",
    re.VERBOSE | re.IGNORECASE,
)
_FACT_EN_BLOCKED_BEFORE = re.compile(
    r"\b(?:if|whether|when|do|don'?t|should|could|would|can|might|maybe|once|unless|how|why|"
    r"what|until)\s+(?:\w+\s+){0,2}$",
    re.IGNORECASE,
)
_PATH = r"(?:\.{0,2}/)?(?:[\w.@-]+/)+[\w.@-]*"
_LOCATION_EN = re.compile(
    rf"""^(?!(?:the\s+)?(?:bug|error|issue|problem|typo|crash|failure|change|fix|diff|regression|
            exception)s?\b)
        (?:[\w`.-]+\s+){{1,5}}?(?:lives?|live|sits?|go|goes|are\s+(?:kept|stored|defined)|
        is\s+(?:kept|stored|defined|configured))\s+(?:in|under)\s+`?{_PATH}""",
    re.VERBOSE | re.IGNORECASE,
)
_FACT_ZH = re.compile(
    r"(?:我们|咱们|本项目|这个项目|该项目|项目|这个仓库|我们项目|我们团队|团队|公司)"
    r"(?:里|中|这边|现在|目前|一直|都|统一|主要|的服务|的代码|线上)*"
    r"(?:用的是|使用的是|用|使用|采用|基于|依赖|部署在|部署到|跑在|托管在|选择了|选了|决定|定了|改用|"
    r"换成了?|迁移到了?)(?![一这那它])"
    r"|我们的\S{1,12}?(?:是|都是|在|用|放在|跑在|部署在|都部署在|都跑在)"
)
_LOCATION_ZH = re.compile(
    rf"^(?!.*(?:问题|错误|报错|异常|bug)\S{{0,3}}在)\S{{1,20}}?(?:在|放在|位于)\s*`?{_PATH}`?\s*(?:里|下|中|目录|文件)"
)
_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|keep\s+in\s+mind|note|for\s+the\s+record|important)\s*(?:that\b|:|,|-|—|–)\s*"
    r"|^(?:请)?(?:记住|记一下|注意)\s*[:：，,]?\s*",
    re.IGNORECASE,
)
_TODO_EN = re.compile(
    r"""^(?:todo|to-do|fixme|follow[- ]?up|future\s+work|next\s+step)\b\s*[:\-–—]\s*
      | \blater\s*,?\s+(?:on\s+)?(?:we|i|you)
            (?:'ll|\s+will|\s+need|\s+should|\s+have|\s+must|\s+want|\s+can)\b
      | \b(?:we|i|you)(?:'ll|\s+will)?\s+(?:need|have|want)\s+to\b.{3,}?
            \b(?:later|eventually|at\s+some\s+point|
            someday|down\s+the\s+road|next\s+(?:sprint|release|quarter|iteration))\b
      | \b(?:we|you)\s+(?:should|must|ought\s+to)\b.{3,}?
            \b(?:later|eventually|at\s+some\s+point|someday|
            down\s+the\s+road|in\s+a\s+follow[- ]?up|next\s+(?:sprint|release|quarter|iteration))\b
      | ^(?:eventually|at\s+some\s+point|down\s+the\s+road|someday|in\s+a\s+follow[- ]?up)\b
            \s*,?\s*(?:we|i|you)\b
      | \bremind\s+me\s+to\b
      | \b(?:add|put)\s+(?:it|this|that)\s+(?:to|on)\s+the\s+(?:todo|backlog)\b""",
    re.VERBOSE | re.IGNORECASE,
)
_TODO_ZH = re.compile(
    r"待办|(?<![A-Za-z])TODO(?![A-Za-z])|之后(?:要|再|得|需要)|回头(?:再|要|得)|后面再|后续(?:要|再|需要)|稍后再|"
    r"下次再|改天再|以后再|有空(?:的时候)?再|下个(?:版本|迭代|sprint|月|阶段)(?:要|再)"
)
_TODO_PREFIX = re.compile(r"^(?:todo|to-do|fixme)\b\s*[:\-–—]?\s*", re.IGNORECASE)

_PROJECT_SCOPE = re.compile(
    r"\bin\s+(?:this|the|our)\s+(?:repo|repository|project|codebase|code\s*base)\b|\bacross\s+the\s+"
    r"(?:repo|codebase)\b|项目里|项目中|仓库里|代码里|代码库|这个项目|本项目|整个项目",
    re.IGNORECASE,
)
_INTERACTION = re.compile(
    r"""\b(?:ask(?:ing)?\s+me|asking|check\s+with\s+me|confirm\s+with\s+me|tell\s+me|me\b|my\s+approval|
        apologi[sz]\w*|explain\w*|summari[sz]\w*|repl(?:y|ies)|respond\w*|answers?|emoji\w*|verbose|
        chatty|lecture|guess\w*|assum\w*)\b
      | 问我|跟我确认|和我确认|我同意|我确认|道歉|解释|总结|回复|回答|啰嗦|表情
      | 擅自|自作主张|未经|废话""",
    re.VERBOSE | re.IGNORECASE,
)
_CODE_WORDS = re.compile(
    r"""\b(?:import\w*|dependenc(?:y|ies)|librar(?:y|ies)|packages?|modules?|functions?|class(?:es)?|
        methods?|apis?|endpoints?|tables?|migrations?|schemas?|databases?|db|columns?|models?|orm|
        quer(?:y|ies)|sql|code|codebase|repo|repository|files?|director(?:y|ies)|folders?|config\w*|
        settings|variables?|type\s+hints?|types?|mocks?|fixtures?|tests?|logs?|logging|logger|print|
        exceptions?|globals?|singletons?|decorators?|frameworks?|css|html|components?|hooks?|
        styles?|branch(?:es)?|main|master|typescript|javascript|python|go|rust|java|yaml|json|
        secrets?|money|float|floats|int|string|enum|regex|threads?|async|sync|callbacks?|server|
        prod|production|staging|infra|cluster|laptop|cli|dockerfile|container)\b""",
    re.VERBOSE | re.IGNORECASE,
)
_CODE_WORDS_ZH = re.compile(
    r"代码|依赖|库|包|函数|类|方法|接口|表|迁移|数据库|字段|模块|文件|目录|配置|测试|变量|类型|注释|日志|"
    r"组件|样式|分支|主干|框架|脚本|线上|生产|服务器|集群|镜像"
)
_IDENTIFIER = re.compile(r"`[^`]+`|\b\w+_\w+\b|\b\w+\.\w+\b|(?:\w+/)+\w*|\b[a-z]+[A-Z]\w*\b")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
_YOU = re.compile(r"\byou\b|你", re.IGNORECASE)

_DECISION_WORDS = re.compile(
    r"\b(?:decid\w*|agree\w*|chose|chosen|switch\w*|moved|migrat\w*|standardi[sz]\w*|settled|"
    r"convention)\b|决定|定了|改用|换成|迁移|统一|约定|选择|选了",
    re.IGNORECASE,
)
_OPS_WORDS = re.compile(
    r"""\b(?:deploy\w*|ci|cd|pipelines?|github\s+actions|gitlab|jenkins|circleci|servers?|host\w*|
        prod|production|staging|cloud|clusters?|kubernetes|k8s|docker|compose|fly\.io|heroku|
        vercel|aws|gcp|azure|airflow|composer|cron|timezone|ports?|infra|terraform|runbook|
        on-call|monitoring|release\w*|runs\s+on|run\s+on|replicas?|load\s+balancer)\b
      | 部署|上线|发布|服务器|线上|生产|环境|集群|运维|CI|流水线|监控|镜像|容器|副本|ACK|k8s""",
    re.VERBOSE | re.IGNORECASE,
)
_CORRECTION_EN = re.compile(
    r"""^(?:
        (?:no+|nope|nah)\b[\s,.!:;\-–—]*
      | (?:that'?s|that\s+is|this\s+is|it'?s|you'?re|you\s+are)\s+(?:not\s+(?:right|correct|true|
            what\s+i\s+(?:meant|asked|said|wanted))|wrong|incorrect|mistaken)\b[\s,.!:;\-–—]*
      | wrong\b[\s,.!:;\-–—]*
      | (?:actually|correction)\b[\s,.!:;\-–—]*
      | not\s+quite\b[\s,.!:;\-–—]*
      | (?:i\s+(?:said|told\s+you|meant)|as\s+i\s+said)\b[\s,.!:;\-–—]*
    )""",
    re.VERBOSE | re.IGNORECASE,
)
_CORRECTION_ZH = re.compile(
    r"^(?:不对|错了|不是的|你搞错了|搞错了|你弄错了|弄错了|不是这样的?|你理解错了|理解错了|我说的是|其实|纠正一下|更正一下)"
    r"[，,。.！!：:\s]*"
)
_CORRECTION_KEEP_ZH = re.compile(r"^应该是")
_BARE_NO = re.compile(r"^(?:no+|nope|nah|不是的?)\b", re.IGNORECASE)
_WRONG_WORD = re.compile(r"wrong|incorrect|mistaken|错|不对", re.IGNORECASE)
_CONTRAST = re.compile(
    r"\b(?:not|instead|rather\s+than|isn'?t|aren'?t|never)\b|而不是|而非|不是|不用|并非", re.I
)
_ASSERTION = re.compile(
    r"\b(?:is|are|was|were|should\s+be|must\s+be|lives?|uses?|using|means?|has|have|runs?|"
    r"store|stores|goes|belongs)\b|应该|是|用|在|叫|放",
    re.IGNORECASE,
)
_TRANSIENT_REPLY = re.compile(
    r"^(?:just|only|let'?s|let\s+us|first|wait|hold\s+on|later|can\s+you|could\s+you|please\s+(?:just|only|also))\b"
    r"|^(?:先|这次|只|就|等等|等一下|帮我|麻烦)",
    re.IGNORECASE,
)
_EMPHATIC = re.compile(
    r"\b(?:again|already|told\s+you|i\s+said|every\s+time|keep\s+(?:doing|making))\b|又|再次|说过|多少次|每次都",
    re.IGNORECASE,
)
_ASKED = re.compile(
    r"\?\s*$|？\s*$|\b(?:should\s+i|do\s+you\s+want|would\s+you\s+like|shall\s+i)\b|要不要|是否需要|吗[？?]?\s*$",
    re.IGNORECASE,
)


@dataclass
class _Draft:
    kind: str
    content: str
    importance: int
    record_start: int
    record_end: int
    rule: str
    subcategory: str = ""
    title: str = ""
    from_user: bool = True  # a user sentence: dropped when it carried a secret


def _finish(sentence: str) -> str:
    text = re.sub(r"\s+", " ", sentence).strip().strip(",，;；:：-–— ")
    if not text:
        return ""
    if not (len(text) > 1 and text[1].isupper()):  # leave "iOS", "eBPF" alone
        text = text[0].upper() + text[1:]
    if (text[-1].isascii() and text[-1].isalnum() or text[-1] in ")`'\"") and not _CJK.search(text):
        text += "."
    return text


def _substance(text: str, drop: str = "") -> bool:
    """Does `text` (minus the trigger `drop`) say something: two content words or three
    non-function CJK characters?"""
    rest = text.replace(drop, " ") if drop else text
    latin = [
        t
        for t in re.findall(r"[A-Za-z][A-Za-z0-9_.+-]*|\d+[A-Za-z]\w*", rest)
        if t.lower() not in STOPWORDS and t.lower() not in _TRIGGER_WORDS and len(t) > 1
    ]
    han = [c for c in rest if _CJK.match(c) and c not in _CJK_FUNCTION]
    if len(latin) >= 2 or len(han) >= 3 or (len(latin) >= 1 and len(han) >= 2):
        return True
    # One named entity or identifier ("We use Postgres.") is enough; the first word of the
    # sentence does not count as a name just because it is capitalised.
    first_word = re.match(r"\W*(\w+)", rest)
    return any(
        re.search(r"[\d_.+-]", t)
        or (t[0].isupper() and not (first_word and t == first_word.group(1)))
        for t in latin
    )


def _is_vague(sentence: str, trigger: str) -> bool:
    """Does the sentence point back at context ("like this", "这样") and say nothing else?"""
    if not _VAGUE.search(sentence):
        return False
    return not _substance(_VAGUE.sub(" ", sentence), trigger)


def _fact_subcategory(text: str) -> str:
    if _DECISION_WORDS.search(text):
        return Subcategory.DECISIONS.value
    if _OPS_WORDS.search(text):
        return Subcategory.OPS.value
    return Subcategory.STRUCTURE.value


def _prohibition_kind(text: str) -> str:
    if _INTERACTION.search(text):
        return Kind.FEEDBACK.value
    has_cjk = bool(_CJK.search(text))
    if (
        _CODE_WORDS.search(text)
        or _IDENTIFIER.search(text)
        or (has_cjk and (_CODE_WORDS_ZH.search(text) or _LATIN_WORD.search(text)))
    ):
        return Kind.RULE.value
    return Kind.FEEDBACK.value if _YOU.search(text) else Kind.RULE.value


def _preference_kind(text: str) -> str:
    if _INTERACTION.search(text) and not _PROJECT_SCOPE.search(text):
        return Kind.FEEDBACK.value
    if _PROJECT_SCOPE.search(text):
        return Kind.RULE.value
    return Kind.USER.value


def _is_transient_prohibition(sentence: str) -> bool:
    text = re.sub(r"from\s+now\s+on", " ", sentence, flags=re.IGNORECASE)
    if _TRANSIENT_EN.search(text) or _TRANSIENT_ZH.search(text):
        return True
    return bool(_PRONOUN_OBJECT.match(sentence.rstrip("。.!！")))


def _reference_target(sentence: str) -> str | None:
    """The URL or doc path that makes `sentence` a reference, or None."""
    for match in _URL.finditer(sentence):
        url = match.group().rstrip(".,:;!?")
        if _LOCAL_URL.search(url) or _EPHEMERAL_URL.search(url):
            continue
        if _REF_MARKER.search(sentence) or _DOC_URL.search(url):
            return url
    without_urls = _URL.sub(" ", sentence)
    path = _DOC_PATH.search(without_urls)
    if path and _REF_MARKER.search(without_urls):
        return path.group()
    if _README_SECTION.search(without_urls):
        return "README"
    return None


def _classify(sentence: str, record_index: int, *, depth: int = 0) -> _Draft | None:
    """The memory one user sentence holds, or None. Rules in priority order."""
    s = _strip_fillers(sentence)
    if not s or _is_question(s) or _HEDGE.search(s) or _CONDITIONAL_START.match(s):
        return None
    if len(s) > MAX_CONTENT_CHARS * 2:  # a pasted log or document, not a statement
        return None

    def draft(kind: str, rule: str, importance: int, sub: str = "", content: str = "") -> _Draft:
        return _Draft(
            kind=kind,
            content=_finish(content or s),
            importance=importance,
            record_start=record_index,
            record_end=record_index,
            rule=rule,
            subcategory=sub,
        )

    # remember / keep in mind: strip, re-classify, else a project or user memory.
    remember = _REMEMBER.match(s)
    if remember and depth == 0 and remember.end() < len(s):
        rest = s[remember.end() :]
        inner = _classify(rest, record_index, depth=1)
        if inner is not None:
            return replace(inner, importance=max(inner.importance, 3))
        if not _substance(rest):
            return None
        projectish = (
            _CODE_WORDS.search(rest)
            or _CODE_WORDS_ZH.search(rest)
            or _OPS_WORDS.search(rest)
            or re.search(r"\b(?:we|our|us)\b|我们|项目", rest, re.I)
            or (_CJK.search(rest) and _LATIN_WORD.search(rest))
        )
        if projectish:
            return draft(Kind.PROJECT.value, "remember", 3, _fact_subcategory(rest), rest)
        return draft(Kind.USER.value, "remember", 3, content=rest)

    # to-do
    todo = _TODO_EN.search(s) or _TODO_ZH.search(s)
    if todo and _substance(s, todo.group()):
        body = _TODO_PREFIX.sub("", s)
        return draft(Kind.PROJECT.value, "todo", 2, Subcategory.TODO.value, "TODO: " + body)

    # prohibition
    prohibition = _PROHIBIT_EN.match(s) or _PROHIBIT_EN_ANYWHERE.search(s) or _PROHIBIT_ZH.search(s)
    if prohibition and not _is_vague(s, prohibition.group()) and not _is_transient_prohibition(s):
        if _substance(s) and not re.match(
            r"^(?:不要|别)(?:急|紧|担心|客气|管|理)", s[prohibition.start() :]
        ):
            return draft(_prohibition_kind(s), "prohibition", 3)
        return None

    # preference
    preference = _PREF_EN.match(s) or _PREF_ZH.match(s)
    if preference and not _is_vague(s, preference.group()):
        if _PREF_VAGUE_OBJECT.match(s) or _PREF_ZH_VAGUE.match(s) or not _substance(s):
            return None
        if _TRANSIENT_EN.search(re.sub(r"from\s+now\s+on", " ", s, flags=re.I)):
            return None
        importance = 3 if _STRONG.search(s) else 2
        return draft(_preference_kind(s), "preference", importance)

    # profile
    if _PROFILE.match(s) and _substance(s):
        return draft(Kind.USER.value, "profile", 2)

    # reference
    target = _reference_target(s)
    if target is not None:
        result = draft(Kind.REFERENCE.value, "reference", 2)
        result.title = f"Reference: {target}"
        return result

    # fact
    fact = _FACT_EN.search(s)
    if fact and _FACT_EN_BLOCKED_BEFORE.search(s[: fact.start()]):
        fact = None
    if fact is None:
        fact = _LOCATION_EN.match(s)
    zh_fact = None if fact else (_FACT_ZH.search(s) or _LOCATION_ZH.match(s))
    if (fact or zh_fact) and _substance(s) and not _TRANSIENT_ZH.search(s):
        match = fact or zh_fact
        assert match is not None
        clause_start = max(s.rfind(sep, 0, match.start()) for sep in "，,;；") + 1
        body = s[clause_start:].strip() if clause_start > 0 else s
        return draft(Kind.PROJECT.value, "fact", 2, _fact_subcategory(body), body)
    return None


def _last_assistant_text(expanded: Sequence[SourceRecord], position: int) -> tuple[int, str]:
    """(record index, text) of the assistant turn right before `position`, or (-1, "")."""
    for record in reversed(expanded[:position]):
        if record.type == USER:
            return -1, ""
        if record.type == ASSISTANT:
            text = text_of(record.content).strip()
            if text or isinstance(record.content, list):
                return record.index, text
    return -1, ""


def _correction(
    text: str, expanded: Sequence[SourceRecord], position: int, record_index: int
) -> tuple[_Draft | None, str]:
    """(a feedback memory or None, the text left for the sentence rules)."""
    stripped = _strip_fillers(text.strip())
    head = _CORRECTION_EN.match(stripped) or _CORRECTION_ZH.match(stripped)
    keep_head = _CORRECTION_KEEP_ZH.match(stripped)
    if head is None and keep_head is None:
        return None, text
    assistant_index, assistant_text = _last_assistant_text(expanded, position)
    if assistant_index < 0:
        return None, text
    trigger_end = head.end() if head else 0
    # Strip a chain of triggers: "No, that's wrong — …".
    while trigger_end < len(stripped):
        tail = stripped[trigger_end:]
        again = _CORRECTION_EN.match(tail) or _CORRECTION_ZH.match(tail)
        if again is None or again.end() == 0:
            break
        trigger_end += again.end()
    rest = stripped[trigger_end:]
    parts = [p for p in re.split(r"(?<=[.!?])\s+|(?<=[。！？])|\n+", rest) if p.strip()]
    if not parts:
        return None, text
    body = parts[0].strip()
    remaining = " ".join(parts[1:])
    if (
        _is_question(body)
        or _HEDGE.search(body)
        or _TRANSIENT_REPLY.match(body)
        or not _substance(body)
        or not (_ASSERTION.search(body) or _CONTRAST.search(body))
    ):
        return None, remaining if head else text
    answered_question = bool(_ASKED.search(assistant_text))
    if (
        answered_question
        and _BARE_NO.match(stripped)
        and not _WRONG_WORD.search(stripped[:trigger_end])
        and not _CONTRAST.search(body)
    ):
        return None, remaining
    importance = 3 if _EMPHATIC.search(stripped) else 2
    memory = _Draft(
        kind=Kind.FEEDBACK.value,
        content=_finish(body),
        importance=importance,
        record_start=assistant_index,
        record_end=record_index,
        rule="correction",
    )
    return memory, remaining


def _user_memories(expanded: Sequence[SourceRecord]) -> list[_Draft]:
    drafts: list[_Draft] = []
    for position, record in enumerate(expanded):
        if record.type != USER:
            continue
        raw = readable_text(record)
        if raw is None:
            continue
        text = _clean_user_text(raw)
        if not text.strip():
            continue
        correction, text = _correction(text, expanded, position, record.index)
        if correction is not None:
            drafts.append(correction)
        for sentence in _sentences(text):
            memory = _classify(sentence, record.index)
            if memory is not None:
                drafts.append(memory)
    return drafts


# --- commands -----------------------------------------------------------------------------------

_SHELL_TOOLS = frozenset(
    {
        *("bash", "shell", "sh", "zsh", "terminal", "run_command", "execute_command"),
        *("run_shell_command", "run_terminal_cmd", "exec", "execute", "command"),
        *("powershell", "cmd", "run", "local_shell", "shell_command"),
    }
)
_TRIVIAL = frozenset(
    {
        *("ls", "ll", "cat", "cd", "pwd", "echo", "printf", "grep", "rg", "ag", "find", "fd"),
        *("head", "tail", "less", "more", "which", "whereis", "type", "env", "printenv"),
        *("export", "mkdir", "rm", "rmdir", "cp", "mv", "touch", "sed", "awk", "wc", "sort"),
        *("uniq", "cut", "tr", "xargs", "tee", "diff", "stat", "file", "du", "df", "ps"),
        *("kill", "top", "htop", "whoami", "date", "sleep", "true", "false", "clear", "history"),
        *("git", "gh", "open", "code", "vim", "vi", "nano", "tree", "chmod", "chown", "ln"),
        *("curl", "wget", "jq", "yq", "tar", "unzip", "zip", "ssh", "scp", "man", "help"),
    }
)
_RUNNER_PREFIXES: tuple[tuple[str, ...], ...] = (
    ("uv", "run"),
    ("poetry", "run"),
    ("pipenv", "run"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("rye", "run"),
    ("pnpm", "exec"),
    ("pnpm", "dlx"),
    ("yarn", "dlx"),
    ("npm", "exec"),
    ("bundle", "exec"),
    ("python", "-m"),
    ("python3", "-m"),
    ("py", "-m"),
    ("npx",),
    ("bunx",),
    ("sudo",),
    ("time",),
    ("nice",),
    ("command",),
)
_TEST_TOOLS = frozenset(
    {
        *("pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "ava", "rspec"),
        *("phpunit", "ctest", "playwright", "cypress", "karma", "behave", "unittest"),
    }
)
_LINT_TOOLS = frozenset(
    {
        *("ruff", "flake8", "pylint", "eslint", "golangci-lint", "rubocop", "stylelint"),
        *("biome", "pre-commit", "shellcheck", "hadolint", "tflint", "ktlint", "swiftlint"),
        *("clang-tidy", "markdownlint", "yamllint", "pyflakes", "bandit", "oxlint", "vet"),
    }
)
_TYPECHECK_TOOLS = frozenset({"mypy", "pyright", "tsc", "vue-tsc", "pytype", "basedpyright"})
_FORMAT_TOOLS = frozenset({"black", "isort", "prettier", "gofmt", "clang-format", "rustfmt"})
_BUILD_TOOLS = frozenset({"cmake", "webpack", "rollup", "esbuild", "bazel", "ninja", "meson"})
_DEPLOY_TOOLS = frozenset(
    {
        *("kubectl", "helm", "fly", "flyctl", "vercel", "netlify", "ansible-playbook"),
        *("serverless", "sls", "cap", "firebase", "heroku", "skaffold", "argocd", "kamal"),
    }
)
_INFRA_TOOLS = frozenset({"terraform", "tofu", "pulumi", "terragrunt", "cdk"})
_MIGRATE_TOOLS = frozenset({"alembic", "flyway", "goose", "dbmate", "liquibase", "atlas"})
_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_TASK_RUNNERS = frozenset({"make", "just", "task", "invoke", "rake", "mage", "nx", "turbo"})

_PHRASES = {
    "test": "Run tests with `{}`.",
    "lint": "Lint with `{}`.",
    "typecheck": "Type-check with `{}`.",
    "format": "Format code with `{}`.",
    "build": "Build with `{}`.",
    "deploy": "Deploy with `{}`.",
    "infra": "Plan/apply infrastructure with `{}`.",
    "migrate": "Run database migrations with `{}`.",
    "makemigrations": "Create database migrations with `{}`.",
    "install": "Install dependencies with `{}`.",
    "services": "Start the local services with `{}`.",
}
_TITLES = {
    "test": "Run tests",
    "lint": "Lint",
    "typecheck": "Type-check",
    "format": "Format",
    "build": "Build",
    "deploy": "Deploy",
    "infra": "Infrastructure",
    "migrate": "Migrations",
    "makemigrations": "Create migrations",
    "install": "Install dependencies",
    "services": "Local services",
}
_FAILURE = re.compile(
    r"""(?im)^(?:exit\s+code:?\s*[1-9]|error\b|fatal:|npm\s+err!|e\s{2,}\S|failed\b|fail\b|--- fail|
        traceback\s+\(most\s+recent\s+call\s+last\))
      | command\s+not\s+found | \b[1-9]\d*\s+(?:failed|errors?)\b""",
    re.VERBOSE,
)
_ENV_ERROR = re.compile(
    r"""modulenotfounderror|importerror|no\s+module\s+named|cannot\s+find\s+module|command\s+not\s+found|
        is\s+not\s+recognized\s+as|no\s+such\s+file\s+or\s+directory|\benoent\b|permission\s+denied|
        \beacces\b|connection\s+refused|econnrefused|could\s*n[o']t\s+connect|unable\s+to\s+connect|
        \btimed\s+out\b|\btimeout\b|unauthori[sz]ed|forbidden|\b401\b|\b403\b|credential|
        logged\s+in|not\s+authenticated|authentication\s+failed|wrongpass|noauth|access\s+denied|
        unsupported|failed\s+to\s+select\s+a\s+version|version\s+conflict|conflict\s+with|
        incompatible|requires\s+python|no\s+matching\s+distribution|could\s+not\s+find\s+a\s+version|
        eresolve|peer\s+dep|address\s+already\s+in\s+use|eaddrinuse|port\s+is\s+already\s+allocated|
        no\s+such\s+table|relation\s+"?[\w.]+"?\s+does\s+not\s+exist|unapplied\s+migration|
        out\s+of\s+memory|no\s+space\s+left|certificate|ssl\s+error|environment\s+variable|
        is\s+not\s+set|lockfile|lock\s+file|out\s+of\s+date|not\s+installed|missing\s+dependency""",
    re.VERBOSE | re.IGNORECASE,
)
_ERROR_LINE = re.compile(r"error|fail|exception|denied|refused|not found|unauthori", re.I)
_SECRET_FLAG = re.compile(r"""(?<=\s)(-a|--pass|--auth)(\s+|=)('[^']*'|"[^"]*"|\S+)""")


@dataclass(frozen=True)
class _Run:
    use_index: int
    result_index: int
    use_position: int
    result_position: int
    command: str
    ok: bool
    output: str
    key: str
    category: str | None


def _scrub_command(command: str) -> str:
    if "redis-cli" in command:
        command = _SECRET_FLAG.sub(lambda m: f"{m.group(1)}{m.group(2)}[REDACTED]", command)
    return redact_all(command)[0]


def _split_words(part: str) -> list[str]:
    try:
        return shlex.split(part)
    except ValueError:
        return part.split()


def _command_parts(command: str) -> list[list[str]]:
    """The simple commands of a shell line, each as words without env assignments, `cd`
    steps and runner prefixes (uv run, npx, python -m …)."""
    parts = []
    for piece in re.split(r"&&|\|\||;|\|", command):
        words = _split_words(piece.strip())
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
        if words and words[0] == "env":
            words = words[1:]
            while words and "=" in words[0]:
                words = words[1:]
        if not words or words[0] == "cd":
            continue
        changed = True
        while changed and words:
            changed = False
            for prefix in _RUNNER_PREFIXES:
                if tuple(words[: len(prefix)]) == prefix and len(words) > len(prefix):
                    words = words[len(prefix) :]
                    changed = True
        if words:
            parts.append(words)
    return parts


def _script_category(name: str) -> str | None:
    name = name.lower()
    table = (
        (("makemigrations",), "makemigrations"),
        (("e2e", "test", "spec"), "test"),
        (("lint",), "lint"),
        (("typecheck", "type-check", "types", "tsc", "mypy"), "typecheck"),
        (("format", "fmt", "prettier"), "format"),
        (("build", "compile", "bundle", "dist"), "build"),
        (("deploy", "release", "publish", "ship", "rollout"), "deploy"),
        (("plan", "apply"), "infra"),
        (("migrat", "db:"), "migrate"),
        (("check", "verify", "ci"), "lint"),
        (("install", "setup", "bootstrap", "deps"), "install"),
    )
    for needles, category in table:
        if any(n in name for n in needles):
            return category
    return None


def _classify_words(words: list[str]) -> tuple[str, str | None]:
    """(family key, category or None) of one simple command."""
    tool = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if (
        tool in ("python", "python3", "py", "bash", "sh", "node", "ruby", "perl")
        and args
        and args[0].endswith((".py", ".sh", ".js", ".rb", ".pl"))
        and not args[0].startswith("-")
    ):
        tool, args = args[0].rsplit("/", 1)[-1], args[1:]
    sub = args[0] if args and not args[0].startswith("-") else ""
    key = f"{tool} {sub}".strip() if sub and "/" not in sub and "." not in sub.strip(".") else tool
    low, low_sub = tool.lower(), sub.lower()
    positional = [a for a in args[1:] if not a.startswith("-")]

    if low in _TRIVIAL:
        return key, None
    if low in _TEST_TOOLS:
        return tool, "test"
    if low in _TYPECHECK_TOOLS:
        return tool, "typecheck"
    if low == "ruff":
        return key, "format" if low_sub == "format" else "lint"
    if low in _LINT_TOOLS:
        return tool if low != "vet" else key, "lint"
    if low in _FORMAT_TOOLS:
        return tool, "format"
    if low in ("go", "cargo", "dotnet", "deno", "swift", "mix", "zig", "flutter", "dart"):
        if low_sub == "test":
            return key, "test"
        if low_sub in ("build", "check"):
            return key, "build"
        if low_sub in ("vet", "clippy", "lint", "analyze"):
            return key, "lint"
        if low_sub in ("fmt", "format"):
            return key, "format"
        if low_sub in ("mod", "fetch") and (
            positional[:1] in (["download"], ["tidy"]) or low == "cargo"
        ):
            return key, "install"
        return key, None
    if low in _PACKAGE_MANAGERS:
        if low_sub in ("install", "i", "ci") and not positional:
            return key, "install"
        if low == "yarn" and not sub:
            return key, "install"
        if low_sub == "run" and args[1:2]:
            script = args[1]
            return f"{tool} run {script}", _script_category(script)
        if low_sub in _TEST_TOOLS or low_sub in _LINT_TOOLS or low_sub in _TYPECHECK_TOOLS:
            return key, _classify_words(args)[1]
        if low_sub in (
            "add",
            "remove",
            "uninstall",
            "update",
            "upgrade",
            "init",
            "create",
            "dev",
            "start",
            "serve",
            "exec",
            "dlx",
            "link",
            "publish",
            "version",
            "outdated",
        ):
            return key, None
        return key, _script_category(sub) if sub else None
    if low in ("gradle", "gradlew", "mvn", "mvnw", "sbt", "lein", "ant"):
        if low_sub in ("test", "check", "verify") and low not in ("mvn", "mvnw"):
            return key, "test" if low_sub == "test" else "lint"
        if low_sub in ("test", "verify"):
            return key, "test"
        if low_sub.startswith(("build", "assemble", "bundle", "package", "install", "compile")):
            return key, "build"
        if low_sub in ("lint", "ktlintcheck", "detekt", "spotlesscheck", "checkstyle:check"):
            return key, "lint"
        return key, None
    if low == "dbt":
        return key, {"run": "build", "build": "build", "test": "test", "compile": "build"}.get(
            low_sub
        )
    if low in _BUILD_TOOLS:
        return key, "build"
    if low in _TASK_RUNNERS:
        return key, _script_category(sub) if sub else "build"
    if low == "manage.py":
        if low_sub == "makemigrations":
            return key, "makemigrations"
        if low_sub == "migrate":
            return key, "migrate"
        if low_sub == "test":
            return key, "test"
        if low_sub == "check":
            return key, "lint"
        return key, None
    if low in _MIGRATE_TOOLS or (low in ("prisma", "knex", "sequelize") and "migrat" in low_sub):
        return key, "migrate"
    if low in ("rails", "rake", "bin/rails") and low_sub.startswith("db:"):
        return key, "migrate"
    if low in _INFRA_TOOLS:
        if low_sub in ("fmt", "validate"):
            return key, "lint"
        if low_sub in ("plan", "apply", "up", "preview", "deploy", "init"):
            return key, "infra"
        return key, None
    if low in _DEPLOY_TOOLS:
        return key, "deploy" if low_sub not in ("get", "describe", "logs", "status", "ls") else None
    if low in ("docker", "docker-compose", "podman"):
        if low == "docker" and low_sub == "compose":
            low_sub = positional[0].lower() if positional else ""
            key = f"docker compose {low_sub}".strip()
        if low_sub == "build":
            return key, "build"
        if low_sub == "push":
            return key, "deploy"
        if low_sub == "up":
            return key, "services"
        return key, None
    if low in ("pip", "pip3", "pipenv", "poetry", "uv", "bundle", "composer", "conda"):
        flags = set(args)
        if low_sub in ("sync", "lock") or (low_sub == "install" and not positional):
            return key, "install"
        if low_sub == "install" and flags & {"-r", "--requirement", "-e", "--editable"}:
            return key, "install"
        if low_sub == "build":
            return key, "build"
        return key, None
    if low == "build":  # python -m build
        return key, "build"
    category = _script_category(tool.rsplit(".", 1)[0]) if "." in tool else None
    return key, category


def _classify_command(command: str) -> tuple[str, str | None]:
    """(family key, category) of a shell line: the first part that has a category, else the
    key of its first part."""
    parts = _command_parts(command)
    if not parts:
        return "", None
    for words in parts:
        key, category = _classify_words(words)
        if category is not None:
            return key, category
    return _classify_words(parts[0])[0], None


def _runs(expanded: Sequence[SourceRecord]) -> list[_Run]:
    uses: dict[str, tuple[int, int, str]] = {}
    runs: list[_Run] = []
    for position, record in enumerate(expanded):
        if record.type == ASSISTANT and isinstance(record.content, list):
            for block in record.content:
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                name = str(block.get("name", "")).lower()
                inp = block.get("input")
                if name not in _SHELL_TOOLS or not isinstance(inp, dict):
                    continue
                command = inp.get("command", inp.get("cmd"))
                if isinstance(command, list):
                    command = " ".join(str(c) for c in command)
                if isinstance(command, str) and command.strip():
                    uses[str(block.get("id", ""))] = (record.index, position, command.strip())
        elif record.type == TOOL_RESULT and record.tool_use_id in uses:
            use_index, use_position, command = uses.pop(record.tool_use_id)
            if record.contains_injection and INJECTION_OPEN not in text_of(record.content):
                continue
            output = strip_injections(text_of(record.content))
            ok = not record.is_error and not _FAILURE.search(output)
            key, category = _classify_command(command)
            runs.append(
                _Run(
                    use_index=use_index,
                    result_index=record.index,
                    use_position=use_position,
                    result_position=position,
                    command=command,
                    ok=ok,
                    output=output,
                    key=key,
                    category=category,
                )
            )
    return runs


def _command_memories(runs: Sequence[_Run]) -> list[_Draft]:
    best: dict[str, _Run] = {}
    order: list[str] = []
    for run in runs:
        if not run.ok or run.category is None or len(run.command) > 160 or "\n" in run.command:
            continue
        current = best.get(run.key)
        if current is None:
            order.append(run.key)
            best[run.key] = run
        elif len(run.command) < len(current.command):
            best[run.key] = run
    drafts = []
    for key in order:
        run = best[key]
        assert run.category is not None
        command = _scrub_command(run.command)
        drafts.append(
            _Draft(
                kind=Kind.PROJECT.value,
                content=_PHRASES[run.category].format(command),
                importance=1,
                record_start=run.use_index,
                record_end=run.result_index,
                rule="command",
                subcategory=Subcategory.OPS.value,
                title=_clip(f"{_TITLES[run.category]}: {command}", MAX_TITLE_CHARS),
                from_user=False,
            )
        )
    return drafts


def _similar(a: _Run, b: _Run) -> bool:
    if a.key and a.key == b.key:
        return True
    if a.category is not None and a.category == b.category:
        return True
    return a.command == b.command


def _error_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for pattern in (_ENV_ERROR, _ERROR_LINE):
        for line in lines:
            if pattern.search(line):
                return _clip(re.sub(r"^E\s+", "", line), 160).rstrip(".。")
    return _clip(lines[0], 160).rstrip(".。") if lines else "an error"


def _explanation(
    expanded: Sequence[SourceRecord], start: int, end: int, about: Sequence[str]
) -> str:
    """The first assistant (else user) text between two positions: up to two of its sentences,
    preferring those that share a term with the first of `about` (the error line), then with
    the next (the commands)."""
    topics = [set(tokenize(a)) - {"fail", "error", "succeed", "py"} for a in about]
    for wanted in (ASSISTANT, USER):
        for record in expanded[start:end]:
            if record.type != wanted:
                continue
            text = readable_text(record) if wanted == USER else text_of(record.content)
            text = (text or "").strip()
            if not text:
                continue
            sentences = [p.strip() for p in re.split(r"(?<=[.!?])\s+|(?<=[。！？])", text)]
            sentences = [p for p in sentences if p]
            chosen = sentences[:2]
            for topic in topics:
                relevant = [p for p in sentences if topic & set(tokenize(p))]
                if relevant:
                    chosen = relevant[:2]
                    break
            joiner = "" if _CJK.search(text) else " "
            return _clip(joiner.join(chosen).strip(), 240)
    return ""


def _lesson_memories(expanded: Sequence[SourceRecord], runs: Sequence[_Run]) -> list[_Draft]:
    drafts: list[_Draft] = []
    used_successes: set[int] = set()
    for i, failed in enumerate(runs):
        if failed.ok or not _ENV_ERROR.search(failed.output):
            continue
        success = next((r for r in runs[i + 1 :] if r.ok and _similar(failed, r)), None)
        if success is None or success.result_index in used_successes:
            continue
        about = (_error_line(failed.output), f"{failed.command} {success.command}")
        explanation = _explanation(
            expanded, failed.result_position + 1, success.use_position, about
        )
        if not explanation:
            continue
        used_successes.add(success.result_index)
        fixes = [
            r.command
            for r in runs[i + 1 :]
            if r.result_position < success.use_position
            and r.ok
            and not _similar(r, failed)
            and _classify_words(_command_parts(r.command)[0])[0].split(" ")[0] not in _TRIVIAL
            if _command_parts(r.command)
        ][:2]
        failed_command = _scrub_command(failed.command)
        content = f"`{failed_command}` failed: {_error_line(failed.output)}. Fix: {explanation}"
        if fixes:
            content += " Ran " + ", then ".join(f"`{_scrub_command(c)}`" for c in fixes) + "."
        content += f" Then `{_scrub_command(success.command)}` succeeded."
        drafts.append(
            _Draft(
                kind=Kind.LESSON.value,
                content=content,
                importance=2,
                record_start=failed.use_index,
                record_end=success.result_index,
                rule="error_fix",
                title=_clip(
                    f"{failed.key or failed_command}: {_error_line(failed.output)}", MAX_TITLE_CHARS
                ),
                from_user=False,
            )
        )
    return drafts


# --- keywords, redaction, dedupe ---------------------------------------------------------------

_GENERIC = frozenset(
    {
        *("use", "using", "used", "uses", "always", "never", "please", "prefer", "like", "want"),
        *("need", "make", "sure", "thing", "things", "also", "just", "really", "don", "doesn"),
        *("didn", "isn", "aren", "won", "can", "get", "let", "ok", "okay", "yes", "instead"),
        *("actually", "wrong", "right", "correct", "later", "todo", "ever", "every", "time"),
        *("way", "one", "lot", "us", "thank", "thanks", "hey", "now", "ll", "ve", "re", "s"),
        *("d", "m", "t", "redacted", "would", "could", "should", "must", "will", "shall"),
        *("may", "might", "rather", "going", "forward", "avoid", "stop", "usually", "anywhere"),
        *("everywhere", "think", "know", "new", "good", "bad", "keep", "run", "with"),
    }
)
# Words that make a sentence a trigger but say nothing about its subject (_substance).
_TRIGGER_WORDS = frozenset(
    {
        *("please", "don", "doesn", "didn", "always", "never", "use", "using", "prefer", "like"),
        *("want", "need", "make", "sure", "also", "just", "really", "ok", "okay", "yes", "ever"),
        *("actually", "later", "todo", "us", "now", "ll", "ve", "re", "s", "d", "m", "t"),
    }
)
_CJK_FUNCTION = frozenset(
    "的了是在我你他她它们要不都就和把这那一个有也请吧吗呢啊哦嗯很还再又给让被对到会能说下上么"
)
# Bigrams of the rules' own trigger words: they say how something was said, not what.
_CJK_TRIGGERS = frozenset(
    {
        *("以后", "今后", "不要", "禁止", "严禁", "不许", "不准", "别再", "我们", "们用", "喜欢"),
        *("习惯", "偏好", "记住", "之后", "回头", "待办", "后续", "统一", "一律", "每次", "默认"),
        *("其实", "不对", "错了", "应该", "项目", "使用", "采用", "们的", "都用", "要先", "之前"),
    }
)
_WORD_RUN = re.compile(r"[\u3400-\u9fff]+|[A-Za-z0-9]+")


def auto_keywords(text: str, *, fallback: str = "") -> tuple[str, ...]:
    """Up to 13 keywords of `text`: bank-tokenizer terms written as surface words, most
    distinctive first (see the module docstring); never empty when `fallback` is given."""
    counts: Counter[str] = Counter()
    surface: dict[str, str] = {}
    first: dict[str, int] = {}
    bonus: Counter[str] = Counter()
    backticked = [(m.start(), m.end()) for m in re.finditer(r"`[^`]+`", text)]
    for match in _WORD_RUN.finditer(text):
        run = match.group()
        if _CJK.match(run):
            for i in range(len(run) - 1):
                bigram = run[i : i + 2]
                penalty = sum(1 for c in bigram if c in _CJK_FUNCTION)
                if penalty == 2:
                    continue
                if bigram in _CJK_TRIGGERS:
                    penalty += 2
                counts[bigram] += 1
                surface.setdefault(bigram, bigram)
                first.setdefault(bigram, match.start() + i)
                bonus[bigram] = (1 if len(run) == 2 else 0) - penalty
            continue
        word = run.lower()
        start, end = match.start(), match.end()
        in_code = any(s <= start < e for s, e in backticked)
        if word in STOPWORDS or word.isdigit() or len(word) < 2 or word == "redacted":
            continue
        if word in _GENERIC and not in_code:
            continue
        terms = tokenize(word)
        if not terms:
            continue
        term = terms[0]
        counts[term] += 1
        surface.setdefault(term, word)
        first.setdefault(term, match.start())
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        score = 0
        dotted = end < len(text) - 1 and after == "." and text[end + 1].isalnum()
        if (
            any(c.isdigit() for c in word)
            or before in "_./-"
            or (after in "_/-" and after != " ")
            or dotted
        ):
            score += 2
        if run != word and not run.istitle():  # camelCase or ALLCAPS
            score += 1
        if in_code:
            score += 1
        if len(word) >= 5:
            score += 1
        bonus[term] = max(bonus[term], score)
    ranked = sorted(counts, key=lambda t: (-(counts[t] + bonus[t]), first[t]))
    chosen = ranked[:MAX_KEYWORDS]
    while len(chosen) > MIN_KEYWORDS and counts[chosen[-1]] + bonus[chosen[-1]] <= 0:
        chosen.pop()
    keywords = tuple(dict.fromkeys(surface[t] for t in chosen))
    if not keywords and fallback:
        return (fallback,)
    return keywords


def _clip(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,.;:，。") + "…"


def _title_of(content: str) -> str:
    text = re.sub(r"^TODO:\s*", "TODO: ", content).rstrip("。.!！")
    if _CJK.search(text[:20]):
        return _clip(text, 30)
    words = text.split()
    return _clip(" ".join(words[:9]), MAX_TITLE_CHARS)


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 1.0 if a == b else 0.0
    return len(a & b) / len(a | b)


def _finalise(drafts: Iterable[_Draft]) -> list[ExtractedMemory]:
    kept: list[tuple[_Draft, set[str]]] = []
    for draft in drafts:
        content, found = redact_all(_clip(draft.content, MAX_CONTENT_CHARS))
        if found and draft.from_user:
            continue
        if not content.strip():
            continue
        draft = replace(draft, content=content)
        terms = set(tokenize(content))
        duplicate = next(
            (
                i
                for i, (other, other_terms) in enumerate(kept)
                if other.kind == draft.kind
                and (other.content == content or _jaccard(terms, other_terms) >= DEDUPE_JACCARD)
            ),
            None,
        )
        if duplicate is not None:
            other, other_terms = kept[duplicate]
            kept[duplicate] = (
                replace(other, importance=max(other.importance, draft.importance)),
                other_terms,
            )
            continue
        kept.append((draft, terms))
    out = []
    for draft, _terms in kept:
        title = redact_all(draft.title or _title_of(draft.content))[0]
        keywords = tuple(
            k
            for k in (redact_all(k)[0] for k in auto_keywords(draft.content))
            if "[REDACTED]" not in k
        ) or (draft.kind,)
        out.append(
            ExtractedMemory(
                kind=draft.kind,
                content=draft.content,
                title=title,
                keywords=keywords,
                importance=draft.importance,
                record_start=draft.record_start,
                record_end=draft.record_end,
                subcategory=draft.subcategory,
                rule=draft.rule,
            )
        )
    out.sort(key=lambda m: (m.record_start, m.record_end))
    return out


def extract(records: Sequence[SourceRecord]) -> list[ExtractedMemory]:
    """The durable memories of `records` (see the module docstring for the rules)."""
    expanded = expand_records(records)
    runs = _runs(expanded)
    drafts = _user_memories(expanded) + _command_memories(runs) + _lesson_memories(expanded, runs)
    drafts.sort(key=lambda d: (d.record_start, d.record_end))
    return _finalise(drafts)


# --- stage-1 output and memories.md -----------------------------------------------------------

CATEGORY_PREFERENCES = "用户偏好"
CATEGORY_FEEDBACK = "纠正反馈"
CATEGORY_PROJECT = "项目知识"
CATEGORY_REFERENCES = "参考资料"
CATEGORIES = (CATEGORY_PREFERENCES, CATEGORY_FEEDBACK, CATEGORY_PROJECT, CATEGORY_REFERENCES)


def memory_category(kind: str) -> str:
    """MewCode's memories.md section for a kind: user and soul → 用户偏好, feedback → 纠正反馈,
    reference → 参考资料, every project-scoped kind → 项目知识."""
    if kind in (Kind.USER, Kind.SOUL):
        return CATEGORY_PREFERENCES
    if kind == Kind.FEEDBACK:
        return CATEGORY_FEEDBACK
    if kind == Kind.REFERENCE:
        return CATEGORY_REFERENCES
    return CATEGORY_PROJECT


def render_memories_md(sections: Mapping[str, Sequence[str]]) -> str:
    """The memories.md text: all four `### ` headers in order, `- ` lines, no placeholders."""
    lines = []
    for category in CATEGORIES:
        lines.append(f"### {category}")
        for entry in sections.get(category, ()):
            entry = re.sub(r"\s+", " ", entry).strip()
            if entry:
                lines.append(f"- {entry}")
    return "\n".join(lines) + "\n"


def offline_memories_md(memories: Iterable[ExtractedMemory]) -> str:
    """MewCode's four-category memories.md for `memories` (see memory_category)."""
    sections: dict[str, list[str]] = {c: [] for c in CATEGORIES}
    for memory in memories:
        entry = redact_all(memory.content)[0]
        bucket = sections[memory_category(memory.kind)]
        if entry not in bucket:
            bucket.append(entry)
    return render_memories_md(sections)


def _first_task(expanded: Sequence[SourceRecord]) -> str:
    for record in expanded:
        if record.type != USER:
            continue
        text = readable_text(record)
        if text is None:
            continue
        text = _clean_user_text(text).strip()
        if text:
            first = _sentences(text)[0] if _sentences(text) else text
            return _clip(redact_all(first)[0], 120).rstrip("。.")
    return "an agent session"


def _slug(task: str, memories: Sequence[ExtractedMemory]) -> str | None:
    words = [
        w.lower()
        for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", task)
        if w.lower() not in STOPWORDS and w.lower() not in _GENERIC and len(w) > 1
    ]
    if not words:
        for memory in memories:
            words.extend(k for k in memory.keywords if re.fullmatch(r"[a-z][a-z0-9]*", k))
    slug = "_".join(dict.fromkeys(words[:4]))
    slug = re.sub(r"[^a-z0-9_]+", "_", slug).strip("_")[:40].strip("_")
    return slug or None


def offline_stage1(
    records: Sequence[SourceRecord], memories: Sequence[ExtractedMemory]
) -> dict[str, Any]:
    """oh-my-pi's stage-1 output {rollout_summary, rollout_slug, raw_memory}, built from the
    extractor's memories; empty strings and None when there is nothing durable. raw_memory
    follows Codex's layout (seed-algorithms §4)."""
    if not memories:
        return {"rollout_summary": "", "rollout_slug": None, "raw_memory": ""}
    expanded = expand_records(records)
    task = _first_task(expanded)
    runs = _runs(expanded)
    by_kind: Counter[str] = Counter(m.kind for m in memories)
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(by_kind.items()))
    titles = "; ".join(m.title for m in memories[:8])
    summary = f"Task: {task}. Durable memories ({counts}): {titles}."

    prefs = [m for m in memories if m.kind in (Kind.USER, Kind.SOUL, Kind.FEEDBACK)]
    steps = [m for m in memories if m.rule == "command"]
    problems = [m for m in memories if m.kind == Kind.LESSON]
    knowledge = [
        m
        for m in memories
        if m.kind not in (Kind.USER, Kind.SOUL, Kind.FEEDBACK, Kind.LESSON, Kind.REFERENCE)
        and m.rule != "command"
    ]
    references = [m for m in memories if m.kind == Kind.REFERENCE]
    if not runs:
        outcome = "uncertain"
    elif runs[-1].ok:
        outcome = "success"
    else:
        outcome = "fail"

    def bullets(items: Sequence[ExtractedMemory], empty: str = "- none") -> list[str]:
        return [f"- {m.content}" for m in items] or [empty]

    lines = [
        f"# {task}",
        "",
        f"Memory context: {len(records)} records, extracted offline by the rule-based extractor "
        "(no LLM).",
        "User preferences:" + ("" if prefs else " none observed"),
        *(bullets(prefs) if prefs else []),
        "",
        f"## Task: {task}",
        f"Outcome: {outcome}",
        "Key steps:",
        *bullets(steps),
        "Things that did not work / things that can be improved:",
        *bullets(problems),
        "Reusable knowledge:",
        *bullets(knowledge),
        "Pointers and references (annotate why each item matters):",
        *[f"- {m.content} (pointed to by the user)" for m in references],
    ]
    if not references:
        lines.append("- none")
    raw = redact_all("\n".join(lines).strip())[0]
    return {
        "rollout_summary": redact_all(_clip(summary, 1200))[0],
        "rollout_slug": _slug(task, memories),
        "raw_memory": raw,
    }
