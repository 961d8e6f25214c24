"""Durable statements told apart by their structure, not by trigger phrases.

The trigger rules (`sentences`, `conventions`) catch the phrasings they were written for and
about half of the paraphrases of the next set of sessions. This module scores any user
sentence the rules left alone by the SHAPE of what it says, with broad lexical classes rather
than phrase lists:

* durable: a generic, present-tense, imperative or modal statement about how things are done
  or where things live ("X goes through Y", "nobody calls X directly", "X live under Y",
  "keep X thin", "for me, X is easier", "金额都按分存", "接口统一走 Y"), naming code, paths,
  tools, files or versions, often with a universality word (every, only, never, 都, 一律) or
  the alternative it rules out ("…, not Y", "，不用 Y");
* one-off: requests and tasks ("add…", "fix…", "帮我…", "把 X 改成 Y"), questions, problem
  and status reports ("…fails", "…stopped", "报错"), past events, things said about this task
  only ("for now", "in this PR", "先", "这次"), pointers back at context ("it", "this", "这个").

`features(sentence)` names the classes a sentence falls in; `score` is a logistic model over
them whose weights (`statement_weights.WEIGHTS`) are fitted by `bench/fit_statement_model.py`
on the tuned corpus sessions (never on the validation or held-out ones). The model is a plain
sum of weights, so every decision can be explained by listing the features that fired
(`explain`). A second model, fitted the same way, tells a norm (kind rule: what to do) from a
description (kind project: what is); who the statement is about (the interaction, the
speaker's taste, the team's project) is decided by `scope`, as for every other rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from memoryhub.memories.kinds import Kind
from memoryhub.pipeline.extractor.conventions import reports_problem
from memoryhub.pipeline.extractor.keywords import CJK
from memoryhub.pipeline.extractor.scope import describes_system, is_interaction, statement_kind

_I = re.IGNORECASE
_X = re.VERBOSE | re.IGNORECASE


def _rx(pattern: str, flags: int = _I) -> Callable[[str], bool]:
    compiled = re.compile(pattern, flags)
    return lambda s: bool(compiled.search(s))


# --- English classes --------------------------------------------------------------------------

_TASK_VERB = (
    r"add|fix|build|ship|look|check|bump|rename|refactor|upgrade|downgrade|revert|make|create|"
    r"remove|delete|update|implement|help|try|show|give|take|resend|move|dig|investigate|debug|"
    r"find|figure|write\s+(?:a|an|the|me|some)|set\s+up|wire|hook\s+up|port|clean\s+up|"
    r"change|replace|drop|install|deploy|merge|push|open|close|finish|continue|redo|undo|"
    r"apply|rerun|re-run|restart|tweak|adjust|increase|decrease|raise|lower|double|convert|"
    r"send|paste|tell|explain|list|print|compare|review|test|see|go\s+ahead|let'?s|let\s+me"
)
_CONVENTION_VERB = (
    r"use|keep|store|put|place|indent|name|prefix|stick|prefer|always|never|don'?t|do\s+not|"
    r"avoid|run|write|wrap|pass|route|log|return|treat|pin|tag|squash|rebase|sign|commit|"
    r"format|default|leave|stay|favo(?:u)?r|round|prefix|suffix|encode|serialize|validate|"
    r"document|annotate|quote|cache|version|rotate|review|split|guard|mark"
)
_GENERIC_VERB = (
    r"is|are|goes|go|lives?|runs?|stays?|gets?|happens?|carr(?:y|ies)|belongs?|comes?|lands?|"
    r"uses?|talks?|ships?|takes?|sits?|holds?|owns?|handles?|reads?|writes?|calls?|points?|"
    r"starts?|ends?|means?|needs?|depends?|speaks?|flows?|passes|hits?|wraps?|returns?|"
    r"emits?|sends?|keeps?|lives|contains?|expects?|follows?|mirrors?|matches?|loads?|"
    r"builds?|deploys?|publishes|consumes?|produces?|exposes?|accepts?|owns?"
)
_PAST_EN = (
    r"\b(?:was|were|did|had|failed|broke|happened|worked|tried|said|got|went|crashed|caused|"
    r"showed|saw|wrote|changed|fixed|removed|stopped|started|added|regenerated|upgraded|"
    r"reported|noticed|complained|filed|mentioned|"
    r"yesterday|last\s+(?:week|night|time|release|sprint)|earlier|ago)\b"
)
_TRANSIENT_EN = (
    r"\b(?:yet|for\s+now|right\s+now|this\s+time|today|tonight|tomorrow|at\s+the\s+moment|"
    r"this\s+(?:pr|commit|change|task|branch|ticket|week|morning|afternoon|sprint)|"
    r"for\s+this\s+(?:pr|commit|change|task|one)|quick(?:ly)?|a\s+bit|first|then|"
    r"next|again|still|currently|anymore|by\s+friday|asap)\b"
)
_PROBLEM_EN = (
    r"\b(?:5\d\d|4\d\d|fails?|failing|crash\w*|broken|broke|bug|slow|flaky|flakiness|"
    r"time(?:s|d)?\s*out|timing\s+out|stuck|missing|stopped|doesn'?t\s+work|not\s+working|"
    r"error(?:s|ed)?|exception|off\s+by|double[- ]counts?|jitters?|leaks?|hangs?|"
    r"dropped|regress\w*|aren'?t\s+getting|isn'?t|can'?t\s+(?:find|connect|load))\b"
)
_UNIVERSAL_EN = (
    r"\b(?:every|everything|everywhere|all|always|never|nobody|no\s+one|nothing|nowhere|"
    r"anything|anywhere|any|each|only|whenever|exclusively|solely|end\s+to\s+end|"
    r"by\s+default|as\s+a\s+rule|in\s+general|generally|across\s+the\s+(?:board|repo|codebase))\b"
)
_CONTRAST_EN = (
    r"(?:,|;|—|–|\s-\s|\()\s*(?:and\s+|but\s+)?(?:never|not|no)\s+[`\w.]"
    r"|\b(?:instead\s+of|rather\s+than|over|not\s+(?:in|on|from|through|via|with|by|as))\b"
)
_MODAL_EN = (
    r"\b(?:must|mustn'?t|should|shouldn'?t|need\s+to|needs\s+to|has\s+to|have\s+to|"
    r"is\s+required|are\s+required|required\s+to|supposed\s+to|expected\s+to)\b"
)
_TASTE_EN = (
    r"\b(?:prefer\w*|like|love|hate|rather|tend|habit|used\s+to|fan\s+of|easier|harder|"
    r"personally|for\s+me|to\s+me|person|my\s+(?:own\s+)?(?:way|style|taste|setup|workflow|"
    r"machine|editor))\b"
)
_REQUEST_EN = (
    r"\b(?:can|could|would|will)\s+you\b|\bplease\b|\blet'?s\b|\bi\s+(?:want|need)\s+you\b"
    r"|\b(?:help\s+me|for\s+me\s+to|me\s+know)\b"
)
_PRONOUN_START_EN = r"^(?:it|it'?s|this|that|these|those|here|there|they|he|she|which)\b"
_IT_IS_A_NAME = r"^(?:it'?s|it\s+is|this\s+is)\s+(?:a|an)?\s*[A-Z`][\w.+-]*"
_FIRST_PERSON_START = r"^(?:i|i'm|i'd|i've|i'll|my|me)\b"
_TEAM_EN = r"\b(?:we|we're|our|ours|us|team|everyone|everybody|nobody|no\s+one|folks)\b"
# "Prefabs are…", "Outgoing calls carry…": a bare plural subject states what holds for all of them
_BARE_PLURAL_START = (
    r"^(?:all\s+|every\s+|each\s+)?(?:[A-Za-z][\w-]*\s+){0,2}[A-Za-z][\w-]*s\s+"
    r"(?:are|go|get|live|run|stay|carry|belong|come|land|use|talk|ship|take|sit|hold|need|must|"
    r"should|never|always|only|have|follow|return|pass|read|write|call|point|depend)\b"
)
_LOCATION_EN = (
    r"\b(?:lives?|live|sits?|is\s+at|are\s+at|is\s+in|are\s+in|is\s+under|are\s+under|"
    r"runs?\s+on|hosted\s+on|deployed\s+(?:on|to)|is\s+on|are\s+on|we'?re\s+on|"
    r"stored\s+in|kept\s+in|found\s+in|defined\s+in|configured\s+in)\b"
    # "happen on the Mac mini", "end up in the private S3 bucket", "sit under infra/"
    r"|\b(?:happens?|runs?|lives?|sits?|stays?|ends?\s+up|is|are)\s+(?:only\s+)?"
    r"(?:in|on|under|at|inside)\s+(?:the\s+|our\s+)?(?:[A-Z`]|[\w.-]+/)"
)
_COPULA_NAME_EN = (
    r"\b(?:is|are|'s|(?:we'?re|is|are)\s+on)\s+(?:a\s+|an\s+)?(?:[A-Z`][\w.+#-]*|\d)"
    # "the events table is partitioned by hour": a particular thing, described
    r"|(?i:^(?:(?:no|nope|actually)\W+)?the\s+[\w-]+(?:\s+[\w-]+)?\s+(?:is|are)\b)"
)
_DEFINITE_START = r"^the\s+\w+"
_PASSIVE_PRESENT = r"\b(?:is|are|get|gets)\s+(?:\w+ly\s+)?\w+(?:ed|en|wn|lt|nt)\b"
_IMPERATIVE_CONVENTION = (
    r"^(?:(?:going|moving)\s+forward,?\s+|from\s+now\s+on,?\s+|please\s+)?"
    rf"(?:{_CONVENTION_VERB})\b"
)
_IMPERATIVE_THE_ONE = (
    # a plain lowercase noun: "the helper", "the new flag" (not "the Toggle", "the `logger`")
    rf"^(?:please\s+)?(?:{_CONVENTION_VERB})\s+(?:the|my|your)\s+(?-i:(?:[a-z-]+\s+)?[a-z-]*[a-rt-z])\b"
    r"(?!\s+(?:and|or)\b)(?![`(])"
)
_IMPERATIVE_TASK = rf"^(?:please\s+|now\s+|also\s+|just\s+|then\s+)*(?:{_TASK_VERB})\b"
_NEG_NORM_EN = (
    r"[,;]\s*no\s+\w|\b(?:nobody|no\s+one|nothing|never|don'?t|do\s+not|doesn'?t|"
    r"isn'?t\s+allowed|not\s+allowed|no\s+\w+\s+(?:in|on|outside|inside|from))\b"
)

# --- lexical classes shared by both languages -------------------------------------------------

_CODE_SPAN = r"`[^`]+`"
_PATH = (
    r"(?:[\w.-]+/)+[\w.-]*|\b[\w-]+\.(?:py|ts|tsx|js|jsx|go|rs|rb|java|kt|swift|php|vue|yml|"
    r"yaml|json|toml|md|sql|sh|cfg|ini|xml|tf|proto|gradle|lock|env)\b"
)
_IDENT = r"\b\w+_\w+\b|\b[a-z]+[A-Z]\w*\b|\b\w+\(\)|\b[A-Z][a-z]+[A-Z]\w*\b|--?[a-z][\w-]+"
_VERSION = r"\b[vV]?\d+(?:\.\d+)+\b|\b[A-Za-z]+\s?\d{1,2}\b"
_NAME_MID = r"(?<=[\w,;:)]\s)[A-Z][A-Za-z0-9.+-]*[A-Za-z0-9]"
_ACRONYM = r"\b[A-Z]{2,}[a-z]?s?\b"
_NUMBER = r"\d"

# --- Chinese classes ---------------------------------------------------------------------------

_ZH_REQUEST = r"帮我|帮忙|麻烦|请帮|给我|看看|看一下|查一下|查查|试试|试一下|一下|吧[。！!]?$"
_ZH_EDIT = r"把.{0,30}?(?:改|加|删|换|移|调|去掉|拆|合)|改成|改为|换成|调到|加个|加一个|去掉"
_ZH_TRANSIENT = (
    r"(?<![前后])先|这次|本次|今天|今晚|明天|现在|暂时|目前|刚才|刚刚|马上|临时|等会|待会"
)
_ZH_PROBLEM = (
    r"报错|错误|失败|超时|卡顿|卡死|崩溃|闪退|不显示|错乱|挂了|异常|白屏|延迟越来越|跑不过|"
    r"连不上|打不开|不生效|重复入账|慢|bug|问题"
)
_ZH_QUESTION = r"吗|呢[。？?]?$|要不要|是不是|能不能|可不可以|有没有|为什么|怎么|为啥|是否|多少|哪"
_ZH_UNIVERSAL = (
    r"一律|统一|都|所有|全部|每个|每次|每一|任何|始终|总是|永远|固定|只(?:能|用|走|在|放|有)?|"
    r"一概|全都|凡是"
)
# "，不用 Y", "日志里不打…": a negated verb after a comma or a place says what not to do
_ZH_NEG_NORM = (
    r"(?:[，,、]|^|[里中上下内])\s*(?:而)?(?:不|别|禁止|不要|不能|不许|不准|严禁|不得)"
    r"(?!是|对|错|行|了|会|太|知道)"
)
_ZH_MODAL = r"要|必须|务必|得|需要|应该|应当|才能|之前|前要|前(?:都)?先|尽量"
_ZH_TEAM = r"我们|咱们|团队|大家|项目|仓库|公司"
_ZH_PLACE = (
    r"在.{1,30}?(?:里|下|中|上)|放(?:在)?|存(?:在|到)?|走|跑在|部署在|托管在|位于|发到|写在|来自"
)
_ZH_LOCATION = (
    r"(?:在|放|跑在|部署在|托管在|位于|发到)\s*[^，。,；;]{1,30}?"
    r"(?:里|下面?|中|上)?(?:[，。,；;]|$)"
)
_ZH_COPULA = r"是|用|按|以|为"
_ZH_FIRST_PERSON = r"^(?:我(?!们)|我个人|我自己)"
_ZH_TASTE = r"喜欢|习惯|偏好|倾向|更愿意|顺手|舒服|看得懂|方便|讨厌"
_ZH_PRONOUN_START = r"^(?:这|那|它|这个|那个|这里|那里)"
_ZH_CODE = (
    r"代码|依赖|函数|方法|接口|表|迁移|数据库|字段|模块|文件|目录|配置|测试|变量|类型|注释|日志|"
    r"组件|样式|分支|框架|脚本|线上|生产|服务|集群|镜像|提交|合并|缩进|命名|格式|金额|价格|回调|"
    r"签名|请求|流水线|密钥|告警|发版|时区|时间戳|环境|构建|打包|版本|文档|前端|后端|层|库|包"
)
_ZH_PAST = r"了(?![解])|过(?!滤|期|程)|昨天|上次|之前(?!要|都|必须)|刚"


def _zh(s: str) -> bool:
    return bool(CJK.search(s))


def _latin_words(s: str) -> int:
    return len(re.findall(r"[A-Za-z][A-Za-z'-]*", s))


_CLASSES: dict[str, Callable[[str], bool]] = {
    # structure (English)
    "en_task_start": _rx(_IMPERATIVE_TASK),
    "en_convention_start": _rx(_IMPERATIVE_CONVENTION),
    "en_pronoun_start": _rx(_PRONOUN_START_EN),
    "en_it_is_a_name": _rx(_IT_IS_A_NAME, 0),
    "en_first_person_start": _rx(_FIRST_PERSON_START),
    "en_definite_start": _rx(_DEFINITE_START),
    "en_bare_plural_start": _rx(_BARE_PLURAL_START),
    "en_generic_verb": _rx(rf"\b(?:{_GENERIC_VERB})\b"),
    "en_passive_present": _rx(_PASSIVE_PRESENT),
    "en_past": _rx(_PAST_EN),
    "en_transient": _rx(_TRANSIENT_EN),
    "en_problem": _rx(_PROBLEM_EN),
    "en_universal": _rx(_UNIVERSAL_EN),
    "en_contrast": _rx(_CONTRAST_EN),
    "en_modal": _rx(_MODAL_EN),
    "en_neg_norm": _rx(_NEG_NORM_EN),
    "en_taste": _rx(_TASTE_EN),
    "en_request": _rx(_REQUEST_EN),
    "en_team": _rx(_TEAM_EN),
    "en_you": _rx(r"\byou\b"),
    "en_pronoun_ref": _rx(
        r"\b(?:it|them|this|that|these|those)\b(?!\s+(?:repo|repository|project|codebase|team|way|"
        r"service|app|one\s+is))"
    ),
    # "the new store methods", "here", "the above": something of this task, not a kind of thing
    "en_particular": lambda s: bool(
        re.search(
            r"\b(?:the\s+(?:new|old|above|following|same|last|current|remaining)|here|above|"
            r"for\s+the\s+\w+\s+(?:page|screen|endpoint|method|methods|function|test|file|ticket))\b",
            _repo_here(s),
            re.I,
        )
    ),
    "zh_pronoun_ref": _rx(r"这个|那个|这里|那里|这些|那些|它"),
    "en_keep_state": _rx(r"^(?:please\s+)?(?:keep|leave|stay)\b"),
    "for_me": _rx(
        r"^(?:for|to)\s+me\b|\b(?:for|to)\s+me\s*[,.]|\bpersonally\b|对我来说|对我而言|我个人|我自己"
    ),
    "en_directly": _rx(r"\b(?:directly|by\s+hand|manually|inline|raw)\b"),
    "en_progressive": _rx(r"\b(?:i'?m|we'?re|is|are)\s+\w+ing\b"),
    "en_location": _rx(_LOCATION_EN),
    "en_copula_name": _rx(_COPULA_NAME_EN, 0),
    "en_team_subject": _rx(r"^(?:(?:actually|no|nope)\W+)?(?:we|we're|we've|our)\b", _I),
    # structure (Chinese)
    "zh_request": _rx(_ZH_REQUEST),
    "zh_edit": _rx(_ZH_EDIT),
    "zh_transient": _rx(_ZH_TRANSIENT),
    "zh_problem": _rx(_ZH_PROBLEM),
    "zh_question": _rx(_ZH_QUESTION),
    "zh_universal": _rx(_ZH_UNIVERSAL),
    "zh_neg_norm": _rx(_ZH_NEG_NORM),
    "zh_modal": _rx(_ZH_MODAL),
    "zh_team": _rx(_ZH_TEAM),
    "zh_place": _rx(_ZH_PLACE),
    "zh_copula": _rx(_ZH_COPULA),
    "zh_first_person": _rx(_ZH_FIRST_PERSON),
    "zh_taste": _rx(_ZH_TASTE),
    "zh_pronoun_start": _rx(_ZH_PRONOUN_START),
    "zh_code": _rx(_ZH_CODE),
    "zh_past": _rx(_ZH_PAST),
    "zh_norm_form": _rx(r"(?:命名|用|按照?|以)\s*[^\s，。,；;的是]"),
    "zh_team_subject": _rx(r"^(?:(?:actually|其实|不对)\W*)?(?:我们|咱们|团队|项目)", _I),
    "zh_only": _rx(r"只(?:能|允许|在|用|走|做|放|写)"),
    "zh_location": _rx(_ZH_LOCATION),
    "zh_copula_name": _rx(r"(?:是|用的是)\s*[A-Za-z`]"),
    # what the sentence names (both languages)
    "code_span": _rx(_CODE_SPAN),
    "path": _rx(_PATH),
    "identifier": _rx(_IDENT, 0),
    "version": _rx(_VERSION),
    "name": _rx(_NAME_MID, 0),
    "acronym": _rx(_ACRONYM, 0),
    "number": _rx(_NUMBER),
    "exclamation": _rx(r"[!！]"),
    "status_code": _rx(r"(?<![\w.])[45]\d\d(?![\w.])"),
    "event": _rx(r"又|出现了|发生了|突然|\b(?:suddenly|again|keeps?\s+\w+ing|started\s+to)\b"),
}


def features(sentence: str) -> dict[str, float]:
    """The lexical and structural classes `sentence` falls in (name → 1.0), plus its language
    and a length bucket."""
    s = sentence.strip()
    zh = _zh(s)
    out: dict[str, float] = {"bias": 1.0}
    for name, test in _CLASSES.items():
        if name.startswith("zh_") and not zh:
            continue
        if name.startswith("en_") and zh and _latin_words(s) < 4:
            continue
        if test(s):
            out[name] = 1.0
    out["lang_zh" if zh else "lang_en"] = 1.0
    size = len(s) // 2 if zh else len(s.split())
    out["short" if size < 5 else "long" if size > 22 else "medium"] = 1.0
    if zh and re.search(r"[A-Za-z]{2,}", s):
        out["zh_latin"] = 1.0
    return out


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, x))))


def score(weights: dict[str, float], sentence: str) -> float:
    """The model's probability for `sentence` (weights: feature name → weight)."""
    return _sigmoid(sum(weights.get(name, 0.0) * v for name, v in features(sentence).items()))


