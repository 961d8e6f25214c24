"""Conventions stated without a trigger word.

People state a team's conventions as plain statements: "Indent with tabs, never spaces, in the
Makefile", "Prices are integer cents, never floats", "Column names in snake_case", "金额按分存
整数，不用浮点数", "JSON key 一律用 camelCase". None of them says "always", "I prefer" or
"don't" up front, so the trigger rules (`sentences`) miss them. This rule catches a sentence
that states a norm in its own body:

* a **contrast** that names the alternative: "X, never Y", "X, not Y", "X, no Y", "X instead
  of Y", "X rather than Y", "X only" / "，不用 Y", "，不是 Y", "而不是 Y", "只用 Y";
* or a **norm word** inside the sentence: "always", "never", "must", "every", "whenever" /
  "一律", "统一", "必须", "务必", "都要", "只能", "只用", "每次都".

To keep task requests and one-off remarks out ("Fix it with a loop, not recursion", "The bug
is in views.py, not models.py", "帮我把超时改成 30 秒，不是 60"), the sentence must open with a
convention verb (use, store, keep, indent, name, write, put, run, open, commit, …) or a noun
phrase — not a pronoun, "I", a task verb (add, fix, rename, change, …), a bug word, or in
Chinese 帮我 / 麻烦 / 把…改 — and it must not be in the past tense or transient ("for now",
"today", "这次", "先").

Its kind comes from what it is about (`scope.statement_kind`): the team's project → a rule when
it prescribes (a convention verb, a norm word, "never"), project knowledge when it describes
("Schedules are in Europe/Madrid time, not UTC"); the interaction → feedback; otherwise
nothing. Importance 3 with "never", "always", "must", "一律", "必须", "务必", else 2.
"""

from __future__ import annotations

import re

from memoryhub.memories.kinds import Kind
from memoryhub.pipeline.extractor.keywords import CJK
from memoryhub.pipeline.extractor.scope import describes_system, fact_subcategory, statement_kind

