"""The sentence rules: what a user's sentence says that is worth remembering.

Rules (the `rule` field of each memory names the one that fired)
================================================================
User text is split into sentences. Sentence ends are `. ! ?` followed by a space, `。！？；;`,
and line breaks. A sentence is also split before `, and I …`, `, never <verb> …`, `, don't …`
(and the like; "X, never Y" with a noun stays one sentence), and before a Chinese `，` that
opens a prohibition (`，不要…`, `，别…`). Leading fillers ("Oh and", "btw", "另外", …) are
dropped. These sentences are skipped: questions (`?`, `吗`, "can you…", "要不要…"); hedges
anywhere ("maybe", "probably", "I think", "not sure", "也许", "可能", "好像"); conditionals at
the start ("if", "what if", "如果", "要是"); and sentences that point back at context ("like
this", "这样", "这么") with nothing else to say. The rules are tried in this order, and the
first that fires takes the sentence:

`correction` → feedback, or project/rule when it is about the project (see below), importance 3
    if emphatic ("again", "I told you", "I keep telling you", "又", "说过"), else 2. A user
    message after an assistant turn that starts "no,", "nope", "that's wrong", "actually", "not
    quite", "I said" / "不对", "错了", "搞错了", "其实", "应该是". It counts only if the rest
    states something ("is", "should be", "use", "not X", "instead", "是", "用", "而不是"). A
    bare "no" that answers the assistant's question needs a contrast ("not", "instead",
    "而不是"). Transient replies ("just…", "only…", "let's…", "先…", "这次…") are skipped.
`todo` → project/todo, importance 2. "TODO:", "later we need to…", "we should … eventually / at
    some point", "remind me to…" / "待办", "之后要", "回头再", "后续要", "以后再",
    "下个版本再". There must be an object beyond the trigger ("下个迭代再说" is too vague).
`prohibition` → rule or feedback (see below), importance 3. "never <word>", "don't ever",
    "don't/do not <verb>" (not "don't worry", "never mind"…), "no X outside/in Y", "stop
    <verb>ing", "avoid …", "you must not", "X is not allowed" / "不要", "别再", "禁止", "不许",
    "严禁", "不能再". Transient ones ("yet", "for now", "this time", "先不要", "暂时", "这次")
    are skipped, and so are pronoun objects ("don't commit it").
`preference` → user for the speaker's own taste ("I prefer…", "我习惯…"); a rule when it names
    the project ("in this repo", "项目里") or, said impersonally ("Always…", "以后…都"), is
    about the team's code or workflow; feedback when it is about how the assistant works with
    the user ("ask me", "问我", "reply", "回复", "I'd appreciate it if you…"). Importance 3
    with "always", "never", "from now on", "以后…都", "一律", else 2. "I prefer", "I'd rather",
    "I always/usually <verb>", "I like to…", "I don't like", "I hate", "I can't stand", "I
    find…", "I'd go with…", "always …", "whenever you…", "from now on", "going forward", "by
    default" / "我喜欢", "我习惯", "我偏好", "我更喜欢", "我不喜欢", "以后…都", "今后一律",
    "每次都用", "统一用", "默认用". Objects such as "this", "that one", "这个" are skipped.
`profile` → user, importance 2. "I'm a backend engineer", "I work on…", "my role is" /
    "我是…工程师", "我负责…".
`reference` → reference, importance 2. A URL with a reference word ("docs", "see", "runbook",
    "wiki", "spec", "文档", "参考", "见", "规范") or a docs-looking address (not localhost, not
    a PR or commit link). A doc path (`*.md`, `docs/…`) with a reference word. A README
    section.
`fact` → project, importance 2, with subcategory decisions (decided, switched, 决定, 改用,
    统一), ops (deploy, CI, server, 部署, 线上) or else structure. "we use/run/deploy/host…",
    "we decided/switched/migrated…", "we're on…", "the project uses…", "our X is/runs/lives…",
    "<thing> lives in <path or Name>", "X belongs in…", "X are stored as…", "X comes from /
    runs on <Name>", "<thing> in this repo is…", "the app is <Name>…" / "我们用", "项目使用",
    "我们采用", "我们的X是", "我们是 <Name>", "部署在", "我们决定", "X在/放 <path> 里",
    "X发到/跑在 <Name>". Only the clause that states the fact is kept; a problem report
    ("…returns a 500") is not a fact.
`remember` → as found, importance 3. "remember (that)…", "keep in mind…", "note that…", "heads
    up", "fwiw", "for context" / "记住", "请记住", "注意：". The rest goes through the rules
    above. Failing those, it becomes a project memory when it is about the project, our systems
    or code, else a user memory.
`convention` → rule, project or feedback (see `conventions`): a statement with no trigger word
    that names its alternative or carries a norm inside it, unless it points at one particular
    thing of the task ("here", "the new flag").
`statement` → rule, project, user, feedback or reference (see `statements`): any other sentence
    that the statement model takes for a durable statement by its structure. Tried last; a
    statement that names a lasting URL or doc is a reference, and a clause after a semicolon
    is added to the memory of the clause before it.

The kind of a prohibition, a preference, a correction and a convention is decided by what it is
about (`scope`): the interaction → feedback; the speaker's own taste → user; the team's
repository, code, tools or workflow → rule (or project knowledge when it describes). A
correction about the project is the team's knowledge, not the speaker's feedback.

Rules added for issue 14's independent writers (round 3), each a class rather than a phrase:
`reference` also for a place of record named as where a kind of record lives or is looked up
(`record_place`: a tracker, wiki, docs page, sheet, dashboard, channel, experiment store,
《…》), tried before the "not standing" veto, and cut from a statement it follows; `preference`
(user) for the speaker's habit with a tool without "I prefer" (`speaker_habit`); `command`
(project) for a sentence that says how the team runs a build or test with the command line
(`states_a_command`); `feedback` for a standing instruction on how the assistant reports to
the speaker (`directs_the_assistant`) and for a request asked as a question but meant for the
whole collaboration; and the session's opening sentence never goes to the statement model.

Memories and sentences (`user_memories`): one sentence, one memory — clauses of one scope after
a comma or semicolon join the memory before them, a short clause with no memory of its own
opens the one after it, the next sentence of a message on the same named thing continues its
memory, and adjacent feedback or rule sentences of a message are one instruction; a past
incident told next to a norm in the same message makes the two one lesson (`_INCIDENT`).

Record range: the user record; for a correction, the assistant record that was corrected
through the user record.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from memoryhub.memories.kinds import DEFAULT_SCOPE, Kind, Subcategory
from memoryhub.memories.text import STOPWORDS
from memoryhub.pipeline.extractor.commands import command_units
from memoryhub.pipeline.extractor.conventions import convention, reports_problem
from memoryhub.pipeline.extractor.keywords import (
    CJK,
    CJK_FUNCTION,
    MAX_CONTENT_CHARS,
    TRIGGER_WORDS,
    Draft,
)
from memoryhub.pipeline.extractor.records import SourceRecord, clean_user_text, readable_text
from memoryhub.pipeline.extractor.scope import (
    CODE_WORDS_ZH,
    IDENTIFIER,
    describes_system,
    fact_subcategory,
    preference_kind,
    prohibition_kind,
    statement_kind,
)
from memoryhub.pipeline.extractor.statements import (
    judge_statement,
    not_standing,
    one_off,
    one_off_by_construction,
    particular,
)
from memoryhub.sessions.conversation import text_of
from memoryhub.sessions.records import (
    ASSISTANT,
    USER,
)

# --- splitting and filtering sentences --------------------------------------------------------

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
# After "don't" / "never": words that do not make a directive ("don't worry", "never mind").
_NOT_DIRECTIVE = (
    r"know|knew|known|think|thought|worry|see|saw|seen|have|had|has|mind|care|understand|"
    r"understood|get|got|need|want|like|remember|recall|believe|feel|felt|forget|bother|"
    r"hesitate|panic|rush|sweat|mean|meant|agree|matter|seem|be|been|was|were|expect|hear|"
    r"heard|notice|realize|realise|did|do|does|again|worked|works|happened|tried|used|really|"
    r"quite|just|necessarily|even|actually|always|usually|yet|wait|stress|say|said|ask\s+why|"
    r"change\s+anything"
)
# ", never" starts a clause of its own only before a verb ("…, never use SQLite"): "X, never Y"
# with a noun is one convention ("Indent with tabs, never spaces, in the Makefile").
_SENTENCE_SPLIT = re.compile(
    rf"""(?<=[.!?])\s+(?=\S)
      | (?<=[。！？；;～])\s*
      | \n+
      | ,\s*and\s+(?=(?:the\s+)?(?:[A-Za-z][\w./-]*\s+){{1,3}}(?:go|goes|live|lives|run|runs|is|are|
            sit|sits|stay|stays|get|gets|belong|belongs)\b)
      | ,\s*(?:and\s+)?
        (?=(?:please|also|always|never\s+(?:ever\s+)?(?:{_VERBS})|don'?t|do\s+not|stop|i|i'd|i'm|
            we|we're|our)\b)
      | [，,]\s*(?=(?:不要|别再|别(?![的人处])|禁止|不许|不准|严禁|千万别|千万不要|不能再))
        (?!(?:不要|别)(?:随便|乱|轻易)?(?:改|动|删|碰)(?:它|了)?\s*[。！!]?\s*$)
    """,
    re.VERBOSE | re.IGNORECASE,
)
_FILLER = re.compile(
    r"""^(?:(?:oh|ok|okay|also|and|but|btw|by\s+the\s+way|one\s+more\s+thing|another\s+thing|
        hey|so|well|alright|great|thanks|thank\s+you|cool|nice|perfect|good|yes|yeah|yep|sure|
        honestly|frankly|tbh|looks\s+good|lgtm|fyi|ugh|argh|sigh|right)\b[\s,:;!.\-–—]*)+""",
    re.VERBOSE | re.IGNORECASE,
)
_FILLER_ZH = re.compile(
    r"^(?:(?:另外|还有|顺便说一下|顺便|对了|哦|嗯|好的|好吧|行|补充一下|还有一点|然后|此外)[，,：:、\s]*)+"
)
_QUESTION_START = re.compile(
    r"""^(?:what|why|how|when(?!\s+(?:unsure|in\s+doubt|you)\b)|where|which|who|whose|can\s+you|could\s+you|
        would\s+you|will\s+you|
        do\s+(?:we|you|i)|does|did|is\s+(?:there|it|this|that)|are\s+(?:there|we|you)|should\s+(?:we|i)|
        shall\s+we|have\s+you|要不要|是不是|能不能|可不可以|有没有|为什么|怎么|为啥|是否)\b""",
    re.VERBOSE | re.IGNORECASE,
)
_HEDGE = re.compile(
    r"""\b(?:maybe|perhaps|probably|possibly|might|i\s+think|i\s+guess|i\s+believe|i\s+suppose|
        (?<!you're\s)(?<!you\sare\s)not\s+sure|i\s+wonder|just\s+an\s+idea|no\s+idea|i\s+assume)\b
      | 也许|可能|大概|好像|不确定|说不定|或许|不一定|估计""",
    re.VERBOSE | re.IGNORECASE,
)
_CONDITIONAL_START = re.compile(
    r"^(?:if|what\s+if|in\s+case|unless|whether|suppose|imagine)\b|^(?:如果|要是|假如|万一|假设)",
    re.IGNORECASE,
)
_VAGUE = re.compile(r"\b(?:like\s+this|like\s+that|this\s+way|that\s+way)\b|这么|这样|那样", re.I)


def split_sentences(text: str) -> list[str]:
    return [p.strip() for p in _SENTENCE_SPLIT.split(text) if p and p.strip()]


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

_TEMPORAL = (
    r"(?:(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future|"
    r"henceforth)\s*,?\s*)?"
)
_PROHIBIT_EN = re.compile(
    rf"""^{_TEMPORAL}(?:please\s+)?(?:
        never\s+(?:ever\s+)?(?!(?:{_NOT_DIRECTIVE})\b)[`.\w]
      | (?:don'?t|do\s+not)\s+ever\b
      | (?:don'?t|do\s+not)\s+(?!(?:{_NOT_DIRECTIVE})\b)[a-z]
      | stop\s+\w+ing\b
      | avoid\s+\w
      | (?:you|we)\s+(?:must|should|shall)\s*(?:not|never)\b
      | we\s+(?:don'?t|do\s+not|never)\s+(?:do|use|allow|accept|merge|ship|write|put|add|touch|
            commit|push|run|call|import)\b
      | (?:you|we)\s+(?:must|should)n'?t\b
      | under\s+no\s+circumstances\b
      | no\s+more\s+\w
      | no\s+[\w`.()-]+(?:\s+[\w`.()-]+)?\s+
            (?:in|outside|inside|on|from|anywhere|allowed|before|after|without)\b
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
      | i\s+(?:really\s+|personally\s+|also\s+|just\s+)?like\s+
            (?:to\b|it\s+when\b|using\b|having\b|keeping\b|my\b|when\b)
      | i\s+(?:really\s+)?(?:don'?t|do\s+not)\s+like\b
      | i\s+(?:hate|dislike|can'?t\s+stand|cannot\s+stand)\b
      | i\s+want\s+you\s+to\s+always\b
      | i\s+(?:find|tend\s+to|lean\s+towards?)\b
      | i'?m\s+(?:not\s+)?(?:a\s+(?:big\s+|huge\s+)?fan\s+of)\b
      | i'?d\s+(?:go\s+with|pick|choose|stick\s+with|appreciate\s+it\s+if)\b
      | i'?m\s+used\s+to\b
      | (?:the\s+team|we(?:\s+all)?)\s+(?:strongly\s+|generally\s+)?(?:prefers?|favou?rs?)\b
      | (?:please\s+)?(?:always|from\s+now\s+on|going\s+forward|moving\s+forward|henceforth|
            by\s+default)\b
      | (?:please\s+)?make\s+sure\s+(?:to\s+|you\s+)?always\b
      | (?:whenever|every\s+time|each\s+time|any\s+time)\s+(?:you|we|someone|anyone)\b
      | in\s+(?:the\s+)?future\s*,?\s*(?:please\s+)?
            (?:use|run|write|put|add|keep|ask|make|prefer|always|stick)\b
    )""",
    re.VERBOSE | re.IGNORECASE,
)
_PREF_VAGUE_OBJECT = re.compile(
    r"""^(?!i'?d\s+appreciate\s+it\s+if\b)(?:i\s+\w+\s+(?:to\s+)?|i'?d\s+\w+\s+|my\s+preference\s+is\s+)
        (?:this|that|it|these|those|your|yours|the\s+(?:first|second|third|last|other|previous|new|old)
           (?:\s+(?:one|option|approach|version|way))?|this\s+one|that\s+one)\b""",
    re.VERBOSE | re.IGNORECASE,
)
_PREF_ZH = re.compile(
    r"^(?:我(?!们)(?:个人|一般|通常|平时|一直|比较|更|还是|都)*[^，。,；;？?！!]{0,12}?"
    r"(?:喜欢|习惯|偏好|倾向于?|偏向)"
    r"|我(?:不太|不)喜欢|我讨厌"
    r"|(?:以后|今后|往后|从现在起)[^，。,；;]{0,10}?(?:都|一律|统一|每次|全部|尽量|记得|请|始终|总是|必须|一定|先|就)"
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
      | i\s+(?:maintain|own|lead|run)\s+(?:the\s+)?[\w'-]+(?:\s+[\w'-]+){0,3}\s+
            (?:team|libraries|library|services?|platform|apps?|squad)\b
      | i(?:'m|\s+am)\s+(?:on|in)\s+the\s+[\w-]+(?:\s+[\w-]+)?\s+(?:team|squad|group)\b
      | 我是(?:一[名个位])?\S{0,12}(?:工程师|开发|程序员|学生|负责人|设计师|运维|架构师|经理|产品)
      | 我负责)""",
    re.VERBOSE | re.IGNORECASE,
)

# Who the speaker is, told by where they come from or what they are new to ("I did Angular for
# years before this job", "I'm an ex-DBA", "I'm 3 months into my first games job", "我是硬件出身",
# "我是从 AWS 转过来的", "我对 Scala 的隐式转换不太熟"): their profile, whatever they ask with it.
_SELF_DESCRIPTION = re.compile(
    r"""\bi(?:'m|\s+am)\s+(?:an?\s+)?(?:ex-|former\s+)\w+
      | \bi\s+(?:did|was\s+doing|wrote|worked\s+(?:in|on|with))\s+[\w.+#-]+(?:\s+
          [\w.+#-]+)?\s+for\s+
          (?:years|a\s+decade|\w+\s+years)\b
      | \bi(?:'m|\s+am)\s+(?:only\s+)?(?:\d+|a\s+few|two|three|six)\s+(?:months?|weeks?)\s+into\b
      | \bi(?:'m|\s+am)?\s+(?:came|come|coming)\s+(?:over\s+)?from\s+(?:\w+\s+){0,2}?
          (?:frontend|backend|web|
          mobile|ios|android|java|python|ruby|rails|php|\.net|embedded|hardware|data|ops|[A-Z]\w+)\b
      | \bi(?:'m|\s+am)\s+(?:new\s+to|not\s+(?:very\s+|that\s+|super\s+)?
          (?:familiar|comfortable)\s+with)\b
      | \bi(?:'m|\s+am)\s+not\s+an?\s+[\w.+#-]+\s+(?:expert|person|dev|developer)\b
      | \bi(?:'m|\s+am)\s+(?:on|using|stuck\s+(?:on|with))\s+an?\s+[^.;]{0,40}?
          \b(?:laptop|machine|mac|macbook|windows|linux|box|workstation)\b
      | 我是[^，。；]{0,14}?(?:出身|转过来|转来|转行)|(?:^|[，,])\s*从\s*\S{1,12}\s*转过来
      | 我对[^，。；]{1,24}?不(?:太|怎么|是很)?(?:熟|懂|了解)|不是\s*\S{1,10}\s*专家
      # "I'm colour-blind (deuteranopia), so please don't…", "I'm an ex-DBA so I'll review…"
      | \bi(?:'m|\s+am)\s+(?:a\s+bit\s+)?[\w-]+\s*(?:\([^)]*\))?\s*,?\s+so\s+
          (?:please|pls|don'?t|i'?ll)\b
      | \bi\b[^.;]{0,40}?\b(?:\d+|ten|twenty|many|several|a\s+few|\w+\s+decades?)\s+years\s+
          (?:of|with|in|doing)\s+[A-Za-z]
      | 我\s*\S{0,12}?(?:写|用|做|干)(?:了)?(?:快|近|差不多|好几|十几|几)?
          [\d一二三四五六七八九十两]*年""",
    re.VERBOSE | re.IGNORECASE,
)
_WE = re.compile(r"\b(?:we|we're|our|us)\b|我们|咱们|团队", re.IGNORECASE)

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
        we(?:'re|\s+are)\s+on\s+(?!(?:it|the\s+same|a\s+deadline|track|board|call|vacation|
            holiday|leave|the\s+way|our\s+way|top)\b)[\w`]
      | we(?:'re|\s+are)?\s+(?:always\s+|usually\s+|only\s+|all\s+|generally\s+|normally\s+|
            typically\s+|exclusively\s+|still\s+|now\s+)?
            (?:use|using|run|running|deploy|deploying|host|hosting|store|storing|
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
# A named system or file: "RemoteConfig", "Localizable.strings", "the marts layer" is not one.
_NAMED = r"(?:[A-Z][\w.+-]*[A-Za-z0-9]|[\w-]+\.[\w.]+)"
# What a durable fact never opens with: a problem or a result ("The bug is in…"), or a pronoun
# pointing at the conversation ("It runs on…").
_NOT_A_SUBJECT = r"""(?i:(?!(?:the\s+)?(?:bug|error|issue|problem|typo|crash|failure|change|fix|
            diff|regression|exception|result|output|answer|reason|cause|difference|question)s?\b)
        (?!(?:it|this|that|there|here|he|she|they|i|you|what|which|who)\b))"""
_LOCATION_EN = re.compile(
    rf"""^{_NOT_A_SUBJECT}
        (?:[\w`.-]+\s+){{1,5}}?(?:(?:lives?|live|sits?|go|goes|are\s+(?:kept|stored|defined)|
        is\s+(?:kept|stored|defined|configured))\s+(?:in|under)\s+(?:`?{_PATH}|`?{_NAMED})
        | (?:belongs?|ends?\s+up)\s+in\s+\S
        | (?:is|are)\s+(?:stored|kept|saved|written|represented|modelled|modeled)\s+as\s+\S)""",
    re.VERBOSE | re.IGNORECASE,
)
_FACT_ZH = re.compile(
    r"(?:我们|咱们|本项目|这个项目|该项目|项目|这个仓库|我们项目|我们团队|团队|公司)"
    r"(?:里|中|这边|现在|目前|一直|都|统一|主要|的服务|的代码|线上|前端|后端|服务端|客户端|"
    r"本地|测试环境|\s?CI\s?里|所有服务|全部服务)*"
    r"(?:用的是|使用的是|用|使用|采用|基于|依赖|部署在|部署到|跑在|托管在|选择了|选了|决定|定了|改用|"
    r"换成了?|迁移到了?)(?![一这那它])"
    r"|我们的[^，。,；;？?]{1,12}?(?:是|都是|在|用|放在|跑在|部署在|都部署在|都跑在)"
    r"|项目是[^，。,；;？?]{1,24}?(?:写的|开发的|做的|搭的|构建的)"
    r"|我们(?:这边|项目|前端|后端|服务端|客户端)?(?:是|用的是)\s*[A-Za-z]"
    r"|项目是\s*[A-Za-z]|^(?!这|那|它|我(?!们)|你)[^，。,；;？?\s]{1,10}是\s*(?:[A-Z][A-Za-z]|[a-z][\w.]*-\d)"
)
_LOCATION_ZH = re.compile(
    rf"^(?!.*(?:问题|错误|报错|异常|bug)\S{{0,3}}在)\S{{1,20}}?(?:在|放在|位于|放到?|存到?|存放在)\s*`?{_PATH}`?\s*"
    r"(?:里|下面?|中|目录|文件)"
)
# A descriptive statement of where something comes from, runs or is sent, naming a system: "Secrets
# come from Vault at deploy time", "告警都发到 #ops-alerts 频道".
_SOURCE_EN = re.compile(
    rf"""^{_NOT_A_SUBJECT}(?!(?:the\s+)?(?:test|build)s?\b)
        (?:[\w`.-]+\s+){{1,4}}?(?:comes?\s+from|runs?\s+on|are\s+hosted\s+on|is\s+hosted\s+on|
        are\s+sent\s+to|is\s+sent\s+to|goes\s+to|go\s+to|are\s+pulled\s+from|is\s+pulled\s+from|
        are\s+read\s+from|is\s+read\s+from)\s+(?:the\s+)?(?=[`#]?[A-Z0-9#`]|[\w-]+[._/-]\w)""",
    re.VERBOSE,
)
# "The app is SwiftUI with a thin UIKit layer", "The MSRV is 1.75": what a part of the project is.
_IS_NAMED_EN = re.compile(
    rf"""^{_NOT_A_SUBJECT}
        (?:the\s+|our\s+)?(?:[\w-]+\s+){{0,3}}?[\w-]+\s+(?:is|are)\s+(?:a\s+|an\s+|the\s+)?(?:still\s+)?
        (?:on\s+)?(?:[A-Z][\w.+-]*[A-Za-z0-9]|v?\d+\.\d+(?:\.\d+)?\b|[a-z]+\d[\w.]*|`)""",
    re.VERBOSE,
)
# "It's a Laravel 11 app with Horizon", "It's Go 1.22, gRPC between services": what the project is.
_ITS_A_EN = re.compile(
    r"^(?i:it)(?:'s|\s+is)\s+(?:a\s+|an\s+)?(?:[A-Z][\w.+#-]*\s+)+?"
    r"(?:v?\d+(?:\.\d+)*\b|(?:app|application|project|service|codebase|repo|monorepo|monolith|site|"
    r"stack|library|cli|game|platform|backend|frontend)\b)"
)
# "Random seeds are fixed through seed_everything(42)", "Datasets are versioned with DVC".
_PASSIVE_THROUGH_EN = re.compile(
    rf"""^{_NOT_A_SUBJECT}(?:[\w`.-]+\s+){{1,4}}?(?:is|are)\s+\w+ed\s+(?:through|via|with|by|in)\s+
        (?:the\s+)?(?=`|[A-Z][\w.+-]*[A-Za-z0-9]|\w+\(|[\w-]+[._/]\w)""",
    re.VERBOSE,
)
# "Money in this codebase is integer cents end to end": how things are, in the team's repository.
_IN_THIS_REPO_EN = re.compile(
    r"^(?!(?:it|this|that|there|i|you)\b)(?:[\w`.-]+\s+){1,3}in\s+(?:this|the|our)\s+"
    r"(?:repo|repository|project|codebase|code\s*base|monorepo)\s+(?:is|are|uses?|lives?|goes|go)\b",
    re.IGNORECASE,
)
_SOURCE_ZH = re.compile(
    r"^(?!.*(?:问题|错误|报错|异常|bug))(?!帮我|麻烦|请帮|我(?!们)|你)[^，。,；;？?]{1,12}?都?"
    r"(?:发到|发送到|来自|从|跑在|部署在|托管在|运行在)\s*[#`A-Za-z0-9]"
)
_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|keep\s+in\s+mind|note|for\s+the\s+record|important|"
    r"worth\s+knowing)\s*(?:that\b|:|,|-|—|–)\s*"
    r"|^(?:fwiw|for\s+what\s+it'?s\s+worth|for\s+context|for\s+future\s+reference|"
    r"just\s+so\s+you\s+know|heads[\s-]up)"
    r"\s*(?:that\b|:|,|-|—|–|\s)\s*"
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

_CORRECTION_EN = re.compile(
    r"""^(?:
        (?:no+|nope|nah)\b(?:[\s,.!:;–—]|-(?![-\w]))*
      | (?:that'?s|that\s+is|this\s+is|it'?s|you'?re|you\s+are)\s+(?:not\s+(?:right|correct|true|
            what\s+i\s+(?:meant|asked|said|wanted))|wrong|incorrect|mistaken)\b(?:[\s,.!:;–—]|-(?![-\w]))*
      | wrong\b(?:[\s,.!:;–—]|-(?![-\w]))*
      | (?:actually|correction)\b(?:[\s,.!:;–—]|-(?![-\w]))*
      | not\s+quite\b(?:[\s,.!:;–—]|-(?![-\w]))*
      | (?:i\s+(?:said|told\s+you|meant|keep\s+telling\s+you)|as\s+i\s+said|how\s+many\s+times)
        \b(?:[\s,.!:;–—]|-(?![-\w]))*
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
# What a correction prescribes rather than describes ("should render…", "never…", "不要…").
_NORMATIVE = re.compile(
    r"\b(?:should|must|mustn'?t|shouldn'?t|never|always|don'?t|do\s+not|only|instead)\b"
    r"|^(?:use|keep|put|store|write|call|run|leave|return)\b"
    r"|应该|必须|务必|一律|统一|不要|别|只能|只用|要用|得用",
    re.IGNORECASE,
)
_SAY_AGAIN = re.compile(
    r"^(?:我(?:又|再|再次)?(?:说|讲)(?:了)?(?:一|多少)?(?:遍|次)|i(?:'ll|\s+will)?\s+say\s+it\s+again|again)"
    r"[：:，,!！\s]*",
    re.IGNORECASE,
)
_ASKED = re.compile(
    r"\?\s*$|？\s*$|\b(?:should\s+i|do\s+you\s+want|would\s+you\s+like|shall\s+i)\b|要不要|是否需要|吗[？?]?\s*$",
    re.IGNORECASE,
)


_LESSON_MARK = re.compile(
    r"""\b(?:this|that|it)(?:'s|\s+has|\s+had)?\s+(?:bit|bitten|burned|burnt)\s+us\b
      | \b(?:has|have|had)\s+(?:bit|bitten|burned|burnt)\s+us\b
      | \b(?:bit|burned|burnt)\s+us\s+(?:before|once|twice|last|in)\b
      | \b(?:tripped|caught)\s+us\s+(?:up|out)\b
      | \b(?:got|been|get|getting|was|were)\s+(?:bitten|burned|burnt)\b
      | \b(?:pitfall|gotcha|footgun)\b | \bthe\s+hard\s+way\b
      | 这个坑|踩过|踩坑|吃过[^，。：]{0,20}?亏|栽过|坑过
      # "last time X happened because…: Y" / "上次就是因为…才…：Y"
      | \blast\s+time\b[^.:]{0,80}\bbecause\b[^.]*: | (?:上次|之前|以前|那次)[^，。：]{0,6}?因为
      # an incident and the norm it left: "X took the site down during Y, so every Z …"
      | \b(?:took|brought|knocked)\s+(?:\w+\s+){0,4}?down\b[^.]*?,\s*so\b
      # "…and terraform deletes the database — that's how staging lost the users table"
      | \bthat'?s\s+how\s+(?:\w+\s+){0,4}?(?:lost|broke|deleted|wiped|dropped|corrupted|leaked|
          took\s+down|went\s+down)\b""",
    re.VERBOSE | re.IGNORECASE,
)
# Who does what between the speaker and the assistant: the speaker's job, not the assistant's.
_ASSISTANT_ROLE = re.compile(
    r"""\b(?:my\s+job|not\s+yours|your\s+job|hand\s+me|(?:at|with)\s+me\b(?!\s+(?:and|or))|
          yourself|leave\s+[^.]{0,40}?\bto\s+me|up\s+to\s+me|
          past(?:e|ing)\s+(?:whole|entire|full|long)|walls?\s+of\s+text)\b
      | ^when(?:ever)?\s+you\s+[^,]{3,60},\s*(?:please\s+)?(?:always\s+)?
          (?:show|give|send|write|keep|use|reply|answer|put|make|skip|list|stop|don'?t)\b
      | ^(?:please\s+)?(?:skip|drop|spare\s+me|no\s+need\s+for)\b[^.]*?
          \b(?:explanations?|explaining|summary|summaries|recaps?|intros?|lectures?|essays?|
          preambles?|apolog\w+)\b
      | \b(?:answers?|replies|responses?|explanations?|summaries)\s+(?:to\s+me\s+)?
          (?:can|should|must|need\s+to)\s+(?:be|stay)\b
      | ^(?:just\s+)?(?:give|show|tell|send)\s+me\b[^.;]*[,;]\s*(?:and\s+)?(?:no|not|without)\s+\w+
      | 你自己|别自己|不要自己|自己(?:动|改|跑|调)|跟我说|一大段|长篇大论|我来(?:跑|做|改|合)
      | 交给我|留给我
      | \bdon'?t\s+bother\s+(?:explaining|with\s+(?:the\s+)?(?:basics|explanations?|summar))
      # "you don't need to paste … back to me", "…不用一步步复述给我": how to report to the speaker
      | \b(?:you\s+don'?t\s+need\s+to|no\s+need\s+to|there'?s\s+no\s+need\s+to)\b[^.;]*\b(?:me|my)\b
      | \bback\s+to\s+me\b
      | (?:复述|贴|发|讲|念|汇报)给我|不用[^，。]{0,12}?给我
      | (?:给|让)我(?:看|审|过目|确认)""",
    re.VERBOSE | re.IGNORECASE,
)
# A standing instruction on how the assistant reports to or works with the speaker, said without
# a trigger word: what it shows or tells the speaker ("just show me the diff at the end", "give
# me the command first, explanation after", "name it in your reply", "先给我列个计划，我点头了
# 再动手", "你写得不好的地方直接说，不用客气"), in a standing form (an imperative about the
# answer's shape, "from now on", "when you …", "以后", "…的时候").
_TO_ME = re.compile(
    r"""\b(?:show|give|tell|send|hand|paste|ping|ask|check\s+with|walk)\s+me\b
      | \bin\s+your\s+(?:reply|replies|answers?|responses?|summary)\b | \bunless\s+i\s+ask\b
      | \bskip\s+the\s+(?:play-by-play|explanations?|recap|summary|preamble|intro|walkthrough|
          essay|narration)\b
      | \b(?:explain|spell\s+out)\b[^.]*\b(?:as\s+you\s+go|plain\s+words|simple\s+words|first|
          when\s+(?:they|it|those)\s+comes?\s+up)\b
      | (?:告诉|问|给|跟|和|让)我 | 我点头 | 直接说 | 不用客气 | 铺垫
      | (?:顺便)?(?:解释|讲讲|说明)(?:一下)?(?:为什么|原因|原理)""",
    re.VERBOSE | re.IGNORECASE,
)
_STANDING_FORM = re.compile(
    r"""^(?:also\s+|and\s+|just\s+|please\s+)*(?:skip|name|keep|reply|answer)\b
      | \b(?:from\s+now\s+on|going\s+forward|whenever|when\s+you|before\s+you|as\s+you\s+go|
          unless\s+i\s+ask|every\s+time|each\s+time|always|next\s+time|at\s+the\s+end|
          when\s+(?:they|it|those)\s+comes?\s+up|
          first\b[^.]*\b(?:after|then))\b
      | ^(?:以后|下次|每次|今后|往后) | 的时候 | 之前 | 直接说 | 不用客气 | 我点头""",
    re.VERBOSE | re.IGNORECASE,
)


# The speaker's taste or habit with a tool, without "I prefer": "I reason about StateFlow way better
# than LiveData", "polars reads a lot easier to me", "曲线我一般在 TensorBoard 里看", "Personally I
# do my exploratory analysis in polars".
_HABIT = re.compile(
    r"""\b(?:to|for)\s+me\b(?!\s+to\b) | ^(?:me\s+)?personally\b
      | ^i'?m\s+(?:more\s+of\s+)?an?\s+[\w-]+\s+(?:person|guy|girl|fan|user)\b
      | ^i\s+(?:usually|mostly|generally|normally|tend\s+to|reason|think\s+in|live\s+in|do\s+my|use|
          debug|test|read|look\s+at|check|work)\b
      | \b(?:way|much|a\s+lot)\s+(?:better|easier|faster|nicer)\b(?=.*\b(?:i|me|my)\b|^(?:i|my)\b)
      | ^(?:i|my)\b.*\b(?:way|much|a\s+lot)\s+(?:better|easier|faster|nicer)\b
      | 我(?:一般|通常|平时|基本|习惯|更喜欢|比较|自己(?:一般|主要|平时)?)(?!们) | 对我来说""",
    re.VERBOSE | re.IGNORECASE,
)


def speaker_habit(sentence: str) -> bool:
    """Is `sentence` the speaker's own taste or habit with a named tool (user scope)?"""
    return bool(
        _HABIT.search(sentence)
        # names a tool, or says so in Chinese habit words ("性能我自己一般在真机上测")
        and (
            re.search(r"[A-Za-z][\w.+-]{1,}", sentence)
            or re.search(r"我(?:自己)?(?:一般|通常|平时|习惯)", sentence)
        )
        and not re.search(
            r"\b(?:we|we're|our|us|team|everyone|nobody|none\s+of\s+us)\b|我们|大家|团队",
            sentence,
            re.I,
        )
        # the taste comes first: "polars reads a lot easier to me…, so any analysis you do for
        # me, polars please" is still the speaker's taste
        and not re.search(r"\b(?:you|your)\b|你", re.split(r",\s*so\b|，所以", sentence)[0], re.I)
        and not one_off(sentence)
        and not _TRANSIENT_EN.search(sentence)
        and not _TRANSIENT_ZH.search(sentence)
        and _substance(sentence)
    )


_COMMAND_IN_TEXT = re.compile(
    r"`([^`]{3,160})`|[:：]\s*(\S[^。；;]{3,160}?)\s*$|(?:就|跑|用)\s*([a-z][\w./-]*(?:\s+[\w./=*-]+){1,4})"
)
# When or how the command is the team's way: CI, "before/after", "like this", "invocation"
_HOW_WE_RUN = re.compile(
    r"\b(?:ci|like\s+this|the\s+same|invocation|how\s+(?:you|we)|before\s+(?:you|pushing|merging|"
    r"committing|a\s+release)|after\s+(?:you|changing|any)|always|every\s+time|first|otherwise)\b"
    r"|改完|之前|之后|提交前|上线前|过了再|每次",
    re.IGNORECASE,
)


_STANDING_ASK = re.compile(
    r"""^(?:please\s+)?(?:could|can|would)\s+you\b[^?]*\b(?:as\s+you\s+go|from\s+now\s+on|going\s+forward|
          in\s+(?:the\s+)?future|every\s+time|each\s+time|whenever)\b
      | ^(?:以后|今后|往后)[^？?]{2,40}?(?:能不能|可不可以|可以吗|好吗|行吗)""",
    re.VERBOSE | re.IGNORECASE,
)


# A troubleshooting tip: the symptom and what it means or what fixes it ("If you see 'connection
# refused', Redis isn't running; start it with docker compose up redis", "遇到 X 报错，就是 Y
# 没开").
_TROUBLESHOOTING = re.compile(
    r"""^(?:if|when(?:ever)?)\s+(?:you\s+)?(?:see|get|hit|run\s+into)\s+(?:a\s+|an\s+|the\s+)?
          (?:[`'"“][^`'"”]{3,60}[`'"”]|[\w.-]*(?:error|exception|timeout|refused|denied|failure)\w*)
          [^,;:]{0,40}[,;:]\s*\S
      | ^(?:如果|要是)?(?:遇到|碰到|看到|出现)[^，。]{2,40}?(?:报错|错误|异常|超时)[^，。]{0,10}
          [，,]\s*(?:就是|是因为|一般是|说明|就|先|需要|要)""",
    re.VERBOSE | re.IGNORECASE,
)


def states_a_command(sentence: str) -> bool:
    """Does `sentence` say how the team runs a build, test, lint or deploy, with the command?"""
    if not _HOW_WE_RUN.search(sentence) or one_off(sentence) or _is_question(sentence):
        return False
    for match in _COMMAND_IN_TEXT.finditer(sentence):
        command = next(g for g in match.groups() if g)
        if command_units(command.strip().rstrip(".").strip("`")):
            return True
    return False


def directs_the_assistant(sentence: str) -> bool:
    """Is `sentence` a standing instruction on how the assistant works with the speaker?"""
    return bool(
        _TO_ME.search(sentence)
        and _STANDING_FORM.search(sentence)
        and not _TRANSIENT_EN.search(re.sub(r"from\s+now\s+on", " ", sentence, flags=re.I))
        and not _TRANSIENT_ZH.search(sentence)
        and not particular(sentence)
        and _substance(sentence)
    )


_ZH_STANDING = re.compile(
    r"以后|今后|往后|每次|下次|之前|前先|的时候|时候|都|别|不要|不用|自己|一大段|长篇|交给我|留给我|我来|"
    r"总是|一律|尽量"
)


# A tracker, wiki or chat the team keeps things in.
_REF_PLACE = re.compile(
    r"""\b(?:go(?:es)?|live|lives|are|is|belong|belongs|tracked|filed|logged|documented|kept|
          described|explained|listed|recorded|
          written\s+up|posted)\s+(?:on|in|under|to|into)\b[^.;]{0,60}?
        \b(?P<tool>Linear|Jira|Confluence|Notion|Slack|Wiki|Google\s+(?:Docs|Drive)|SharePoint|
          Asana|Trello|PagerDuty|Opsgenie|Coda|Dropbox|Basecamp|GitHub\s+(?:Discussions|Projects|wiki))\b
      | (?:放|记|写|发|登记|归档)(?:在|到)[^，。]{0,20}?
        (?P<tool_zh>飞书|语雀|钉钉|Confluence|Notion|Jira)""",
    re.VERBOSE,
)


# Where the team keeps a kind of record: a tracker, a wiki, a docs space, a dashboard, an
# experiment store ("Bugs go on the Trello board 'QA'", "runbooks are in the ops wiki under …",
# "we use Linear for the backlog", "results are logged in MLflow's X experiment", "以飞书上那份
# 《指标字典》为准", "ticket 在 Jira 的 MOB board 上"). The place is what the memory is for: a
# reference, whatever else the sentence says.
_RECORD_TOOL = (
    r"Linear|Jira|Confluence|Notion|Trello|Asana|YouTrack|ClickUp|Basecamp|Airtable|Coda|"
    r"Google\s+(?:Docs?|Drive|Sheets?)|SharePoint|Dropbox|MLflow|W&B|Weights\s+&\s+Biases|"
    r"Postmark|PagerDuty|Opsgenie|Backstage|GitBook|Slack|wandb|Figma|Cachix|Crashlytics|Sentry|"
    r"Datadog|Grafana|Kibana|Zeplin|禅道|蓝湖|墨刀|1Password|1password|Bitwarden|Gitea|Metabase|"
    r"Looker|Superset|Miro|"
    r"GitHub\s+(?:Discussions|Projects|wiki)|飞书|语雀|钉钉|企业微信|腾讯文档|石墨"
)
_RECORD_NOUN = (
    r"\#[a-z][\w-]+|wiki|board|report|dashboard|experiment|space|tracker|handbook|knowledge\s+base|spreadsheet|"
    r"(?:confluence|notion|wiki)\s+page|page\s+in|sheet|drive|channel|看板|知识库|文档库|手册|字典|"
    r"值班群|群|面板|《[^》]{1,30}》"
)
_RECORD_PLACE = re.compile(
    rf"""(?:\b(?:is|are|go|goes|live|lives|sit|sits|kept|tracked|filed|logged|documented|
            written\s+up|posted?|posts|recorded|watch|collected|listed|described|land|lands|get\s+\w+ed|
            keeps?\s+(?:a|an|the|its|our)\s+[^.;]{{0,40}}?)
          \s+(?:\w+\s+){{0,2}}?(?:in|on|under|into|to|at)\b
        | \bwe\s+(?:use|keep|track)\s+(?=(?:{_RECORD_TOOL})\b)
        | \b(?:it'?s|is|are)\s+on\s+(?=(?:{_RECORD_TOOL})\b)
        | (?:在|放在|记在|记到|写在|登记在|登记到|发到|推到|按|以|去|到|照|看)\s*)
        [^.;。；]{{0,50}}?(?P<place>(?-i:{_RECORD_TOOL})|(?:{_RECORD_NOUN}))""",
    re.VERBOSE | re.IGNORECASE,
)
# "以 X 为准", "去那里查", "check there": the place is where the answer is looked up
_LOOKED_UP = re.compile(
    r"为准|去那(?:里|儿)|去\S{0,20}?(?:查|找|看)|\bcheck\s+there\b|\blook\s+(?:it\s+)?up\b|"
    r"\bwhere\s+to\s+look\b|\bwhere\s+(?:it|they)\s+(?:is|are|lives?)\b|\b(?:is|are)\s+where\b",
    re.I,
)


def _with_record_clauses(sentences: list[str]) -> list[str]:
    """`sentences`, with a clause that says where records live cut from a statement before it:
    "pluginval at strictness 5 is our bar, and the results go on the 'Host Matrix' page in the
    wiki" holds a rule and a reference."""
    out = []
    for sentence in sentences:
        match = _RECORD_PLACE.search(sentence)
        cut = -1
        if match is not None and record_place(sentence) is not None:
            cut = max(sentence.rfind(sep, 0, match.start()) for sep in (", and ", ", ", "，"))
        head = sentence[:cut] if cut > 0 else ""
        if (
            head
            and re.search(r"\b(?:is|are|was|were|has|have|runs?|uses?)\b|是|用|走", head)
            and (_substance(head))
        ):
            out.append(head + ",")
            out.append(re.sub(r"^(?:,\s*and|,|，)\s*", "", sentence[cut:]))
        else:
            out.append(sentence)
    return out


def record_place(sentence: str) -> str | None:
    """The tracker, wiki, docs page or dashboard where `sentence` says the team keeps a kind of
    record, or None."""
    match = _RECORD_PLACE.search(sentence)
    if match is None:
        return None
    place = match.group("place")
    tool = re.search(rf"(?-i:{_RECORD_TOOL})", sentence[match.start() :])
    if tool is not None:  # "the Data Quality board in Linear": the tool names the place
        place = tool.group()
    if re.search(r"(?<!\w)I(?!\w)|我(?!们)", sentence[: match.start()]) and not re.search(
        r"写进|写到|记到|记在|放到|发到|登记|\bwrite\s+(?:it|this|that)\s+up\b", sentence, re.I
    ):
        return None  # "曲线我一般在 TensorBoard 里看": the speaker's habit
    if re.fullmatch(
        r"board|space|experiment|dashboard|page\s+in|sheet|drive|channel|report|群|面板",
        place,
        re.I,
    ) and not (
        re.search(
            rf"(?-i:{_RECORD_TOOL})|\b[A-Z][\w-]+\b[^.]{{0,20}}\b{place}\b|['‘’\"“《]", sentence
        )
        or _LOOKED_UP.search(sentence)
    ):
        return None  # "the board" of a game, "disk space": no named place of record
    return place


# "The app is a …", "Our backend is an …": what the system is, however it goes on
_DESCRIBES_THE_SYSTEM = re.compile(
    r"^(?:the|our|this)\s+(?:[\w-]+\s+)?(?:app|application|service|project|backend|frontend|api|"
    r"repo|system|site|codebase|stack|product|platform)\s+is\s+(?:a|an)\b"
    # "Workers are plain goroutines …": what a part is made of
    r"|^(?:the\s+|our\s+)?[\w-]+\s+(?:is|are)\s+(?:a|an|plain|just|simple|ordinary)\s+[\w-]+",
    re.IGNORECASE,
)


_MY_OWN = re.compile(r"^(?:my\s+(?!team|company|org|squad)|我的(?!团队|项目|公司))", re.IGNORECASE)


def _finish(sentence: str) -> str:
    text = re.sub(r"\s+", " ", sentence).strip().rstrip(",，;；:：-–— ")
    text = re.sub(r"^(?:[,，;；:：–— ]|-(?![-\w]))+", "", text)  # keep "--json", "-race"
    if not text:
        return ""
    if text[0].isalpha() and not (len(text) > 1 and text[1].isupper()):  # "iOS", "eBPF"
        text = text[0].upper() + text[1:]
    if (text[-1].isascii() and text[-1].isalnum() or text[-1] in ")`'\"") and not CJK.search(text):
        text += "."
    return text


def _substance(text: str, drop: str = "") -> bool:
    """Does `text` (minus the trigger `drop`) say something: two content words or three
    non-function CJK characters?"""
    rest = text.replace(drop, " ") if drop else text
    latin = [
        t
        for t in re.findall(r"[A-Za-z][A-Za-z0-9_.+-]*|\d+[A-Za-z]\w*", rest)
        if t.lower() not in STOPWORDS and t.lower() not in TRIGGER_WORDS and len(t) > 1
    ]
    han = [c for c in rest if CJK.match(c) and c not in CJK_FUNCTION]
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


def _is_transient_prohibition(sentence: str) -> bool:
    text = re.sub(r"from\s+now\s+on", " ", sentence, flags=re.IGNORECASE)
    if _TRANSIENT_EN.search(text) or _TRANSIENT_ZH.search(text):
        return True
    if re.match(r"^(?:please\s+)?(?:don'?t|do\s+not)\s+\w+\s+the\s+\w+\s*[.!]?$", sentence, re.I):
        return True  # "Don't swallow the error.": about the code at hand
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


def _classify(
    sentence: str, record_index: int, *, depth: int = 0, statements: bool = True
) -> Draft | None:
    """The memory one user sentence holds, or None. Rules in priority order; the statement
    model last, unless `statements` is False (the trigger rules alone, for fitting it)."""
    s = _strip_fillers(sentence)

    def draft(kind: str, rule: str, importance: int, sub: str = "", content: str = "") -> Draft:
        return Draft(
            kind=kind,
            content=_finish(content or s),
            importance=importance,
            record_start=record_index,
            record_end=record_index,
            rule=rule,
            subcategory=sub,
        )

    if s and _SELF_DESCRIPTION.search(s) and not _is_question(s) and not _WE.search(s):
        return draft(Kind.USER.value, "profile", 2)
    if s and _YOUR_ROLE.match(s) and _substance(s) and not _is_question(s):
        return draft(Kind.FEEDBACK.value, "feedback", 2)
    if s and _STANDING_ASK.search(s) and _substance(s) and not _HEDGE.search(s):
        # "Could you explain the migration stuff in plain words as you go?": asked as a
        # question, meant for the whole collaboration
        return draft(Kind.FEEDBACK.value, "feedback", 2)
    if s and _TROUBLESHOOTING.match(s) and _substance(s) and not _HEDGE.search(s):
        # "If you see 'connection refused', Redis isn't running: start it with …": a lesson
        return draft(Kind.LESSON.value, "lesson", 2)
    if not s or _is_question(s) or _HEDGE.search(s) or _CONDITIONAL_START.match(s):
        return None
    if len(s) > MAX_CONTENT_CHARS * 2:  # a pasted log or document, not a statement
        return None

    # remember / keep in mind: strip, re-classify, else a project or user memory.
    remember = _REMEMBER.match(s)
    if remember and depth == 0 and remember.end() < len(s):
        rest = s[remember.end() :]
        inner = _classify(rest, record_index, depth=1, statements=False)
        if inner is not None:
            return replace(inner, importance=max(inner.importance, 3))
        if not _substance(rest) or one_off(rest):  # "fwiw I already bounced staging this morning"
            return None
        if statement_kind(rest, normative=False) == Kind.PROJECT.value:
            return draft(Kind.PROJECT.value, "remember", 3, fact_subcategory(rest), rest)
        return draft(Kind.USER.value, "remember", 3, content=rest)

    # "This bit us before: …", "got bitten by…", "这个坑…": a pitfall the team learned (its
    # story may sound like a report: "…called .save() in a loop")
    if _LESSON_MARK.search(s):
        rest = re.sub(
            r"\b(?:first|second|third|fourth|fifth|\w+th|times?|again|once|twice|before|already|"
            r"now|ugh|yet|that'?s|this|it)\b",
            " ",
            _LESSON_MARK.sub(" ", s),
            flags=re.IGNORECASE,
        )
        # "新来的基本都在这儿栽过": who fell into it and where ("here") names no pitfall of its own
        rest = re.sub(
            r"新来的|新人|大家|基本(?:上)?|都|在这儿|在这里|这儿|这里|这上面|人", " ", rest
        )
        if _substance(rest):
            return draft(Kind.LESSON.value, "lesson", 3)
        # "Third time that's bitten us.": the pitfall is the sentence before (user_memories)
        return draft(Kind.LESSON.value, "lesson_tail", 3)

    # where the team keeps a kind of record ("Bugs for this go on the Trello board 'QA'": the
    # board outlives the task)
    place = record_place(s)
    if (
        place is not None
        and _substance(s)
        # "帮我看一下 Sentry 上的报错", "can you check the dashboard": a request, not a pointer
        # (a problem word is no veto: "线上 crash 去 Crashlytics 看" is what the records are about)
        and not re.match(
            r"^(?:please\s+)?(?:can|could|would)\s+you\b|^(?:帮我|帮忙|麻烦|请帮|给我)|"
            r"^(?:please\s+)?(?:check|look|open|see)\b",
            s,
            re.IGNORECASE,
        )
    ):
        result = draft(Kind.REFERENCE.value, "reference", 2)
        result.title = f"Reference: {_reference_target(s) or place}"
        return result

    if not_standing(s):  # this week's state, a status update, a step of this task
        return None

    # how the speaker wants the assistant to work with them ("hand me X and I'll run it",
    # "skip pasting whole files at me", "别写一大段")
    if (
        _ASSISTANT_ROLE.search(s)
        and _substance(s)
        and not particular(s)
        # "你改完跟我说一声", "跑完测试把结果贴给我": a request for now unless said for good
        and not (CJK.search(s) and not _ZH_STANDING.search(s) and not re.search(r"[A-Za-z]{3}", s))
    ):
        if (
            re.search(r"别自己|不要自己|你自己|自己(?:动|改|跑|调|写)|\byourself\b", s, re.I)
            and (IDENTIFIER.search(s) or CODE_WORDS_ZH.search(s))
            and not re.search(r"\b(?:me|my)\b|我(?!们)", s, re.I)
        ):
            # "随机种子你别自己写 torch.manual_seed，统一走 utils/seed.py": how the code is written
            return draft(Kind.RULE.value, "convention", 2)
        return draft(Kind.FEEDBACK.value, "feedback", 2)

    # to-do
    todo = _TODO_EN.search(s) or _TODO_ZH.search(s)
    if todo and re.search(
        r"(?:留|加|写|补)(?:个|一个|上)\s*TODO|\b(?:leave|add|put|drop)\s+a\s+todo\b", s, re.I
    ):
        todo = None  # "代码里 LIMIT 那留个 TODO 指过去": a comment to write in the code
    if todo and _substance(s, todo.group()):
        body = _TODO_PREFIX.sub("", s)
        return draft(Kind.PROJECT.value, "todo", 2, Subcategory.TODO.value, "TODO: " + body)

    # prohibition
    prohibition = _PROHIBIT_EN.match(s) or _PROHIBIT_EN_ANYWHERE.search(s) or _PROHIBIT_ZH.search(s)
    if prohibition and not _is_vague(s, prohibition.group()) and not _is_transient_prohibition(s):
        if _substance(s) and not re.match(
            r"^(?:不要|别)(?:急|紧|担心|客气|管|理)", s[prohibition.start() :]
        ):
            return draft(prohibition_kind(s), "prohibition", 3)
        return None

    # preference
    preference = _PREF_EN.match(s) or _PREF_ZH.match(s)
    if preference and not _is_vague(s, preference.group()):
        if _PREF_VAGUE_OBJECT.match(s) or _PREF_ZH_VAGUE.match(s) or not _substance(s):
            return None
        if _TRANSIENT_EN.search(re.sub(r"from\s+now\s+on", " ", s, flags=re.I)):
            return None
        importance = 3 if _STRONG.search(s) else 2
        return draft(preference_kind(s), "preference", importance)

    # profile
    if _PROFILE.match(s) and _substance(s):
        return draft(Kind.USER.value, "profile", 2)

    # the speaker's own way of working, said without "I prefer"
    if speaker_habit(s):
        return draft(Kind.USER.value, "preference", 2)

    # how the team runs a thing, said with the command line ("CI runs them like this: …",
    # "that's the test invocation: cabal test all …", "改完就 composer run lint")
    if states_a_command(s):
        return draft(Kind.PROJECT.value, "command", 2, Subcategory.OPS.value)

    # how the assistant reports to the speaker, said without a trigger word
    if directs_the_assistant(s):
        return draft(Kind.FEEDBACK.value, "feedback", 2)

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
    found = convention(s)
    if fact is None and not (
        found and found[0] == Kind.RULE.value and re.search(r"\b(?:only|nowhere|never|must)\b", s)
    ):  # "Cron jobs go in config/schedule.yml and nowhere else" says where they must go
        fact = _LOCATION_EN.match(s)
    if fact is None and not (found and found[0] == Kind.RULE.value):  # a rule wins over "from X"
        fact = (
            _SOURCE_EN.match(s)
            or _IN_THIS_REPO_EN.search(s)
            or _IS_NAMED_EN.match(s)
            or _ITS_A_EN.match(s)
            or _PASSIVE_THROUGH_EN.match(s)
        )
        if fact is not None and reports_problem(s):  # "The checkout is Stripe, and it 500s"
            fact = None
    zh_fact = None if fact else (_FACT_ZH.search(s) or _LOCATION_ZH.match(s))
    if not (fact or zh_fact) and not (found and found[0] == Kind.RULE.value):
        zh_fact = _SOURCE_ZH.match(s)
    if (fact or zh_fact) and _substance(s) and not _TRANSIENT_ZH.search(s):
        match = fact or zh_fact
        assert match is not None
        clause_start = max(s.rfind(sep, 0, match.start()) for sep in "，,;；") + 1
        body = s[clause_start:].strip() if clause_start > 0 else s
        head = s[:clause_start].strip(" ，,;；")
        if head and not (one_off(head) or reports_problem(head) or not _substance(head)):
            # "消费者处理必须幂等，我们的做法是…": the clause before says as much; only a task or
            # a report before the fact ("帮我把副本数调到 4，我们的服务都部署在 ACK 上") is cut
            body = s
        if _MY_OWN.match(body):  # "My editor is Neovim": the speaker's own setup
            return draft(Kind.USER.value, "fact", 2, content=body)
        if re.search(r"\bconventions?\b|规范|约定|规定", body, re.IGNORECASE):
            # "commit title 我们的 convention 是 conventional commits": a convention is a rule
            return draft(Kind.RULE.value, "fact", 2, content=body)
        return draft(Kind.PROJECT.value, "fact", 2, fact_subcategory(body), body)

    # a convention stated without a trigger word
    if found is not None and _substance(s) and not particular(s):
        kind, importance, sub = found
        if _DESCRIBES_THE_SYSTEM.match(s):  # "The app is a single-activity Compose app, …"
            kind, sub = Kind.PROJECT.value, fact_subcategory(s)
        return draft(kind, "convention", importance, sub)

    # where the team keeps a kind of record ("Incidents go on the DQ board in Linear")
    kept_in = _REF_PLACE.search(s)
    if kept_in and statement_candidate(s) and not particular(s):
        result = draft(Kind.REFERENCE.value, "reference", 2)
        result.title = f"Reference: {kept_in.group('tool') or kept_in.group('tool_zh')}"
        return result

    # a durable statement recognised by its structure (`statements`)
    if (
        statements
        and len(_STACK_ITEM.findall(s)) >= 2
        and re.search(r"\d\.\d|\bv\d", s)
        and statement_candidate(s)
        and not one_off(s)
        and not _IMPERATIVE_START.match(s)
    ):
        # "context: Spring Boot 3.2 + Spring Batch 5, Java 17, Oracle 19c": what the project is
        # built on, named with versions
        return draft(Kind.PROJECT.value, "fact", 2, Subcategory.OVERVIEW.value)
    if statements and statement_candidate(s):
        judged = judge_statement(s)
        if judged is not None:
            kind, importance = judged
            pointer = _statement_pointer(s)
            if pointer is not None:  # a durable statement that points at a page or a doc
                result = draft(Kind.REFERENCE.value, "statement", 2)
                result.title = f"Reference: {pointer}"
                return result
            sub = fact_subcategory(s) if kind == Kind.PROJECT.value else ""
            return draft(kind, "statement", importance, sub)
    return None


# A named part of a stack and its version: "Spring Boot 3.2", "Java 17", "Oracle 19c", "Swift 5.10".
_STACK_ITEM = re.compile(
    r"(?<![\w.])(?:(?-i:[A-Z][\w.+#-]*)(?:\s+[A-Z][\w.+#-]*)?\s+v?\d+(?:\.\d+)*[a-z]?"
    r"|[a-z][\w.+#-]*\s+(?:v\d+|\d+\.\d+)(?:\.\d+)*)\b"
)
_IMPERATIVE_START = re.compile(
    r"^(?:please\s+)?(?:upgrade|bump|update|migrate|move|switch|install|add|remove|drop|use|try)\b"
    r"|^(?:把|升级|升到|换成|改成|帮我)",
    re.IGNORECASE,
)


def _statement_pointer(sentence: str) -> str | None:
    """The lasting URL (not local, not a PR or commit) or doc path a statement names, or None."""
    for match in _URL.finditer(sentence):
        url = match.group().rstrip(".,:;!?")
        if not (_LOCAL_URL.search(url) or _EPHEMERAL_URL.search(url)):
            return url
    path = _DOC_PATH.search(_URL.sub(" ", sentence))
    return path.group() if path else None


# The assistant's standing in the work ("You're read-only against clusters", "你只能看，不能改"):
# how it works with the speaker.
_YOUR_ROLE = re.compile(
    r"^(?:you(?:'re|\s+are)\s+(?:read-only|not\s+allowed|allowed|only\s+allowed|never\s+allowed)|"
    r"you\s+(?:can|may|cannot|can'?t|mustn'?t)\s+(?:only\s+)?(?:read|look|run|touch|change|apply|push|"
    r"merge|deploy|commit))\b|^你(?:只能|只可以|不能|不可以)",
    re.IGNORECASE,
)


def statement_candidate(s: str) -> bool:
    """Can the sentence (fillers stripped) be a statement at all: not a question, a hedge, a
    conditional, a pasted block, a pointer back at context, or a sentence without substance?"""
    if not s or _is_question(s) or _HEDGE.search(s) or _CONDITIONAL_START.match(s):
        return False
    if len(s) > MAX_CONTENT_CHARS or _VAGUE.search(s):  # "以后都这样写" points back at context
        return False
    return _substance(s)


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
) -> tuple[Draft | None, str]:
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
        # "not that one", "the other one", "不是这个": a pointer at the context, nothing stated
        or re.match(
            r"^(?:not\s+)?(?:that|this|the\s+other|the\s+first|the\s+second)\s+one\b\W*$",
            body,
            re.I,
        )
    ):
        return None, remaining if head else text
    if not (_ASSERTION.search(body) or _CONTRAST.search(body)):
        # not a correction, but it may hold a rule of its own ("No unwraps outside of tests")
        return None, text
    answered_question = bool(_ASKED.search(assistant_text))
    if (
        answered_question
        and _BARE_NO.match(stripped)
        and not _WRONG_WORD.search(stripped[:trigger_end])
        and not _CONTRAST.search(body)
    ):
        # "Nope, every version lives in libs.versions.toml": the answer may still state a thing
        return None, rest
    importance = 3 if _EMPHATIC.search(stripped) else 2
    # A correction about the team's project is the team's knowledge (project scope); one about
    # how the assistant works, or about nothing project-like, is the speaker's feedback.
    about = _SAY_AGAIN.sub("", body)
    kind = statement_kind(about, normative=bool(_NORMATIVE.search(about)))
    if kind is None or kind == Kind.USER.value or _FACT_EN.search(about) or _FACT_ZH.search(about):
        kind = Kind.FEEDBACK.value if kind in (None, Kind.USER.value) else Kind.PROJECT.value
    memory = Draft(
        kind=kind,
        content=_finish(body),
        importance=importance,
        record_start=assistant_index,
        record_end=record_index,
        rule="correction",
        subcategory=fact_subcategory(body) if kind == Kind.PROJECT.value else "",
    )
    return memory, remaining


# A choice the team made and why ("当初选 embassy 没选 RTIC 也是因为…", "the reason we're on fly and
# not vercel", "We looked at a Postgres table for it in the design review…"): project knowledge of
# its decisions, not a rule, even when it sounds like one.
_DECISION = re.compile(
    r"""当初|为啥没用|为什么没用|没选|(?:选|用)了?\S{1,20}?而不是
      | \b(?:we\s+)?(?:chose|picked|went\s+with|settled\s+on|decided\s+(?:on|against))\b
      | \bthe\s+reason\s+(?:we|we'?re|is\s+that)\b | \bthat'?s\s+settled\b | \bdesign\s+review\b""",
    re.VERBOSE | re.IGNORECASE,
)
# Where to look a thing up by its address: a host or an address named ("Airflow 在
# airflow.internal.example.net", "队列卡了去看 Horizon，地址 /horizon").
_LOOK_AT_ADDRESS = re.compile(
    r"(?:去看|去查|看|在|\bat\b|\blives\s+at\b|\bis\s+at\b)\s*[^，。,;；]{0,30}?"
    r"\b[a-z][\w-]*(?:\.[\w-]+)*\.(?:net|com|io|org|internal|local|dev|cn|corp)\b"
    r"|(?:地址|\baddress\b|\burl\b)\s*(?:是|is)?\s*[:：]?\s*/\S+",
    re.IGNORECASE,
)


def _decide_kind(memory: Draft, sentence: str) -> None:
    """Kinds that follow from what the sentence is about, whichever rule found it."""
    if memory.kind in (Kind.RULE.value, Kind.PROJECT.value) and _LOOK_AT_ADDRESS.search(sentence):
        memory.kind, memory.subcategory = Kind.REFERENCE.value, ""
    elif memory.kind == Kind.RULE.value and _DECISION.search(sentence):
        memory.kind, memory.subcategory = Kind.PROJECT.value, Subcategory.DECISIONS.value


# "it"/"them"/它 in a sentence's first words, standing for something said before ("It's all
# Compose" names a thing).
_LEANS_ON_UNSAID = re.compile(
    r"\b(?:it|them)\b(?!'s\s+(?:a|an|all|the)\b|\s+(?:is|was)\s+(?:a|an|all)\b)|^它(?!们)", re.I
)


def _refers_back(sentence: str) -> bool:
    """Does `sentence` lean on the one before it: a pronoun for what it said ("it", "that", "它",
    "这样"), within its first words?"""
    head = " ".join(sentence.split()[:6])
    return bool(
        re.search(r"\b(?:it|its|it'?s|that|that'?s|this|they|them)\b", head, re.IGNORECASE)
        or re.match(r"^(?:它|这样|这个|那样|否则|不然)", sentence.strip())
    )


def _continues(clause: str) -> bool:
    """Does a comma clause lean on the clause before it rather than name a thing of its own: the
    speaker again ("…, I barely open the Airflow UI"), or a bare verb phrase with no name or
    code word ("…，不要提交到仓库")?"""
    if re.match(r"^i\b", clause, re.IGNORECASE):
        return True
    return bool(
        CJK.search(clause)
        and not re.search(r"[A-Za-z]", clause)
        and re.match(r"^(?:不要|别|不|禁止|也|都)", clause)
    )


# "To redo the 28th: remember that…", "amount 那里换一下：金额…用 NUMERIC 存": a short lead-in
# before a colon that says nothing durable itself.
_LEAD_IN = re.compile(r"^(?P<head>[^:：]{1,40}?)\s*[:：]\s*(?P<tail>\S.*)$")


def _lead_in_tail(sentence: str) -> str | None:
    match = _LEAD_IN.match(_strip_fillers(sentence))
    if match is None:
        return None
    head = match.group("head")
    if len(head.split()) > 6 or (CJK.search(head) and len(head) > 14) or "`" in head:
        return None
    return match.group("tail")


def _join(previous: Draft, memory: Draft, sep: str) -> None:
    if sep == " ":  # a sentence after a sentence
        sep = (
            ""
            if re.search(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]$", previous.content)
            else " "
        )
        previous.content = previous.content + sep + memory.content
    else:
        tail = memory.content
        if sep == ", " and not CJK.search(tail[:1]):
            tail = tail[:1].lower() + tail[1:]
        previous.content = previous.content.rstrip("。.") + sep + tail
    previous.importance = max(previous.importance, memory.importance)
    previous.record_end = max(previous.record_end, memory.record_end)


_IMPERATIVE_TASK_HEAD = (
    r"^(?:please\s+|now\s+|also\s+|just\s+|then\s+)*(?:add|fix|build|bump|rename|refactor|make|"
    r"create|remove|delete|update|implement|look|check|find|show|give|move|write|change|replace|"
    r"revert|merge|push|deploy|run|try|investigate|debug|leave|use)\b"
)


# A past incident and what it cost: the story behind a norm ("in feb somebody added X and we got a
# double-reserve incident", "In the spring we mixed one into a feature branch and bisecting … was
# miserable", "之前开过，吞吐掉了 15%", "以前就这么丢过一周的备份"). Told next to a norm, the two
# are one lesson.
_INCIDENT = re.compile(
    r"""(?:\b(?:last\s+(?:year|quarter|month|week|spring|summer|fall|autumn|winter|release|time)|
            in\s+(?:the\s+)?(?:spring|summer|fall|autumn|winter)|
            in\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*|
            once|ever\s+since|somebody|someone|the\s+[\d.]+\s+release)\b
          [^.;]*?\b(?:broke|lost|took\s+(?:\w+\s+){0,3}down|went\s+down|(?:was|were)\s+down|downtime|
            incident|outage|miserable|
            corrupt\w*|double[- ]\w+|failed|crashed|wiped|leaked|paged|lost|nightmare|painful)\b)
      | \b(?:has|have)\s+(?:failed|broken|bitten|burned)\s+more\b
      | (?:之前|以前|去年|上次|那次|上个?月|上周|有次|有一次|曾经|前年)[^。；;]*?
          (?:丢|掉了|掉一半|挂了|崩|炸|出过|注入|查了|回滚|事故|错的数据|全是错|对不上|没了|被\S{0,4}坑|
            错了|漏了|挂过|出事|重复|追了|慢了|吐槽|投诉|赔|清了|清空|全清|删了|全没|打挂|僵死|卡死|宕)
      # an error that comes back under a condition: "or you get exactly that error", "这个报错每个
      # 新 ViewModel 都会碰到", "消费别的域的事件都会撞上这个"
      | \b(?:or|otherwise)\s+you(?:'ll)?\s+get\s+(?:exactly\s+)?(?:that|this|the\s+same)\b
      | (?:不然|否则)(?:就)?(?:是|会)?(?:这个|这种)?(?:报错|报这个错)
      | \b(?:happen(?:s|ed)?\s+to\s+me|bit(?:ten)?\s+me)\b[^.]{0,20}
          \b(?:many|several|a\s+few|every|more)\b
      | (?:都会|总会|每次都)(?:碰到|撞上|遇到|踩到|报)""",
    re.VERBOSE | re.IGNORECASE,
)


_PRESCRIBES = re.compile(
    r"\b(?:always|never|must|mustn'?t|only|should|has\s+to|have\s+to|need\s+to|don'?t|do\s+not)\b"
    r"|\b(?:before|after)\s+you\b|一律|必须|务必|统一|只能|只用|不要|别(?!人)|一定要|都要|都用|都走"
)


def _incident(sentence: str) -> bool:
    return bool(_INCIDENT.search(sentence))


def _topic_terms(text: str) -> set[str]:
    """Names and identifiers a sentence is about: code words, capitalised or mixed-case names,
    paths, and runs of three or more CJK characters are not used (too loose)."""
    # a pinned version ("1.6.6") names the same thing wherever it is said
    terms = {v for v in re.findall(r"(?<![\w.])\d+\.\d+\.\d+(?![\w.])", text)}
    for token in re.findall(r"[A-Za-z_][\w./@#-]*[\w]", text):
        if token.lower() in STOPWORDS or token.lower() in TRIGGER_WORDS or len(token) < 3:
            continue
        if len(token) >= 4 or re.search(r"[A-Z_./@#]|\d", token):
            terms.add(token.lower().rstrip("s"))
    return terms


def _shared_topic(a: str, b: str) -> bool:
    """Do two sentences name the same thing (an identifier, a product or a path)?"""
    return bool(_topic_terms(a) & _topic_terms(b))


def _leads_in(clause: str) -> bool:
    """Can a clause with no memory of its own open the memory of the clause after it: short,
    saying something, and no task, question, report or remark about the moment?"""
    c = _strip_fillers(clause).rstrip(",，")
    return bool(
        c
        and len(c.split()) <= 10
        and len(c) <= 60
        and _substance(c)
        and not _is_question(c)
        and not _HEDGE.search(c)
        and not _CONDITIONAL_START.match(c)
        and not reports_problem(c)
        and not re.match(r"^(?:please\s+)?(?:can|could|would)\s+you\b|^(?:帮我|麻烦|请帮)", c, re.I)
        and not re.match(_IMPERATIVE_TASK_HEAD, c, re.I)
    )


def _same_scope(a: Draft, b: Draft) -> bool:
    """Do two memories land in the same scope (the team's project, or the speaker's own)? "I
    can't stand default exports; named exports only" is the speaker's taste, then a rule."""
    return DEFAULT_SCOPE[Kind(a.kind)] == DEFAULT_SCOPE[Kind(b.kind)]


def user_memories(expanded: Sequence[SourceRecord]) -> list[Draft]:
    drafts: list[Draft] = []
    opener = True
    for position, record in enumerate(expanded):
        if record.type != USER:
            continue
        raw = readable_text(record)
        if raw is None:
            continue
        text = clean_user_text(raw)
        if not text.strip():
            continue
        correction, text = _correction(text, expanded, position, record.index)
        if correction is not None:
            drafts.append(correction)
        cursor = 0
        # a correction's body can go on in the sentences after it ("Please you do not edit .unity
        # scene files. Only Marta touches the scenes.")
        previous: Draft | None = correction
        previous_sentence = ""
        lesson: Draft | None = None
        norm: Draft | None = None  # the last rule or project memory of this message
        story = ""  # an incident told before the norm it taught
        for sentence in _with_record_clauses(split_sentences(text)):
            at = text.find(sentence, cursor)
            joined = at > 0 and text[:at].rstrip().endswith((";", "；"))
            comma = at > 0 and text[:at].rstrip().endswith((",", "，"))
            cursor = max(cursor, at + len(sentence))
            bare = _strip_fillers(sentence)
            # The session's first sentence opens the task ("I need a 'Void invoice' action",
            # "库存服务加一个…RPC"): only a trigger rule, never the statement model, keeps it.
            memory = _classify(sentence, record.index, statements=not opener)
            opener = False
            if memory is not None:
                _decide_kind(memory, bare)
            if memory is None and not not_standing(bare):
                tail = _lead_in_tail(sentence)
                if tail is not None:
                    memory = _classify(tail, record.index)
            if (
                lesson is not None
                and not _is_question(bare)
                # "…今晚 8 点有 playtest，先提交了": the moment is not part of the story
                and not one_off_by_construction(bare)
                and not not_standing(bare)
                # "…蓝图那边不用动，我们 gameplay 逻辑全在 C++": what the project is, on another
                # topic, is a memory of its own
                and not (
                    memory is not None
                    and memory.kind in (Kind.PROJECT.value, Kind.REFERENCE.value, Kind.USER.value)
                    and not _shared_topic(lesson.content, memory.content)
                )
            ):
                # The rest of a lesson's message tells the story and the practice it left ("we
                # got burned by …. Signals fired …. Do it with bulk_update."): one memory.
                _join(lesson, memory or replace(lesson, content=_finish(sentence)), " ")
                continue
            lesson = None
            if _incident(bare) and (memory is None or memory.kind != Kind.LESSON):
                if norm is not None and not (memory is not None and comma and previous is not norm):
                    # "Lock updates always go in their own PR. In the spring we mixed one in and
                    # bisecting was miserable.": the norm and its story, one lesson
                    _join(norm, replace(norm, content=_finish(sentence)), " ")
                    if norm.kind in (Kind.RULE.value, Kind.PROJECT.value):
                        norm.kind, norm.subcategory = Kind.LESSON.value, ""
                    previous = norm
                    continue
                if memory is not None and _PRESCRIBES.search(sentence):
                    # "拼 SQL 一律用 $wpdb->prepare，去年…被人注入过一次": norm and story at once
                    if memory.kind in (Kind.RULE.value, Kind.PROJECT.value):
                        memory.kind, memory.subcategory = Kind.LESSON.value, ""
                elif memory is None or memory.kind in (Kind.RULE.value, Kind.PROJECT.value):
                    story = _finish(sentence)  # the norm comes next
                    previous = None
                    continue
            if memory is not None and memory.rule == "lesson_tail":
                # "Renaming a field wipes its data …. Third time that's bitten us."
                if previous is not None and previous in drafts:
                    drafts.remove(previous)
                memory.rule = "lesson"
                if previous_sentence:
                    memory.content = _finish(previous_sentence) + " " + memory.content
                drafts.append(memory)
                previous = lesson = memory
                previous_sentence = sentence
                continue
            before, previous_sentence = previous_sentence, sentence
            if (
                memory is not None
                and previous is None
                and memory.rule in ("statement", "convention", "prohibition")
                and _LEANS_ON_UNSAID.search(" ".join(bare.split()[:4]))
            ):
                # "Nobody adds it anywhere in this codebase.", "It's written in the header
                # comment…" after a sentence that held no memory: "it" is something not kept
                memory = None
            if memory is None:
                if (
                    (comma or joined)
                    and previous is not None
                    and (_continues(bare) or joined and _refers_back(sentence))
                ):
                    # "I read task logs in Loki, I barely open the Airflow UI": one sentence
                    _join(previous, replace(previous, content=_finish(sentence)), ", ")
                    continue
                if (
                    not comma
                    and previous is not None
                    and previous.record_end == record.index
                    and previous.kind in (Kind.RULE.value, Kind.PROJECT.value, Kind.LESSON.value)
                    and _refers_back(sentence)
                    and not _is_question(bare)
                    and not _HEDGE.search(sentence)
                    and not one_off_by_construction(bare)
                    and not not_standing(bare)
                    and not re.match(_IMPERATIVE_TASK_HEAD, bare, re.I)
                ):
                    # "Don't hand-edit config/crd/bases. `make manifests` regenerates it from the
                    # markers and CI diffs the output…": the reason, told next, is the same memory
                    _join(previous, replace(previous, content=_finish(sentence)), " ")
                    continue
                previous = None
                continue
            if (
                (joined or comma)
                and previous is not None
                and (_same_scope(previous, memory) or _continues(memory.content))
                # a record place cut from the statement before it stays a reference of its own
                and not (memory.kind == Kind.REFERENCE.value != previous.kind)
            ):
                # One sentence, one memory: a clause after a comma or a semicolon elaborates the
                # one before it ("Money is integer cents end to end; floats only show up in the
                # templates", "证书放在 Vault 下，不要提交到仓库", "Skip the recap…, I read the
                # diff anyway"), whatever rule it fired on its own.
                _join(
                    previous,
                    memory,
                    "；"
                    if joined and CJK.search(previous.content[-1:])
                    else "; "
                    if joined
                    else "，"
                    if CJK.search(previous.content[-1:])
                    else ", ",
                )
                continue
            if (
                previous is not None
                and previous.record_end == memory.record_end
                and (
                    _same_scope(previous, memory)
                    # "When you change a prefab, name it in your reply. Prefab YAML diffs are
                    # unreadable and I re-check each one": the speaker's reason for it
                    or (
                        previous.kind in (Kind.FEEDBACK.value, Kind.USER.value)
                        and re.search(r"(?<!\w)I(?!\w)|\bme\b|我(?!们)", memory.content)
                    )
                )
                and memory.kind != Kind.REFERENCE.value
                and _shared_topic(previous.content, memory.content)
            ):
                # "别放 UserDefaults。… UserDefaults 只放小 flag，缓存文件放 Application Support":
                # the next sentence of a message on the same thing goes on with the same memory
                _join(previous, memory, " ")
                continue
            if (
                previous is not None
                and previous.kind == memory.kind
                and memory.kind in (Kind.FEEDBACK.value, Kind.RULE.value)
                and previous.record_end == memory.record_end
            ):
                # "Skip the play-by-play. Just show me the diff at the end.": how to answer the
                # speaker, said in two sentences, is one instruction
                _join(previous, memory, " ")
                continue
            if (
                (comma or joined)
                and previous is None
                and before
                and (
                    re.match(
                        r"^(?:never|no|not|don'?t|不要|别|不用)\b", _strip_fillers(before), re.I
                    )
                    and len(before.split()) <= 4
                    or _leads_in(before)
                )
            ):
                # "Never npm, always pnpm", "go 1.22 across the whole monorepo, don't pull in …",
                # "I'm coming from iOS, I did Core Data for years …": the clause before, with no
                # memory of its own, belongs to this one (one sentence, one memory)
                head = _strip_fillers(before).rstrip(",，;；")
                head = head[:1].upper() + head[1:]
                if memory.kind == Kind.RULE.value and describes_system(head):
                    # "go 1.22 across the whole monorepo, don't pull in anything that needs
                    # 1.23": what the project is on, and what follows from it
                    memory.kind, memory.subcategory = Kind.PROJECT.value, fact_subcategory(head)
                if CJK.search(before):
                    memory.content = head + ("；" if joined else "，") + memory.content
                else:
                    sep = "; " if joined else ", "
                    memory.content = head + sep + memory.content[:1].lower() + memory.content[1:]
            if (
                memory.rule == "prohibition"
                and CJK.search(memory.content)
                and len(re.sub(r"[\s。.!！，,]", "", memory.content)) <= 5
            ):
                previous = None
                continue  # "别搞反。", "别用它跑。": too short to name more than this step
            if story and memory.kind in (Kind.RULE.value, Kind.PROJECT.value):
                memory.content = story + " " + memory.content
                memory.kind, memory.subcategory = Kind.LESSON.value, ""
            story = ""
            drafts.append(memory)
            previous = memory
            if memory.kind in (Kind.RULE.value, Kind.PROJECT.value, Kind.LESSON.value):
                norm = memory
            if memory.kind == Kind.LESSON.value and memory.rule == "lesson":
                lesson = memory
        if story and _PRESCRIBES.search(story) and _substance(story):
            # "build with --ghc-options=-Werror before you call anything done, that exact warning
            # has failed more of my PRs than anything else": the story carries its own norm
            drafts.append(
                Draft(
                    kind=Kind.LESSON.value,
                    content=story,
                    importance=3,
                    record_start=record.index,
                    record_end=record.index,
                    rule="lesson",
                )
            )
    return drafts