def explain(weights: dict[str, float], sentence: str) -> list[tuple[str, float]]:
    """The features that fired and their weights, largest effect first."""
    fired = [(name, weights.get(name, 0.0)) for name in features(sentence)]
    return sorted(fired, key=lambda item: -abs(item[1]))


# --- the decision -------------------------------------------------------------------------------

# Chosen by leaving one independent writer out: with the model fitted without dev-set-8 and the
# whole extractor scored on dev-set-8, the statement rule kept 17 of 37 predictions at 0.6 and 15
# of 29 at 0.7 (overall 72.7 % / 82.8 % → 76.0 % / 81.9 %); set 4 ("holdout", never tuned on)
# loses nothing at 0.7 and 4 points of recall at 0.8. On a writer the rules never saw, the model is
# the least precise rule, so the threshold leans to precision.
THRESHOLD = 0.7
_STRONG = re.compile(
    r"\b(?:always|never|must|mustn'?t|nobody|no\s+one|only)\b|一律|必须|务必|严禁|禁止|只能|始终",
    re.IGNORECASE,
)


# One-off by construction, whatever else the sentence says: a request to the assistant, an edit
# of this code ("把 X 改成 Y"), or a remark tied to the moment ("yet", "for now", "这次").
_ONE_OFF = re.compile(
    r"""^(?:please\s+)?(?:let'?s|let\s+me|go\s+ahead|can\s+you|could\s+you|would\s+you)\b
      | \b(?:yet|for\s+now|right\s+now|this\s+time|today|tonight|tomorrow|at\s+the\s+moment|
            this\s+(?:week|weekend|morning|afternoon|evening|sprint)|
            in\s+this\s+(?:pr|commit|change|task|branch|ticket)|for\s+this\s+(?:pr|commit|change|task|one)|
            thanks|thank\s+you|don'?t\s+forget)\b
      | ^i'?m\s+(?!used\b)\w+ing\b | \b(?:by|since|until)\s+(?:monday|tuesday|wednesday|thursday|
            friday|saturday|sunday|yesterday|tomorrow|tonight|next\s+\w+|the\s+end\s+of)\b
      | ^(?:帮我|帮忙|麻烦|请帮|给我|能不能|可不可以) | ^(?:先)?(?:跑|执行|运行)一下
      # "Run `tflint && kubectl … restart`": a command line to run now, nothing said about when
      | ^(?:please\s+|now\s+|just\s+)*(?:run|execute|try)\s+`[^`]+`
          \s*(?:for\s+me|now|please)?\s*[.!]?$
      # "I need a 'Void invoice' admin action", "we need an endpoint for…": the task asked for
      | ^(?:i|we)\s+(?:need|want|would\s+like|'d\s+like)\s+(?:a|an|some|the\s+new)\b
      # "Users need a way to export CSV", 财务那边要一张…表: someone asking for a feature
      | ^(?:the\s+|our\s+)?(?:[\w-]+\s+){0,2}?(?:users?|customers?|clients?|admins?|people|finance|
          ops|product|design|marketing|sales|support|team)\s+(?:needs?|wants?|asked\s+for|would\s+like)\s+
          (?:a|an|some|to|the\s+ability)\b
      | ^[^，。]{1,12}?(?:那边|他们|用户|客户)(?:要|想要|需要)(?:一个|一张|一份|个)
      | \bkeeps\s+\w+ing\b | \bran\s+out\b | \bunder\s+(?:load|pressure)\b
      | \b(?:urgent|urgently|asap|a\s+blocker)\b | 很急|着急|加急
      | \b(?:returns?|throws?|raises?|gets?|hits?|shows?)\s+(?:a\s+|an\s+)?\w*
            (?:Error|Exception|Exceeded|Timeout|Failure)\b
      | 又(?:出现|挂|报|崩|慢|超时|失败|卡)
      | 把[^，。,；;]{0,40}?(?:改成|改为|换成|调到|调成|去掉|删掉|加上)
      | ^在\s*\S[^，。]{0,40}?(?:里|中|上)?(?:加|删|改|换)(?:个|一个|上|掉)
      | 这次|本次|今天|今晚|明天|暂时|刚才|刚刚|试试|试一下|看一下|看看|顺手|顺便改""",
    re.VERBOSE | re.IGNORECASE,
)
# Said about the speaker ("for me, X is easier", "对我来说"): the speaker's own taste.
_FOR_ME = re.compile(
    r"^(?:for\s+me|to\s+me|personally)\b|\b(?:for\s+me|to\s+me)\s*[,.]|对我来说|我个人|我自己",
    re.IGNORECASE,
)