_CONTRAST_EN = re.compile(
    r"""(?:,|;|—|–|\s-\s|\()\s*(?:and\s+|but\s+)?(?:never|not|no)\s+
        (?!(?:sure|yet|now|really|quite|too|so|just|that|this|it|a|an|the\s+same|much|all|always|
            even|anymore|longer|problem|worries|idea|big\s+deal|need|thanks|rush)\b)[`\w.]
      | \b(?:instead\s+of|rather\s+than)\b
      | \bonly\s*[.!]*\s*$""",
    re.VERBOSE | re.IGNORECASE,
)
_NORM_EN = re.compile(
    r"\b(?:always|never|must|mustn'?t|every|everything|anything|each|exclusively|whenever|nobody|"
    r"no\s+one|go(?:es)?\s+through|lands?\s+(?:through|via)|at\s+least|everywhere|nothing|nowhere|"
    r"(?:is|are)\s+(?:read|written|sent|done|handled|made|passed)\s+(?:through|via|as)|"
    r"only\s+(?:in|on|for|through|from|via|with|at|by|after|before|when|rename|use|run|inside|"
    r"within))\b"
    r"|^(?:the\s+)?(?:[\w-]+\s+){0,2}[\w-]+s\s+gets?\s+(?:a|an)\b|^(?:the\s+)?[A-Z]+\s+gets\s+(?:a|an)\b"
    # "Use black with line length 100, that's what the pre-commit hook runs": the team's tooling
    # "Keep PRs under 400 lines": a limit
    r"|^(?:please\s+)?(?:keep|cap|limit)\b[^.]{1,40}\b(?:under|below|at\s+most|no\s+more\s+than|within)\s+\d"
    r"|\bthat'?s\s+what\s+(?:the\s+|our\s+)?[\w-]+(?:\s+[\w-]+)?\s+(?:runs|uses|expects|checks|enforces)\b"
    # "Public functions need docstrings": what every thing of a kind must have
    r"|^(?:all\s+|new\s+)?(?:[\w-]+\s+){0,2}[\w-]+s\s+(?:need|require)\s+(?!(?:a|an|the|to|some|more|this|that|it)\b)\w",
    re.IGNORECASE,
)
_STRONG_EN = re.compile(r"\b(?:always|never|must|mustn'?t|exclusively)\b", re.IGNORECASE)
# "，不引入…", "日志里不打…": a negated verb after a comma or a place says what not to do.
_NEGATED_VERB_ZH = (
    r"(?:[，,、]\s*|(?<=[里中上下内]))(?:而)?(?:不|别|禁止|不能|不许|不准|不再)(?:要)?"
    r"(?:随便|乱|轻易|手动|私自|擅自)?"
    r"(?:用|走|直接|打印?|写|放|存|提交|推|传|带|输出|记录|暴露|引入|发|改|加|建|开|动|删)"
)
_CONTRAST_ZH = re.compile(
    r"[，,、]\s*(?:而)?(?:不是|不用|不走|不直接|不能|不许|不准|不再|别用|别直接|禁止)|而不是|而非|"
    + _NEGATED_VERB_ZH
)
_PRESCRIBES_ZH = re.compile(_NEGATED_VERB_ZH)
_NORM_ZH = re.compile(
    r"一律|统一|必须|务必|都要|只能|只用|只走|只在|只允许|每次都|按照?[^，。,；;]{1,30}?(?:来|写|走|执行)"
    # "所有定时任务由 xxl-job 调度", "所有接口都…": what holds for every thing of a kind
    r"|^(?:所有|全部|每个|每一个|任何)[^，。,；;？?]{1,20}?(?:都|由|一律|统一)"
    r"|遵循|遵守|至少要?|才能|都走|都用|都放|都按|命名(?:是|用|按|规则)|(?:之?前)(?:都)?(?:要|必须)|固定"
    # "状态管理用 Zustand", "命名用 snake_case": a topic and the tool or form the team uses for it
    r"|^(?!帮我|麻烦|请帮|我(?!们)|你)[^，。,；;？?]{2,24}?(?:统一|都|一律|只)?(?:用|使用|走)\s*[^\s这那它]"
)
_STRONG_ZH = re.compile(r"一律|必须|务必|严禁|禁止")
_CONVENTION_VERB = (
    r"use|store|keep|indent|name|write|put|place|format|run|open|go\s+through|stick|return|log|"
    r"send|pin|tag|prefix|suffix|commit|push|merge|rebase|squash|deploy|release|ship|test|lint|"
    r"build|import|export|handle|represent|express|round|encode|quote|serialize|validate|"
    r"document|branch|target|call|pass|raise|wrap|save|compare|sort|order|price|bill|count|"
    r"declare|annotate|structure|organize|group|limit|cap|default|route|cache|review|sign|"
    r"version|pull|install|prefer|reference|emit|mark|guard|check\s+in|develop|configure|"
    r"default|write|read\s+from|load|inject|mock|stub|seed|migrate|back\s+up|rotate"
)
_IMPERATIVE = re.compile(rf"^(?:please\s+)?(?:{_CONVENTION_VERB})\b", re.IGNORECASE)
_BAD_START_EN = re.compile(
    r"""^(?:it|it's|its|this|that|these|those|there|here|he|she|they|i|i'm|i've|i'd|i'll|my|me|
        what|which|who|so|because|since|then|thanks|thank|yes|no|ok|okay|sorry|hm+|well|
        let'?s|add|fix|rename|change|remove|delete|update|move|replace|refactor|bump|revert|
        implement|create|try|check|look|investigate|debug|find|show|give|help|make|go|do|did|
        does|can|could|would|will|should|shall|may|might|just|also|now|today|first|next|
        the\s+(?:bug|error|issue|problem|typo|crash|failure|fix|diff|regression|exception|
            test\s+(?:is|was)|build\s+(?:is|was)|page|button|output|result|log|screenshot))\b""",
    re.VERBOSE | re.IGNORECASE,
)
_YOU_NORM = re.compile(r"^you\s+(?:should|must|need\s+to|have\s+to|always|never)\b", re.I)
_PAST = re.compile(
    r"\b(?:was|were|did|had|failed|broke|broken|happened|worked|tried|said|got|went|returned|"
    r"crashed|caused|showed|found|saw|wrote|added|changed|fixed|removed|used\s+to)\b",
    re.IGNORECASE,
)
_BAD_START_ZH = re.compile(
    r"^(?:帮我|帮忙|麻烦|请帮|给我|能不能|可不可以|可以|是不是|要不要|我(?!们)|你(?!们)|这|那|它|刚才|"
    r"昨天|今天|现在|先|这次|本次|问题|报错|错误|bug)"
)
_EDIT_ZH = re.compile(r"把.{0,24}?(?:改|加|删|换|移|调|去掉)|改成|改为")
# A verb that describes how things are ("Schedules are in UTC, not local time").
_DESCRIBES = re.compile(
    r"\b(?:is|are|was|were|runs?|lives?|sits?|uses?|stores?|goes|go|has|have|means?|takes?|"
    r"belongs?|comes?|happens?|gets?|needs?|works?|depends?|reads?|writes?|holds?|points?)\b"
    r"|是|在|用|走|跑|放|存|叫|有",
    re.IGNORECASE,
)
# How the speaker wants replies ("Keep replies short", "回复我的时候简短一点"): standing feedback.
_REPLY_STYLE = re.compile(
    r"^(?:please\s+)?(?:keep|make|be|stay)\s+(?:your\s+|the\s+|my\s+)?"
    r"(?:replies|answers|responses|messages|explanations|summaries)\b"
    r"|^(?:please\s+)?(?:skip|drop|leave\s+out|cut)\b.{1,40}\bin\s+(?:your|the)\s+"
    r"(?:answers|replies|responses|messages)\b"
    r"|^(?:(?:when|if)\s+(?:unsure|in\s+doubt)\s*,\s*)?(?:always\s+)?ask\s+(?:me\s+)?(?:first\s+)?"
    r"before\b"
    r"|^(?:以后|今后|下次|往后)?(?:回复|回答)(?:我)?(?:的时候)?(?:请)?(?:尽量)?"
    r"(?:简短|简洁|精简|短一点|用中文|用英文)"
    r"|^(?:以后|今后|下次|往后)?(?:回复|回答)[^，。]{0,6}?(?:别|不要|只)"
    # "回答的时候先给结论再讲原因": how to answer, whatever the instruction
    r"|^(?:以后|今后|下次|往后)?(?:回复|回答|解释|汇报)(?:我)?(?:的时候|时)[^，。？?]{2,30}",
    re.IGNORECASE,
)
# Workflow verbs whose bare use states how the team works ("Squash-merge, with the ticket id in
# the title", "Prefix migrations with the date"); with a determiner they are tasks ("merge the PR").
_WORKFLOW_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:squash(?:-merge)?|rebase|indent|prefix|sign|tag|commit)\b"
    r"(?!\s+(?:the|this|that|it|these|those|my|your|a|an)\b)",
    re.IGNORECASE,
)
_TEAM_SUBJECT = re.compile(r"^(?:we|we're|our|the\s+team)\b|^(?:我们|咱们|团队)", re.IGNORECASE)
_TRANSIENT = re.compile(
    r"\b(?:yet|for\s+now|right\s+now|rn|atm|this\s+time|today|tonight|tomorrow|at\s+the\s+moment|"
    r"in\s+this\s+(?:pr|commit|change|task|branch|ticket)|for\s+this\s+(?:pr|commit|change|task|one))\b"
    r"|先不|先别|暂时|这次|本次|现在|今天|今晚|明天|目前|还没|试试|试一下|看看|一下",
    re.IGNORECASE,
)


