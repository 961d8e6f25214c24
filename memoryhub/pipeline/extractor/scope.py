"""What a statement is about, which decides its kind and so its scope.

A memory's scope follows from its kind (`memoryhub.memories.kinds.DEFAULT_SCOPE`): user and
feedback memories are the speaker's own (user scope), rule and project memories are the
team's (project scope). So the kind is decided by what a statement is about, not by how it
was said:

* **the way the assistant works with the speaker** ("ask me first", "don't apologize",
  "reply in English", "问我", "回复") → feedback;
* **the speaker's own taste**, said as such ("I prefer…", "I'd rather…", "I hate…", "I
  usually…", "我喜欢…", "我习惯…") → user, unless it names the repository ("in this repo",
  "项目里");
* **the team's repository, code, tools, infrastructure or workflow**, said impersonally or as
  "we" ("Always open a pull request", "Never npm", "Tabs in the Makefile", "以后提交前都跑
  lint") → rule when it says what to do or not do, project knowledge when it says what is;
* anything else stays with the speaker (user), or, for prohibitions addressed to "you",
  feedback.

"About the project" means: a code word (test, migration, branch, commit, pull request,
dependency…), a tool or service name (npm, Postgres, Makefile…), an identifier (`x_y`,
`a.b`, a path, backticks), a capitalised name inside the sentence, "we"/"our"/"the team", an
ops word (deploy, CI, staging…), or in Chinese a code word (代码, 分支, 依赖…) or any Latin
word.
"""

from __future__ import annotations

import re

from memoryhub.memories.kinds import Kind, Subcategory
from memoryhub.pipeline.extractor.keywords import CJK