_INSISTING = re.compile(
    r"^(?:(?:no+|nope|actually)\W+)?(?:i\s+(?:keep\s+telling\s+you|told\s+you|said)|"
    r"as\s+i\s+said|again)\s*[:,—–-]+\s*|^(?:我(?:都|已经)?说过(?:了|多少次了)?|再说一遍)[：:，,]\s*",
    re.IGNORECASE,
)
# The speaker about themself ("I run everything through tmux", "我自己更习惯…").
_ABOUT_ME = re.compile(r"^(?:i|i'm|i'd|my)\b|^我(?!们)", re.IGNORECASE)


# A reference to something of this task ("the new flag", "here", "this endpoint", "这个 PR"),
# not to a kind of thing: the repository, project, codebase or team are the exception.
_PARTICULAR = re.compile(
    r"""\b(?:the\s+(?:new|old|above|following|remaining|customer|client|reporter)|here|above|
        for\s+a\s+while|
        (?:this|that|these|those)\s+(?!(?:repo|repository|project|codebase|code\s*base|team|
            company|monorepo|app|service|way|kind|sort|is|are|was|were|will|would|should|can|
            in|into|on|to|for|with|at|by|from|of|and|or|but|means?|needs?|one\s+is)\b)[a-z]\w*)\b
      | (?:这个|那个|这些|那些|这里|那里|上面的|下面的|这块|这部分|这段)
        (?!项目|仓库|团队|公司|代码库|\s*repo)""",
    re.VERBOSE | re.IGNORECASE,
)


