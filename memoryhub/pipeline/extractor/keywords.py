"""Keywords and dedupe: what every rule's draft becomes before it is stored.

Output
======
* Secrets: every output string goes through `memoryhub.core.redaction.redact`, the one
  redaction policy (it covers secrets stated in prose, "密码是 X", "the password for staging
  is X", and `redis-cli -a <password>`). A memory taken from a user sentence in which it found
  a secret is dropped, because such a sentence is about the secret. A command or lesson keeps
  its redacted form.
* Near-duplicates: two memories of one kind whose term sets (the bank tokenizer's) have a
  Jaccard similarity ≥ 0.8 are merged. The first one stays, with the higher importance.
* Keywords: the bank tokenizer's terms (stemmed Latin words, CJK bigrams), each written as
  the first surface word that produced it, so "deploying" rather than "deploy". Ranked by
  distinctiveness: frequency, plus a bonus for identifiers (digits, `_`, `.`, `/`, `-`,
  backticks) and long words, minus one per function character in a CJK bigram. Up to 13 are
  kept, and low-value ones are trimmed while more than 8 remain. Generic words ("use",
  "please", "always") and pure numbers are left out. A memory with fewer than 8 gets related
  terms of its own terms (`_RELATED`: synonyms, a tool's family, English ↔ Chinese; Chinese
  words only for a Chinese memory), then words naming its kind, so every memory has 8 to 13.
* Record range: the user record for sentence rules. For a correction, the assistant record
  that was corrected through the user record. For a command, the tool_use through its result.
  For a lesson, the failed call through the successful result.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace

from memoryhub.core.redaction import REDACTED, redact
from memoryhub.memories.text import STOPWORDS, tokenize

MIN_KEYWORDS = 8
MAX_KEYWORDS = 13
DEDUPE_JACCARD = 0.8
MAX_CONTENT_CHARS = 400
MAX_TITLE_CHARS = 60

CJK = re.compile(r"[\u3400-\u9fff]")


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


@dataclass
class Draft:
    kind: str
    content: str
    importance: int
    record_start: int
    record_end: int
    rule: str
    subcategory: str = ""
    title: str = ""
    from_user: bool = True  # a user sentence: dropped when it carried a secret


GENERIC_WORDS = frozenset(
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
TRIGGER_WORDS = frozenset(
    {
        *("please", "don", "doesn", "didn", "always", "never", "use", "using", "prefer", "like"),
        *("want", "need", "make", "sure", "also", "just", "really", "ok", "okay", "yes", "ever"),
        *("actually", "later", "todo", "us", "now", "ll", "ve", "re", "s", "d", "m", "t"),
    }
)
CJK_FUNCTION = frozenset(
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
        if CJK.match(run):
            for i in range(len(run) - 1):
                bigram = run[i : i + 2]
                penalty = sum(1 for c in bigram if c in CJK_FUNCTION)
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
        if word in GENERIC_WORDS and not in_code:
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


# Related terms, keyed by bank term (stem or CJK bigram): the words someone may search for when
# they mean the same thing (synonyms, the family a tool belongs to, English ↔ Chinese).
_RELATED: dict[str, tuple[str, ...]] = {
    "postgr": ("postgresql", "database", "数据库"),
    "postgresql": ("postgres", "database", "数据库"),
    "sqlite": ("database", "数据库"),
    "mysql": ("database", "数据库"),
    "redi": ("cache", "缓存"),
    "npm": ("node", "javascript", "package-manager"),
    "pnpm": ("npm", "node", "package-manager"),
    "yarn": ("npm", "node", "package-manager"),
    "pip": ("python", "package-manager"),
    "uv": ("python", "package-manager"),
    "pytest": ("python", "testing", "测试"),
    "jest": ("javascript", "testing", "测试"),
    "test": ("testing", "测试"),
    "tab": ("indentation", "whitespace", "缩进"),
    "space": ("indentation", "whitespace", "缩进"),
    "indent": ("tabs", "whitespace", "缩进"),
    "makefil": ("make", "build", "构建"),
    "cent": ("money", "currency", "integer", "金额"),
    "price": ("money", "currency", "金额"),
    "amount": ("money", "currency", "金额"),
    "float": ("decimal", "precision", "浮点"),
    "env": ("environment", "secrets", "config", "配置"),
    "secret": ("credentials", "security", "密钥"),
    "password": ("credentials", "secrets", "密码"),
    "commit": ("git", "version-control", "提交"),
    "branch": ("git", "version-control", "分支"),
    "pull": ("review", "git", "github"),
    "pr": ("pull-request", "review", "git"),
    "merg": ("git", "review", "合并"),
    "lint": ("linter", "style", "代码检查"),
    "format": ("formatter", "style", "格式化"),
    "deploy": ("release", "ops", "部署"),
    "docker": ("container", "容器"),
    "k8s": ("kubernetes", "cluster"),
    "kubernet": ("k8s", "cluster"),
    "ci": ("pipeline", "automation", "持续集成"),
    "migrat": ("database", "schema", "迁移"),
    "timezon": ("time", "utc", "时区"),
    "utc": ("timezone", "time", "时区"),
    "typescript": ("javascript", "types"),
    "camelcas": ("naming", "命名"),
    "snake_cas": ("naming", "命名"),
    "api": ("endpoint", "接口"),
    "log": ("logging", "日志"),
    "数据": ("database",),
    "据库": ("database",),
    "测试": ("test", "testing"),
    "部署": ("deploy", "release"),
    "缩进": ("indentation", "tabs"),
    "金额": ("money", "amount"),
    "价格": ("price", "money"),
    "浮点": ("float", "decimal"),
    "分支": ("branch", "git"),
    "提交": ("commit", "git"),
    "依赖": ("dependency", "package"),
    "接口": ("api", "endpoint"),
    "日志": ("logging", "log"),
    "配置": ("config", "settings"),
    "密码": ("password", "secret"),
    "文档": ("docs", "documentation"),
}
# The last resort, so that every memory has MIN_KEYWORDS: words naming its kind, in the
# memory's language.
_KIND_WORDS: dict[str, tuple[str, ...]] = {
    "rule": (
        "rule",
        "convention",
        "team",
        "project",
        "standard",
        "guideline",
        "policy",
        "practice",
    ),
    "project": (
        "project",
        "knowledge",
        "team",
        "codebase",
        "repository",
        "context",
        "setup",
        "fact",
    ),
    "user": ("user", "preference", "personal", "taste", "habit", "style", "workflow", "profile"),
    "feedback": (
        *("feedback", "correction", "assistant", "behaviour", "interaction", "instruction"),
        *("style", "collaboration"),
    ),
    "reference": (
        "reference",
        "docs",
        "documentation",
        "link",
        "resource",
        "pointer",
        "guide",
        "source",
    ),
    "lesson": (
        "lesson",
        "error",
        "fix",
        "pitfall",
        "troubleshooting",
        "failure",
        "workaround",
        "problem",
    ),
}
_KIND_WORDS_ZH: dict[str, tuple[str, ...]] = {
    "rule": ("规则", "约定", "规范", "团队", "项目", "准则", "惯例", "要求"),
    "project": ("项目", "知识", "团队", "代码库", "仓库", "背景", "配置", "事实"),
    "user": ("用户", "偏好", "个人", "习惯", "风格", "口味", "工作流", "画像"),
    "feedback": ("反馈", "纠正", "助手", "行为", "交互", "指示", "风格", "协作"),
    "reference": ("参考", "文档", "资料", "链接", "资源", "指引", "来源", "说明"),
    "lesson": ("教训", "错误", "修复", "陷阱", "排错", "失败", "绕过", "问题"),
}


def fill_keywords(keywords: tuple[str, ...], content: str, kind: str) -> tuple[str, ...]:
    """`keywords` completed to MIN_KEYWORDS (the README promises 8 to 13, as an LLM gives):
    first terms related to those of `content` (_RELATED), then words naming the kind."""
    out = list(keywords[:MAX_KEYWORDS])
    seen = {t for k in out for t in tokenize(k)} | {k.casefold() for k in out}

    def add(word: str) -> None:
        terms = tokenize(word)
        if len(out) >= MIN_KEYWORDS or not terms or word.casefold() in seen:
            return
        if all(t in seen for t in terms):
            return
        out.append(word)
        seen.add(word.casefold())
        seen.update(terms)

    chinese = bool(CJK.search(content))
    for term in dict.fromkeys(tokenize(content)):
        for word in _RELATED.get(term, ()):
            if chinese or not CJK.search(word):  # Chinese words only for a Chinese memory
                add(word)
    table = _KIND_WORDS_ZH if chinese else _KIND_WORDS
    for word in (*table.get(kind, ()), *_KIND_WORDS.get(kind, _KIND_WORDS["project"])):
        add(word)
    return tuple(out)


def clip(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,.;:，。") + "…"


def _title_of(content: str) -> str:
    text = re.sub(r"^TODO:\s*", "TODO: ", content).rstrip("。.!！")
    if CJK.search(text[:20]):
        return clip(text, 30)
    words = text.split()
    return clip(" ".join(words[:9]), MAX_TITLE_CHARS)


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 1.0 if a == b else 0.0
    return len(a & b) / len(a | b)


def finalise(drafts: Iterable[Draft]) -> list[ExtractedMemory]:
    kept: list[tuple[Draft, set[str]]] = []
    for draft in drafts:
        content, found = redact(clip(draft.content, MAX_CONTENT_CHARS))
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
        title = redact(draft.title or _title_of(draft.content))[0]
        keywords = tuple(
            k for k in (redact(k)[0] for k in auto_keywords(draft.content)) if REDACTED not in k
        )
        keywords = fill_keywords(keywords, draft.content, draft.kind)
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