PROJECT_SCOPE = re.compile(
    r"\bin\s+(?:this|the|our)\s+(?:repo|repository|project|codebase|code\s*base)\b|\bacross\s+the\s+"
    r"(?:repo|codebase)\b|项目里|项目中|仓库里|代码里|代码库|这个项目|本项目|整个项目",
    re.IGNORECASE,
)
INTERACTION = re.compile(
    r"""\b(?:ask(?:ing)?\s+me|asking|check\s+with\s+me|confirm\s+with\s+me|tell\s+me|me\b|my\s+approval|
        apologi[sz]\w*|explain\w*|summari[sz]\w*|repl(?:y|ies)|respond\w*|answers?|emoji\w*|verbose|
        chatty|lecture|guess\w*|assum\w*)\b
      | 问我|跟我确认|和我确认|我同意|我确认|道歉|解释|总结|回复|回答|啰嗦|表情
      | 擅自|自作主张|未经|废话
      # how the assistant talks: "你说话短点，别每次都一二三四列一堆", "skip the recaps"
      | 你说话|说话(?:短|简)|列一堆|\brecaps?\b
      | \b(?:yourself|my\s+job|not\s+yours|hand\s+me|at\s+me)\b | 你自己|别自己|一大段
      | (?:别|不要|不用)给我|贴(?:给我|整段|一大段)
      | \bon\s+my\s+behalf\b | 结论(?:放|写)(?:在)?前面|先(?:说|给)结论
      | \bi'?d\s+(?:also\s+|really\s+)?like\s+you\s+to\b
      | \bhow\s+i\s+(?:like|want)\s+to\s+work\b | \bwork\s+with\s+you\b
      | \bone\s+(?:question|thing)\s+at\s+a\s+time\b
      | \bi\s+(?:want|need)\s+you\s+to\s+(?:always|ask|check)\b""",
    re.VERBOSE | re.IGNORECASE,
)
CODE_WORDS = re.compile(
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
# Words of a team's everyday engineering that CODE_WORDS (which also decides prohibitions'
# kinds) leaves out: workflow, formatting, data representation, environments and tools.
_TEAM_WORDS = re.compile(
    r"""\b(?:commits?|committing|pull\s+requests?|prs?|merg\w+|rebas\w+|push\w*|reviews?|
        releases?|changelog|versions?|lockfiles?|indent\w*|tabs?|spaces|whitespace|format\w*|
        feature\s+flags?|flags?|rollouts?|rollbacks?|refactor\w*|hotfix\w*|
        lint\w*|naming|names?|prefix\w*|snake_case|camel\s*case|kebab-case|exports?|
        frontend|backend|makefile|builds?|docs|documentation|readme|comments?|docstrings?|
        errors?|retries|timeouts?|indexes|cents|prices?|amounts?|currency|decimals?|integers?|
        timestamps?|dates?|utc|timezones?|env|dotenv|credentials|passwords?|tokens?|keys?|
        images?|services?|ports?|containers?|local(?:ly)?|development|dev|storybook|stories|
        npm|pnpm|yarn|pip|uv|poetry|cargo|git|node|deno|bun|docker|bazel|vite|webpack)\b
      | \.env\b""",
    re.VERBOSE | re.IGNORECASE,
)
CODE_WORDS_ZH = re.compile(
    r"代码|依赖|库|包|函数|类|方法|接口|表|迁移|数据库|字段|模块|文件|目录|配置|测试|变量|类型|注释|日志|"
    r"组件|样式|分支|主干|框架|脚本|线上|生产|服务器|集群|镜像|提交|合并|缩进|命名|格式|金额|价格|"
    r"回调|幂等|签名|校验|评审|状态管理|请求|流水线|密钥|告警|发版|字段|"
    r"时区|时间戳|密钥|密码|凭证|环境|本地|开发|构建|打包|发版|版本|文档|前端|后端|仓库"
)
IDENTIFIER = re.compile(
    r"`[^`]+`|\b\w+_\w+\b|\b\w+\.\w+\b|(?:\w+/)+\w*|\b[a-z]+[A-Z]\w*\b|\b\w+\(\)"
)
LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
_YOU = re.compile(r"\byou\b|你", re.IGNORECASE)
_TEAM = re.compile(
    r"\b(?:we|we're|we've|our|ours|us|team|everyone|everybody|nobody|no\s+one)\b|我们|咱们|团队|大家",
    re.IGNORECASE,
)
# A capitalised word that does not open its sentence or clause: a product or tool name.
_NAME = re.compile(r"(?<=[a-z0-9,;:)]\s)[A-Z][A-Za-z0-9.+-]*[A-Za-z0-9]")
_FIRST_PERSON_TASTE = re.compile(
    r"""^(?:i\s+(?:really\s+|strongly\s+|generally\s+|usually\s+|much\s+|always\s+)?
            (?:prefer|like|love|hate|dislike|enjoy|can'?t\s+stand|cannot\s+stand)\b
      | i'?d\s+(?:much\s+)?(?:rather|prefer)\b | i\s+would\s+(?:much\s+)?(?:rather|prefer)\b
      | i\s+(?:personally\s+|also\s+|just\s+)?(?:like|prefer)\b
      | i\s+(?:find|tend\s+to|lean\s+towards?)\b
      | i'?m\s+(?:not\s+)?a\s+(?:big\s+|huge\s+)?fan\s+of\b
      | i'?d\s+(?:go\s+with|pick|choose|stick\s+with|appreciate\s+it\s+if)\b
      | my\s+(?:strong\s+|personal\s+)?preference\b
      | i\s+(?:always|usually|generally|normally|typically)\b
      | i\s+(?:really\s+)?(?:don'?t|do\s+not)\s+like\b | i'?m\s+used\s+to\b
      | 我(?!们)(?:个人|一般|通常|平时|一直|比较|更|还是|都)*[^，。,；;？?！!]{0,12}?
            (?:喜欢|习惯|偏好|倾向|偏向|不太喜欢|不喜欢|讨厌))""",
    re.VERBOSE | re.IGNORECASE,
)
# "I'd appreciate it if you didn't reformat…": the speaker asking the assistant to work a way.
_ASKS_YOU = re.compile(
    r"^i'?d\s+(?:appreciate\s+it|like\s+it|prefer\s+it)\s+if\s+you\b"
    # "I'd rather you didn't touch X": what the assistant may do ("…you keep functions short" is
    # the speaker's taste in code)
    r"|^i'?d\s+(?:much\s+)?(?:rather|prefer)\s+(?:that\s+)?you\s+(?:didn'?t|don'?t|not|never|ask|check)\b",
    re.I,
)
# Taste that is about working with the speaker ("I prefer you ask me first") is feedback.
_ASKS_ME = re.compile(
    r"\b(?:ask(?:ing)?\s+me|check\s+with\s+me|confirm\s+with\s+me|tell\s+me|you)\b|问我|跟我确认|和我确认|你",
    re.IGNORECASE,
)
DECISION_WORDS = re.compile(
    r"\b(?:decid\w*|agree\w*|chose|chosen|switch\w*|moved|migrat\w*|standardi[sz]\w*|settled|"
    r"convention)\b|决定|定了|改用|换成|迁移|统一|约定|选择|选了",
    re.IGNORECASE,
)
OPS_WORDS = re.compile(
    r"""\b(?:deploy\w*|ci|cd|pipelines?|github\s+actions|gitlab|jenkins|circleci|servers?|host\w*|
        prod|production|staging|cloud|clusters?|kubernetes|k8s|docker|compose|fly\.io|heroku|
        vercel|aws|gcp|azure|airflow|composer|cron|timezone|ports?|infra|terraform|runbook|
        on-call|monitoring|release\w*|runs\s+on|run\s+on|replicas?|load\s+balancer|schedul\w*|
        time\s+zones?|utc)\b
      | 部署|上线|发布|服务器|线上|生产|环境|集群|运维|CI|流水线|监控|镜像|容器|副本|ACK|k8s""",
    re.VERBOSE | re.IGNORECASE,
)


def fact_subcategory(text: str) -> str:
    """meow-memory's section of a project fact: decisions, ops, else structure."""
    if DECISION_WORDS.search(text):
        return Subcategory.DECISIONS.value
    if OPS_WORDS.search(text):
        return Subcategory.OPS.value
    return Subcategory.STRUCTURE.value


def names_code(text: str) -> bool:
    has_cjk = bool(CJK.search(text))
    return bool(
        CODE_WORDS.search(text)
        or IDENTIFIER.search(text)
        or (has_cjk and (CODE_WORDS_ZH.search(text) or LATIN_WORD.search(text)))
    )


def about_project(text: str) -> bool:
    """Is `text` about the team's repository, code, tools, infrastructure or workflow?"""
    return bool(
        names_code(text)
        or _TEAM_WORDS.search(text)
        or _TEAM.search(text)
        or OPS_WORDS.search(text)
        or PROJECT_SCOPE.search(text)
        or _NAME.search(text)
    )


def is_interaction(text: str) -> bool:
    """Is `text` about how the assistant works with the speaker?"""
    return bool(INTERACTION.search(text)) and not PROJECT_SCOPE.search(text)


def prohibition_kind(text: str) -> str:
    """feedback about the interaction; rule when it names code, files or tooling; else
    feedback when it addresses "you", a rule otherwise."""
    # "don't rewrite my specs": what the assistant may do to the speaker's own work; "别帮我自动
    # commit，我提交前要自己看一遍 diff": what the speaker keeps for themself
    if (
        INTERACTION.search(text)
        or re.search(r"\bmy\s+(?!team|company|org)\w+|我的", text, re.I)
        or re.search(r"帮我|替我|我(?!们)[^，。]{0,8}?自己", text)
    ):
        return Kind.FEEDBACK.value
    if names_code(text) or _TEAM_WORDS.search(text) or _TEAM.search(text):
        return Kind.RULE.value
    return Kind.FEEDBACK.value if _YOU.search(text) else Kind.RULE.value


def preference_kind(text: str) -> str:
    """feedback about the interaction; user for the speaker's own taste (unless it names the
    repository); rule for the team's conventions; user otherwise."""
    if _FIRST_PERSON_TASTE.match(text) and not _ASKS_ME.search(text):
        return Kind.RULE.value if PROJECT_SCOPE.search(text) else Kind.USER.value
    if _ASKS_YOU.match(text):
        return Kind.FEEDBACK.value
    if is_interaction(text) or _ASKS_YOU.match(text):
        return Kind.FEEDBACK.value
    if PROJECT_SCOPE.search(text):
        return Kind.RULE.value
    if _FIRST_PERSON_TASTE.match(text):
        return Kind.USER.value
    return Kind.RULE.value if about_project(text) else Kind.USER.value


def statement_kind(text: str, *, normative: bool) -> str | None:
    """The kind of a statement with no trigger of its own (a correction's body, a convention):
    feedback about the interaction, user for the speaker's taste, and about the project a rule
    when `normative` (it says what to do) or project knowledge; None when it is about none of
    these."""
    if is_interaction(text):
        return Kind.FEEDBACK.value
    if _YOU.search(text) and re.search(r"(?<!\w)(?:I|me)(?!\w)|我(?!们)", text) and normative:
        # "动寄存器之前先说清楚你要改哪个寄存器…我要对着 RM0440 看一眼": what the assistant does
        # for the speaker
        return Kind.FEEDBACK.value
    if _FIRST_PERSON_TASTE.match(text) or re.match(r"^(?:i|my)\b|^我(?!们)", text, re.I):
        return Kind.USER.value
    if about_project(text):
        return Kind.RULE.value if normative else Kind.PROJECT.value
    return None


# What the system is, said as a description even with "all" or "everything" in it: "Everything
# UI is LiveView", "It's all Jetpack Compose", "the monolith is still on Django 4.2 LTS", "the app
# is 100% Kotlin", "The inventories are split per site". Project knowledge, not a rule, unless
# the same clause prescribes (a modal, never/always/only, a negated verb).
_DESCRIBES_SYSTEM = re.compile(
    r"""^(?:it'?s|it\s+is|this\s+is)\s+(?:all\s+|entirely\s+|mostly\s+|100\s?%\s+)+
      | ^(?:the\s+|our\s+|all\s+)?(?:everything\s+)?(?:[\w/+.-]+\s+){0,4}?(?:is|are)\s+
        (?:all\s+|still\s+|entirely\s+|mostly\s+|100\s?%\s+|just\s+)*
        (?:on\s+|built\s+(?:on|with)\s+)?(?:a\s+|an\s+)?(?-i:[A-Z]|v?\d)
      # "GHC 9.6 via ghcup", "go 1.22 across the whole monorepo": a tool and its version
      | ^(?-i:[A-Za-z][\w.+-]*)\s+v?\d+(?:\.\d+)+\b(?!\s*(?:ms|s|%|mb|gb))
      | ^(?:the\s+|our\s+)?(?:[\w/+.-]+\s+){0,3}?(?:is|are)\s+(?:split|organi[sz]ed|grouped|
        partitioned|sharded|laid\s+out|structured|divided|arranged)\s+(?:per|by|into|across)\b""",
    re.VERBOSE | re.IGNORECASE,
)
_PRESCRIBES_IN_CLAUSE = re.compile(
    r"\b(?:must|mustn'?t|should|shouldn'?t|has\s+to|have\s+to|needs?\s+to|never|always|only|"
    r"don'?t|do\s+not|nobody|no\s+one|required|supposed)\b",
    re.IGNORECASE,
)


# "实车是 robot-03", "集成测试就是 ./gradlew integrationTest", "上线是把代码合到 production 分支":
# what a thing of the project is, in Chinese; a rule only when the clause prescribes.
_DESCRIBES_SYSTEM_ZH = re.compile(r"^[^，,。；;：:]{1,16}?(?:就是|全是|都是|是)\s*\S")
_PRESCRIBES_ZH = re.compile(
    r"必须|一律|统一|不要|别|只能|只用|务必|不能|不许|禁止|规范|约定|规定|convention", re.I
)


def describes_system(text: str) -> bool:
    """Does `text` open with a description of what the system is (see `_DESCRIBES_SYSTEM`)?"""
    if CJK.search(text):
        first = re.split(r"[，,；;。]", text, maxsplit=1)[0]
        return (
            bool(_DESCRIBES_SYSTEM_ZH.match(first))
            and not _PRESCRIBES_ZH.search(first)
            and not re.search(r"不得|不能|不要|别|禁止|不许|必须|一律|务必", text)
        )
    first = re.split(r"[,;—–(]|\s-\s", text, maxsplit=1)[0]
    return bool(_DESCRIBES_SYSTEM.match(first)) and not _PRESCRIBES_IN_CLAUSE.search(first)