# Never a standing memory, whichever rule would take it: the speaker's state this week ("I'm
# on call", a meeting, a dentist appointment, 出差), a status update ("the duplicates are gone
# now", "好了，不 NaN 了"), a ticket being pointed at ("Ticket is DATA-4412"), and a report of
# something that is not there or not up although something else is ("X never got a DNS record
# though Y is running", "没有 DNS 记录，但是 pod 已经 Running 了").
_NOT_STANDING = re.compile(
    r"""^(?:i'?m|i\s+am|i'?ll\s+be|i\s+will\s+be|i\s+have|i'?ve\s+got|i\s+was)\b[^.;]*?
          (?:\bon[\s-]call\b|\booo\b|\bout\s+of\s+(?:the\s+)?office\b|\bon\s+(?:leave|vacation|holiday|pto)\b|
          \bmeetings?\b|\bappointment\b|\bdentist\b|\bdoctor\b|\bstand-?up\b|\boffsite\b|\btravell?ing\b|
          \b(?:this|next)\s+(?:week|weekend|afternoon|morning|evening|month)\b|\btoday\b|\btonight\b)
      | ^(?:i'?m|i\s+am|i'?ll\s+be)\s+out\s+(?:(?:mon|tue|wed|thu|fri|sat|sun)\w*|today|tomorrow|
          next|this|until|from|on)\b
      | \b(?:before|by|until)\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day\b
      | \b(?:is|are)\s+(?:now\s+)?(?:gone|fixed|back|green|resolved|done)(?:\s+now)?\s*[.!]?$
      | \b(?:is|are)\s+(?:gone|fixed|back|green|resolved)\s+now\b
      | \b(?:ticket|issue|incident|jira|bug)\s+(?:is|was|number|id|:)\s*
          (?:\#?\d+|[A-Z][A-Z0-9]+-\d+)
      | \b(?:never\s+got|didn'?t\s+get|doesn'?t\s+come\s+up|won'?t\s+come\s+up|doesn'?t\s+start|
          won'?t\s+start|isn'?t\s+coming\s+up|keeps?\s+failing|still\s+(?:fails|failing|broken|down))\b
      | \b(?:can'?t|cannot|couldn'?t)\s+(?:see|figure\s+out|tell|work\s+out)\s+why\b
      | \b(?:no|any)\s+idea\s+why\b | 不知道为什么|搞不懂为什么|找不到原因
      | \b(?<!gets\s)(?<!is\s)(?<!are\s)(?:keeps?\s+)?(?:resets?|reboots?|freezes|panics)\s+
          (?:every|randomly|again|twice|after)\b
      | \b(?:although|though|even\s+though|but)\b[^.;]*\b(?:is|are)\s+(?:already\s+)?
          (?:running|up|healthy|live|green)\b
      | ^我(?!们)[^。]*(?:开会|会议|出差|请假|休假|值班|看牙|牙医|体检|
          这周|本周|下周|下午|上午|晚上|点以后|点之后)
      | ^好了|^(?:已经)?(?:修|搞|弄)好了|不\s*\S{1,12}\s*了[。！!]?$
      | 我[^。；]{0,24}?(?:试了|测了|跑了一?下|看了一?下)
      # a deadline: "周五之前要上线", "月底前给到财务"
      | (?<!每)(?:周|星期|礼拜)[一二三四五六日天](?:之前|以前|前|要|上线|发布) | 月底(?:之前|前)
      | 没有[^，。]{1,20}[，,]\s*(?:但是?|可是)
      | 已经\s*\S+\s*了[。！!]?$
      # 收不到 / 连不上 / 跑不了: can't, said of what happens, is a report
      | (?:收|打|连|跑|登|加|装|找|拉|推|发|载)不(?:到|了|上|开|动|通|进)
      | 从(?:昨天|昨晚|今天|今早|早上|上周|周一|刚才|上次)(?:开始|起) | 卡在|卡住
      | \b(?:after|before)\s+(?:lunch|dinner|the\s+meeting|standup|the\s+call)\b
      # what is the case now, or what someone else said ("even though", "currently", "X says")
      | \beven\s+though\b | \bcurrently\b | \bin\s+a\s+loop\b | \bnever\s+settle
      | \b(?:rn|atm)\b
      | \b(?:says|said|told\s+(?:me|us)|claims?|mentioned)\s+(?:that\s+)?
          (?:they|it|he|she|we|you)\b
      # hearsay: "People on steam say saves get corrupted if…", 用户反馈说…
      | \b(?:people|users|customers|players|folks|someone|somebody)\b[^.;]{0,30}?
          \b(?:say|says|said|report|reported|complain|complained)\b
      | (?:用户|客户|玩家|有人)(?:反馈|反映|说|投诉)""",
    re.VERBOSE | re.IGNORECASE,
)
# A task step for this session: "Last thing: …", "First, …", "For this backfill…".
_THIS_TASK = re.compile(
    r"""^(?:last|first|one\s+more|final)\s+(?:thing|step)\b|^(?:first|next|finally)\s*[,:]
      | \bwhile\s+(?:we'?re|you'?re|we\s+are|you\s+are)\s+(?:here|in\s+there|at\s+it)\b
      | ^(?:second|another|one\s+more|the\s+other)\s+(?:problem|issue|bug)\b
      | \bfor\s+this\s+\w+|\bthis\s+(?:backfill|run|rollout|migration|release|deploy|fix|bug|issue|
          job|experiment|time)\b
      | ^(?:最后|第一步|下一步|接下来)
      | \bonce\s+(?:it'?s|it\s+is|that'?s|they'?re|the\s+\w+\s+(?:is|are))\s+
          (?:green|done|merged|ready)\b
      # a run with this release's arguments: a version tag, an environment set on the line
      | ^(?:please\s+)?(?:run|deploy|release|ship|publish|tag|push|roll\s+out)\b[^.]*?
          (?:--(?:tag|version|env)\b|\s[A-Z_]{2,}=\S|\bv\d+\.\d+\.\d+\b)""",
    re.VERBOSE | re.IGNORECASE,
)