# A sentence that reports a problem is about the task at hand, not a convention.
_PROBLEM = re.compile(
    r"\b(?:5\d\d|404|fails?|failing|crash\w*|broken|bug|slow|flaky|time(?:s|d)?\s*out|"
    r"stuck|wrong|missing|double[- ]counts?|stopped|doesn'?t\s+work|not\s+working|crawls?|"
    r"jumps?\s+to|spikes?|chews?)\b"
    r"|报错|错误|失败|超时|卡顿|不显示|挂了|崩溃|异常|重复入账|打不开|不生效|错乱|乱了",
    re.IGNORECASE,
)


def reports_problem(sentence: str) -> bool:
    return bool(_PROBLEM.search(sentence))


def convention(sentence: str) -> tuple[str, int, str] | None:
    """(kind, importance, subcategory) of a convention stated without a trigger word, or None
    (see the module docstring)."""
    if _REPLY_STYLE.match(sentence) and not _TRANSIENT.search(sentence):
        return Kind.FEEDBACK.value, 2, ""
    zh = bool(CJK.search(sentence))
    contrast = _CONTRAST_EN.search(sentence) or (zh and _CONTRAST_ZH.search(sentence))
    norm = (
        _NORM_EN.search(sentence)
        or (zh and _NORM_ZH.search(sentence))
        or _WORKFLOW_IMPERATIVE.match(sentence)
    )
    # "…, otherwise we lose jobs on crash": a reason given for a norm is no problem report
    head = re.split(r"\b(?:otherwise|or\s+else|so\s+that|because)\b|否则|不然|以免|免得", sentence)[
        0
    ]
    if not (contrast or norm) or _TRANSIENT.search(sentence) or reports_problem(head):
        return None
    if re.match(r"^(?:never\s+mind|no\s+(?:worries|problem|need))\b", sentence, re.I):
        return None
    if not CJK.search(sentence) and len(re.findall(r"[A-Za-z]{2,}", sentence)) < 3:
        return None  # "2, 3gb each.": a fragment of the sentence before
    latin_start = re.match(r"[\s`\"'(]*[A-Za-z]", sentence)
    if latin_start:
        if _BAD_START_EN.match(sentence) and not _YOU_NORM.match(sentence):
            return None
    elif _BAD_START_ZH.match(sentence) or _EDIT_ZH.search(sentence):
        return None
    if _PAST.search(sentence):
        return None
    imperative = bool(_IMPERATIVE.match(sentence) or _YOU_NORM.match(sentence))
    normative = (
        imperative
        or bool(norm)
        or bool(zh and _PRESCRIBES_ZH.search(sentence))
        or bool(re.search(r"\bnever\b", sentence, re.I))
        or not _DESCRIBES.search(sentence)  # "Tabs, not spaces, for the frontend": verbless
        or bool(re.search(r"[,;]\s*no\s+\w", sentence, re.I))  # "…, no public fields"
    )
    if (
        _TEAM_SUBJECT.match(sentence)
        or describes_system(sentence)
        # "合到 release 分支后 ArgoCD 会自己同步到 staging": what the tooling does on its own
        or re.search(
            r"\bautomatically\b|\bon\s+its\s+own\b|\bby\s+itself\b|会自动|会自己|自动(?:同步|部署|触发)",
            sentence,
            re.I,
        )
    ):
        # "we use X, not Y" / "我们后端统一用 X" says what the team does; "Everything UI is
        # LiveView" what the system is
        normative = False
    kind = statement_kind(sentence, normative=normative)
    if kind is None and normative and (imperative or _STRONG_EN.search(sentence) or norm):
        kind = Kind.RULE.value  # a plain norm in a coding session is the team's ("Every resource…")
    if kind is None or kind == Kind.USER.value:
        return None  # the speaker's own taste is left to the preference rule
    strong = _STRONG_EN.search(sentence) or (zh and _STRONG_ZH.search(sentence))
    subcategory = fact_subcategory(sentence) if kind == Kind.PROJECT.value else ""
    return kind, 3 if strong else 2, subcategory