def not_standing(sentence: str) -> bool:
    """Is `sentence` about this moment rather than a standing fact or norm: the speaker's state
    this week, a status update, a pointer at a ticket, a "not there though X runs" report, or a
    step of the task at hand?"""
    return bool(_NOT_STANDING.search(sentence) or _THIS_TASK.search(sentence))


def particular(sentence: str) -> bool:
    """Does `sentence` point at something of the task at hand rather than a kind of thing?"""
    if CJK.search(sentence):
        # "保留期 14 天是合规定的，脚本里这个值别自己改": 这个 after the first clause points back
        # inside the sentence, not at the task
        sentence = re.split(r"[，,；;]", sentence, maxsplit=1)[0]
        # "lr、warmup 这些超参": 这些 after a list names the kind of thing listed
        sentence = re.sub(r"(、[^，。、]{1,20}?\s*)(?:这些|那些)", r"\1", sentence)
        # "can-protocol 这个 crate", "hw-docs 仓库里那个 can-matrix.xlsx": 这个/那个 next to a name
        # names the thing, it does not point at the task
        sentence = re.sub(
            r"(?<=[A-Za-z0-9_'’\"”》)])\s*(?:这个|那个)|(?:这个|那个)(?=\s*[\w-]+\.[a-z]{2,5}\b)",
            " ",
            sentence,
        )
    return bool(_PARTICULAR.search(_relative_that(_repo_here(sentence))))


def _relative_that(sentence: str) -> str:
    """`sentence` without a relative "that" ("Anything that touches payments", "code that
    calls the DB"): "that" before a verb is no pointer at a thing of the task."""
    return re.sub(r"\bthat\s+(?=\w+(?<!ss)s\b)", "", sentence, flags=re.IGNORECASE)


def _repo_here(sentence: str) -> str:
    """`sentence` without a "here" that means this repository or team: "every job here", "tasks
    here", "nobody runs apply from a laptop here"."""
    if re.search(r"\b(?:nobody|no\s+one|everyone|everybody|we|our)\b", sentence, re.I):
        sentence = re.sub(r"\s+here\b", "", sentence, flags=re.I)
    return re.sub(r"\b((?:every|each|any|all|no)\s+\w+|\w+s)\s+here\b", r"\1", sentence)


_REASON = re.compile(r"\b(?:otherwise|or\s+else|so\s+that|because)\b|否则|不然|以免|免得")


def one_off_by_construction(sentence: str) -> bool:
    """Is `sentence` one-off by its form alone (_ONE_OFF: a request, an edit of this code, a
    remark tied to the moment), whatever it reports?"""
    return bool(_ONE_OFF.search(sentence))


def one_off(sentence: str) -> bool:
    """Is `sentence` a request, a problem report or a remark about the moment (never a durable
    statement)?"""
    # "…, otherwise we lose jobs on crash": a reason given for a norm is no report
    head = _REASON.split(sentence, maxsplit=1)[0]
    if (
        _ONE_OFF.search(sentence)
        or reports_problem(head)
        # "The customer who reported it is on the Enterprise plan": a past event about the
        # thing at hand
        or (
            re.search(_PAST_EN, head, re.I)
            and re.search(
                r"\b(?:it|this|that)\b(?!\s+(?:repo|"
                r"repository|project|codebase|team|way|service|app))",
                head,
                re.I,
            )
        )
        or particular(sentence)
        or not_standing(sentence)
    ):
        return True
    # An imperative task verb on a particular object, with nothing general about it ("Refactor
    # `parse_config` in loader.py"), is a task; "Merge only after two approvals" is a norm.
    return bool(
        (
            re.match(_IMPERATIVE_TASK, sentence, re.IGNORECASE)
            # "Put the helper in utils.py": a convention verb on one particular thing
            or re.match(_IMPERATIVE_THE_ONE, sentence, re.IGNORECASE)
        )
        and not re.search(_UNIVERSAL_EN, sentence, re.IGNORECASE)
        and not re.search(_CONTRAST_EN, sentence, re.IGNORECASE)
        and not re.search(_MODAL_EN, sentence, re.IGNORECASE)
        and not re.search(r"\b(?:before|after|when|whenever|unless)\b", sentence, re.IGNORECASE)
    )


_FORBIDS = re.compile(
    r"\b(?:never|must|mustn'?t|not\s+allowed|forbidden|banned|always|only)\b|"
    r"不许|不准|禁止|严禁|不得|绝不|一律|必须|务必|只能|别|不要",
    re.IGNORECASE,
)
_PRESCRIBES_STRONGLY = (
    "en_convention_start",
    "en_modal",
    "en_neg_norm",
    "zh_neg_norm",
    "zh_modal",
    "zh_only",
)
_PRESCRIBES = (
    "en_universal",
    "zh_universal",
    "en_bare_plural_start",
    "zh_norm_form",
    "en_contrast",
)
_DESCRIBES = ("en_location", "en_copula_name", "zh_location", "zh_copula_name")


def is_norm(sentence: str) -> bool:
    """Does the statement say what to do (a rule) rather than how things are (project
    knowledge)? "We …" / "我们…" describes what the team does; a place or a name after a copula
    ("lives in src/…", "is Go 1.22", "跑在 GitLab CI 上") describes, unless an imperative, a
    modal or a negated verb prescribes; a universality word, a bare plural subject ("Prefabs
    are…"), a named alternative or "用/按 X" prescribes."""
    fired = features(sentence)
    if "en_team_subject" in fired or "zh_team_subject" in fired:
        # "我们所有金额都是 HALF_EVEN，…double 不许出现在金额路径上": what the team does, with a
        # prohibition in it, is its rule
        return bool(_FORBIDS.search(sentence))
    strong = any(name in fired for name in _PRESCRIBES_STRONGLY)
    if not strong and any(name in fired for name in _DESCRIBES):
        return False
    return strong or any(name in fired for name in _PRESCRIBES)


_TEAM_TOO = re.compile(
    r"\b(?:none\s+of\s+us|neither\s+does\s+anyone|nor\s+does\s+anyone|nobody\s+(?:here|on\s+the\s+team)|"
    r"no\s+one\s+(?:here|on\s+the\s+team)|all\s+of\s+us|everyone\s+(?:here|on\s+the\s+team)|"
    r"in\s+this\s+(?:repo|repository|codebase|project))\b|我们都|大家都|谁都不",
    re.IGNORECASE,
)


def judge_statement(sentence: str) -> tuple[str, int] | None:
    """(kind, importance) when the model takes `sentence` for a durable statement, else None.
    What it is about (`scope.statement_kind`) decides feedback, user, or the team's project;
    about the project, the norm model tells a rule from project knowledge."""
    from memoryhub.pipeline.extractor.statement_weights import DURABLE

    if one_off(sentence) or score(DURABLE, sentence) < THRESHOLD:
        return None
    # "I keep telling you: schedules are in UTC" is about the schedules, not the speaker.
    body = _INSISTING.sub("", sentence) or sentence
    normative = is_norm(body) and not describes_system(body)
    # "结论放前面，细节我自己会看": how to answer the speaker, though "我自己" comes later
    if is_interaction(body) and not (_ABOUT_ME.match(body) or _FOR_ME.match(body)):
        kind: str | None = Kind.FEEDBACK.value
    elif (_FOR_ME.search(body) or _ABOUT_ME.match(body)) and not re.search(
        r"\byou\b|你", body, re.IGNORECASE
    ):
        kind = Kind.USER.value
    else:
        kind = statement_kind(body, normative=normative)
    if kind == Kind.USER.value and _TEAM_TOO.search(body):
        # "Personally I don't ship a migration without a test, none of us do": the team's norm
        kind = Kind.RULE.value
    if kind == Kind.USER.value and re.match(
        r"^i\s+(?:\w+\s+){1,2}?(?:it|them|these|those)\b|^我[^，。]{0,6}?它们", body, re.I
    ):
        # "I read them line by line": a habit about something said before says nothing alone
        return None
    if kind is None:
        # Durable but naming nothing the scope rules know ("Prefabs are edited in prefab mode
        # only"): in a coding session, a statement not about the speaker is about the team's work.
        kind = Kind.RULE.value if normative else Kind.PROJECT.value
    return kind, 3 if _STRONG.search(sentence) else 2
