"""Secret redaction for everything MemoryHub stores: transcripts, memories and artifacts.

`redact(text)` returns `(text, count)`; `redact_json(value)` does the same for a decoded JSON
value. A secret becomes `[REDACTED]`. Where a rule matches a name as well as a value (a
`KEY=value` line, `Bearer …`, the password of a URL), the name stays and only the value goes:
`password=[REDACTED]`, `Bearer [REDACTED]`, `postgres://app:[REDACTED]@db/app`.

Rules, compiled once and applied in this order, each over the whole text (see `RULES`):

1. `pem_private_key`: PEM, OpenSSH and PGP private key blocks, whole. A block cut off before
   its END line is redacted up to the end of its base64 body.
2. `url_password`: the password of `scheme://user:password@host` (also `scheme://:password@`).
3. `env_assignment`: `KEY=value`, `export KEY=value`, `KEY: value`, `"key": "value"`,
   `key => value`, `key := value` where KEY contains SECRET, TOKEN, PASSWORD, PASSWD,
   PASSPHRASE, PWD, API_KEY, ACCESS_KEY, PRIVATE_KEY, CREDENTIAL, AUTH, DSN or
   CONNECTION_STRING, in any case. Quotes stay; values shorter than 4 characters stay. The
   `KEY: value` form counts only where a key can stand: at the start of a line, or after a
   quote or `{ ( [ ,`. Prose such as "the tokenizer: what…" is left to rule 4.
4. Codex (`codex-rs/secrets/src/sanitizer.rs`): `codex_bearer` (`Bearer` + 16 or more token
   characters) and `codex_assignment` (`api_key|token|secret|password`, `:` or `=`, then 8 or
   more characters).
5. oh-my-pi (`memories/index.ts`), its eight patterns in its order: `ohmypi_prefixed_key`,
   `ohmypi_jwt`, `ohmypi_aws_access_key_id`, `ohmypi_github_token`, `ohmypi_github_pat`,
   `ohmypi_npm_token`, `ohmypi_slack_token`, `ohmypi_google_api_key`.
6. Provider formats and command-line flags that the rules above miss, each with a
   distinctive prefix or shape (`_PROVIDER_RULES`; `redis_cli_password` for `redis-cli -a X`).
   Some formats need no rule of their own: Anthropic `sk-ant-…`, OpenAI `sk-proj-…`, Stripe
   `sk_live_`/`rk_live_`/`pk_live_` and Mailgun `key-…` are caught by `ohmypi_prefixed_key`,
   and labelled AWS secret keys (`aws_secret_access_key = …`) by `env_assignment`.
7. `prose_secret`: secrets stated in prose, in English and Chinese: "the password for staging
   is X", "The staging admin password is X", "密码是 X", "access key 为 X", "token: X". Only a
   value with a digit or a symbol, or one of 12 or more characters, counts, so "the token is
   expired" and "密码是必填项" stay. It runs last, so a value that a rule above took out is not
   counted twice.

This is the one redaction policy: every ingestion path (session records, imports, session
titles and metadata, memories, recall files, instructions, artifacts, pipeline output) calls
`redact` or `redact_json` and nothing else.

Order matters. The specific rules that keep a name run first. A URL inside a `.env` value is
therefore redacted, and counted, once by rule 2, and rule 3 leaves alone any value that
already contains `[REDACTED]`.

Deviations from the seeds, and why:

* `ohmypi_prefixed_key` gets a left boundary `(?<![A-Za-z0-9_-])`. The source pattern
  `(?:sk|pk|rk|tok|key|secret|token|password)[-_A-Za-z0-9]{12,}` matches anywhere, so it eats
  the tail of ordinary identifiers: `monkey_business_value` became `mon[REDACTED]`. Words that
  *start* with a prefix are still redacted, as in the source (`tokenizer_config_v2xx`,
  `skip_existing_records`, `keyboard_layout_name`). That is the price of catching unknown
  `sk-…`/`key-…` formats, and we keep it. `_` and `-` are part of the boundary, so a
  snake-case or kebab-case part after one is kept (`test_token_estimate_counts`); see
  `_PREFIXED_KEY_NOT_AFTER`.
* `ohmypi_jwt` gets a left boundary too. This changes no match, because a match can always
  start where the run of token characters starts and the leftmost match wins. Without the
  boundary, a long run of `[A-Za-z0-9_-]` with no dot (a hex dump, say) takes quadratic time.
* `codex_bearer` accepts the whole RFC 6750 token alphabet (`~+/` and trailing `=`). Codex
  stops at the first `+`, which cuts a base64 token short and leaks the rest.
* Rules 3 and 4 never cross a line break between name and value. They also leave alone
  values that are plainly code or references, not secrets:
  - calls, subscripts, tuples and lists (`get_token()`, `os.environ["X"]`, `(a, b)`);
  - attributes of well-known objects (`self.token`, `settings.SECRET_KEY`);
  - `$VAR`, `${VAR}`, `$(cmd)`, `{var}`, `{{ var }}` and `%(var)s` placeholders;
  - the variable named after the setting (`password=password`, `LLM_API_KEY = api_key`,
    `actor_token=actor.token`);
  - an identifier without digits that the code goes on after (`budget,`, `UUID)`,
    `ApiToken | None`, `openai.omit if hosted`);
  - type names and literals (`str`, `string`, `null`, `true`).
  Quoted values are data and are redacted whatever they look like, except placeholders.
  Rule 3 also leaves purely numeric values alone unless the name says PASS, PWD, SECRET or
  KEY. Token counts and limits (`max_tokens: 4096`, `KEEP_RECENT_TOKENS = 10_000`) are
  everywhere in agent transcripts, while `DB_PASSWORD=12345678` is a password.

Known false positives, accepted because redaction errs towards hiding:

* identifiers, and snake-case parts of identifiers, that start with an
  `ohmypi_prefixed_key` prefix (see above);
* dotted names with three parts of 16 or more characters each (`ohmypi_jwt`);
* non-secret values under secret-looking names (`AUTH_USER_MODEL = "accounts.User"`,
  `tokenizer: "cl100k_base"`, `GOOGLE_APPLICATION_CREDENTIALS=/path/key.json`);
* a stretch of a large base64 blob that starts with `sk`, `key` and so on right after a `+` or
  `/`.

Idempotence: no rule matches `[REDACTED]`, and no rule accepts a value that starts with it
or contains it. `redact` also repeats the rules until a pass changes nothing. A replacement
that exposes a new word boundary therefore cannot leave work for a second call:
`redact(redact(x)[0])[1] == 0`.

Speed: every pass is linear in the length of the text. No pattern nests quantifiers over
overlapping classes, and the long runs are possessive where backtracking could not help.
Python's regex engine only skips quickly to candidate positions when a pattern starts with
literal characters, and not under IGNORECASE. So most patterns start with a literal (see
`_alternation`). The keyword rules and the JWT rule list their `candidates` instead: word
positions found with `str.find` in the lowercased text, or the dots of a JWT. The remaining
rules are skipped unless their `hint` is present. On the machine this was written on, 1 MB of
transcript-like text with no secret takes about 35 ms.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

REDACTED = "[REDACTED]"

# A fixpoint is normally reached after one pass (two when anything was found). The cap only
# guards against a rule interaction nobody foresaw turning ingestion into an endless loop.
_MAX_PASSES = 8

Match = re.Match[str]


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern. Only the `secret` group is replaced when the pattern has one."""

    name: str
    pattern: re.Pattern[str]
    # Second look at a match that the regex alone cannot judge; False keeps the text.
    accept: Callable[[Match], bool] | None = None
    # A necessary condition checked first: a lowercase substring of the lowercased text, or a
    # pattern that starts with a literal. Only for rules whose own pattern cannot.
    hint: str | re.Pattern[str] | None = None
    # Where a match can start, for a pattern whose candidates are much faster to find in
    # Python than by letting the regex engine try every position; None means "anywhere".
    candidates: Callable[[str, str], Iterable[int] | None] | None = None

    def may_match(self, text: str, lowered: str) -> bool:
        if self.hint is None:
            return True
        if isinstance(self.hint, str):
            return self.hint in lowered
        return self.hint.search(text) is not None

    def apply(self, text: str, lowered: str | None = None) -> tuple[str, int]:
        pieces: list[str] = []
        done = count = 0
        for match in self.matches(text, text.lower() if lowered is None else lowered):
            if self.accept is not None and not self.accept(match):
                continue
            start, end = match.span("secret") if self.keeps_context else match.span()
            pieces += [text[done:start], REDACTED]
            done = end
            count += 1
        if not count:
            return text, 0
        pieces.append(text[done:])
        return "".join(pieces), count

    def matches(self, text: str, lowered: str) -> Iterator[Match]:
        """The same matches as pattern.finditer(text): non-overlapping, left to right."""
        positions = None if self.candidates is None else self.candidates(text, lowered)
        if positions is None:
            # Most texts hold no candidate at all, and a bare search is the cheapest way to
            # learn that (a finditer costs twice as much on a short string).
            if self.pattern.search(text) is not None:
                yield from self.pattern.finditer(text)
            return
        resume = 0
        for position in sorted(set(positions)):
            if position < resume:
                continue
            match = self.pattern.match(text, position)
            if match is not None:
                yield match
                resume = match.end()

    @property
    def keeps_context(self) -> bool:
        return "secret" in self.pattern.groupindex


def _starting_with(*words: str) -> Callable[[str, str], Iterable[int] | None]:
    """Candidates of a pattern that starts with one of `words` (lowercase), in any case."""

    def positions(text: str, lowered: str) -> Iterable[int] | None:
        if len(lowered) != len(text):
            return None  # a character changed length when lowercased: positions would drift
        found = []
        for word in words:
            position = lowered.find(word)
            while position != -1:
                found.append(position)
                position = lowered.find(word, position + 1)
        return found

    return positions


_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_-")
_DOT_BEFORE_MIDDLE = re.compile(r"\.(?=[A-Za-z0-9_-]{16,}+\.)")


def _jwt_starts(text: str, lowered: str) -> Iterable[int]:
    """A JWT starts with the run of token characters before a dot that opens a middle part."""
    for dot in _DOT_BEFORE_MIDDLE.finditer(text):
        start = dot.start()
        while start > 0 and text[start - 1] in _TOKEN_CHARS:
            start -= 1
        yield start


def _alternation(words: Iterable[str], *, ignore_case: bool, not_after: str = "") -> str:
    """`(?:word|…)` written so that the regex engine can skip straight to candidates.

    Each word is a regex that starts with a letter. The engine only skips quickly when every
    branch starts with a literal character and IGNORECASE is off. So case-insensitivity
    becomes one branch per case of the first letter, with the rest under `(?i:…)`. A left
    boundary (`not_after`, a character class) becomes a lookbehind placed after that first
    letter.
    """
    boundary = f"(?<!{not_after}.)" if not_after else ""
    branches = []
    for word in words:
        first, rest = word[0], word[1:]
        cases = dict.fromkeys((first.lower(), first.upper())) if ignore_case else (first,)
        tail = f"(?i:{rest})" if ignore_case else rest
        branches += [f"{case}{boundary}{tail}" for case in cases]
    return "(?:" + "|".join(branches) + ")"


# --- judging the values of name=value matches ---------------------------------------------

# An unquoted value never ends in "]", so a marker shows up in it as this stem.
_MARKER_STEM = REDACTED[:-1]
# Words that only ever name a type or a literal; `token: string` is a declaration, not a leak.
_NOT_SECRET_WORDS = frozenset(
    {
        *("true", "false", "null", "none", "nil", "undefined"),
        *("str", "string", "bytes", "int", "integer", "bool", "boolean", "number", "float"),
        *("any", "object", "unknown", "optional"),
    }
)
# Placeholders filled in elsewhere: $VAR, ${VAR}, $(cmd), {var}, {{ var }}, %(var)s.
_REFERENCE_STARTS = ("$", "{", "%(")
_NUMERIC = re.compile(r"[0-9][0-9_.,:+-]*")
_CODE_VALUE = re.compile(
    r"""
      [A-Za-z_$][\w$.]*[(\[]                    # a call or a subscript: get_token(), env["X"]
    | [(\[]                                     # a tuple or a list
    | (?:self|cls|this|settings|config|conf|os|process|request|req|ctx|context|options
       |opts|args|kwargs|params|env|environ|props|state)\.   # attribute of a well-known object
    """,
    re.VERBOSE,
)
# An identifier that the code goes on after: `budget,` `UUID)` `ApiToken | None`
# `openai.omit if hosted`. No digits allowed: passwords nearly always have some.
_EXPRESSION = re.compile(
    r"""[A-Za-z_][A-Za-z_.]*
    (?: ,(?:\s|$) | [)\]}] | [ \t]+(?:[|+*/%<>=]|if|else|and|or|for|in|is|not)(?:\s|$) )""",
    re.VERBOSE,
)
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*")
_NAME_TAIL = re.compile(r"[\w.-]*$")
# What may stand before `name: value` on its line: nothing (YAML, HTTP headers), a quote
# (JSON, `-H "X-Api-Key: …"`), the punctuation of a literal or a signature, or a list, quote
# or comment marker. Anything else is prose ("the tokenizer: what…"): codex_assignment's job.
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_COLON_CONTEXT = re.compile(r"""(?:.*[\"'`{(\[,])?[ \t]*|[ \t]*(?:[-*>#]+|//)[ \t]*""")

# Fragments of a name that holds a secret (rule 3 and redact_json); each starts with a letter.
_SECRET_NAME_WORDS = (
    "secret",
    "token",
    "pass(?:word|wd|phrase)",
    "pwd",
    "api[_-]?key",
    "access[_-]?key",
    "private[_-]?key",
    "credential",
    "auth(?!or|entica)",  # not author, authority, authorization, authenticate
    "dsn",
    "connection[_-]?string",
)
_SECRET_NAME = re.compile("|".join(_SECRET_NAME_WORDS), re.IGNORECASE)
_NUMERIC_SECRET_NAME = re.compile(r"pass|pwd|secret|key", re.IGNORECASE)


def _looks_like_secret(
    *, name: str, value: str, quoted: bool, numeric_ok: bool, after: str = ""
) -> bool:
    """Judge the value of a `name=value` pair that a regex found (see the module docstring).

    `after` is the text that follows the value; it tells code from configuration.
    """
    if _MARKER_STEM in value:
        return False  # an earlier, more specific rule already took the secret out
    if not numeric_ok and _NUMERIC.fullmatch(value):
        return False
    if value.startswith(_REFERENCE_STARTS):
        return False
    if quoted:
        return True  # inside quotes the rest is a string value, even "get_token()"
    if (
        value.lower() in _NOT_SECRET_WORDS
        or _CODE_VALUE.match(value)
        or _EXPRESSION.match(value + after[:8])
    ):
        return False
    if _IDENTIFIER.fullmatch(value):
        # The variable named after the setting: password=password, LLM_API_KEY = api_key,
        # actor_token=actor.token, password=db_password.
        own = name.strip("\"'-").lower().rsplit(".", 1)[-1]
        var = value.lower().rsplit(".", 1)[-1]
        if own == var or own.endswith("_" + var) or var.endswith("_" + own):
            return False
    return True


def _is_secret_name(name: str) -> bool:
    # $PWD and $OLDPWD are the working directory, printed by every `env` dump.
    return name.lower() not in {"pwd", "oldpwd"} and _SECRET_NAME.search(name) is not None


def _numeric_ok(name: str) -> bool:
    # A number under a TOKEN/AUTH/DSN… name is a count or a limit (`max_tokens: 4096`); under
    # a PASSWORD/SECRET/KEY name it may well be a PIN or a numeric key.
    return _NUMERIC_SECRET_NAME.search(name) is not None


def _name_start(match: Match) -> int:
    """Where the whole name begins (env_assignment's match starts at the keyword)."""
    head = _NAME_TAIL.search(match.string, max(0, match.start() - 60), match.start())
    return head.start() if head else match.start()


def _value_facts(match: Match) -> tuple[str, str, bool, str]:
    """(name, value, quoted, text after the value) of a name=value match."""
    text = match.string
    name = text[_name_start(match) : match.end("name")]
    after = text[match.end() : match.end() + 8]
    return name, match.group("secret"), bool(match["q"]), after


def _accept_env_assignment(match: Match) -> bool:
    # Cheap refusals first: transcripts are full of `"input_tokens": 1532`.
    value = match.group("secret")
    if len(value) < 4:
        return False
    if _NUMERIC.fullmatch(value) and not _NUMERIC_SECRET_NAME.search(
        match.string, max(0, match.start() - 60), match.end("name")
    ):
        return False
    name, value, quoted, after = _value_facts(match)
    if not _is_secret_name(name):
        return False
    # An environment variable's name (POSTGRES_PASSWORD: …) is no prose, whatever precedes it.
    if match["sep"] == ":" and not _ENV_NAME.fullmatch(name):
        start = _name_start(match)
        line_start = match.string.rfind("\n", 0, start) + 1
        if not _COLON_CONTEXT.fullmatch(match.string, max(line_start, start - 200), start):
            return False
    return _looks_like_secret(
        name=name, value=value, quoted=quoted, numeric_ok=_numeric_ok(name), after=after
    )


def _accept_codex_assignment(match: Match) -> bool:
    name, value, quoted, after = _value_facts(match)
    return _looks_like_secret(name=name, value=value, quoted=quoted, numeric_ok=True, after=after)


def _accept_plain_value(match: Match) -> bool:
    value = match.group("secret")
    return _MARKER_STEM not in value and not value.startswith(_REFERENCE_STARTS)


# --- the rules ----------------------------------------------------------------------------

# Spaces inside classes, because these pieces go into patterns compiled in verbose mode.
_PEM_HEAD = r"-----BEGIN[ A-Z0-9]{0,30}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----"
_PEM_TAIL = r"-----END[ A-Z0-9]{0,30}PRIVATE[ ]KEY(?:[ ]BLOCK)?-----"
# A line break, real or JSON-escaped.
_NL = r"(?:\r?\n|(?:\\r)?\\n)"
# The value of an assignment: quoted (up to the closing quote on the same line) or unquoted
# (up to whitespace, and not ending in punctuation that belongs to the surrounding code).
_VALUE = r"""
    (?P<scheme>(?i:bearer|basic|token)[ \t]+)?    # `token: Bearer abc` keeps the scheme
    (?P<q>["'`])?
    (?P<secret>(?(q)(?:\\.|(?!(?P=q))[^\\\n])+|[^\s"'`]*[^\s"'`,;)\]}.]))
    (?(q)(?P=q))
"""
_WORD = r"[A-Za-z0-9_]"
# The boundary we add to oh-my-pi's first pattern. Adding `_` and `-` would also spare
# snake- and kebab-case parts (`llm_tokens_used_today`) at no real cost in secrets.
_PREFIXED_KEY_NOT_AFTER = r"[A-Za-z0-9_-]"  # not inside snake_case or kebab-case names

_SEED_RULES: tuple[Rule, ...] = (
    Rule(
        "pem_private_key",
        re.compile(
            rf"""{_PEM_HEAD}
            (?: (?:[^-]++|-(?!----))*+ {_PEM_TAIL}    # the whole block
              | (?:{_NL}(?:[A-Za-z-]+:[^\n\\]*|[ \t]*[A-Za-z0-9+/=]*)(?={_NL}|$))*
            )                                         # or a cut-off block: headers, base64""",
            re.VERBOSE,
        ),
    ),
    Rule(
        "url_password",
        re.compile(r"://[^\s/?#@:\"'<>]*+:(?P<secret>[^\s/?#\"'<>`]+)@"),
        _accept_plain_value,
    ),
    Rule(
        "env_assignment",
        # Starts at the keyword, so that it can be found fast; _name_start finds the name's
        # beginning when it is needed.
        re.compile(
            rf"""(?P<name>{_alternation(_SECRET_NAME_WORDS, ignore_case=True)}[\w.-]{{0,60}}+)
            ["']?[ \t]*(?P<sep>:=|=>|[:=])[ \t]*{_VALUE}""",
            re.VERBOSE,
        ),
        _accept_env_assignment,
        candidates=_starting_with(
            *("secret", "token", "pass", "pwd", "api", "access", "private", "credential"),
            *("auth", "dsn", "connection"),
        ),
    ),
    Rule(
        "codex_bearer",
        re.compile(
            rf"{_alternation(['bearer'], ignore_case=True, not_after=_WORD)}\s+"
            r"(?P<secret>[A-Za-z0-9._~+/-]{16,}+=*)"
        ),
        candidates=_starting_with("bearer"),
    ),
    Rule(
        "codex_assignment",
        re.compile(
            rf"""(?P<name>{
                _alternation(
                    ["api[_-]?key", "token", "secret", "password"],
                    ignore_case=True,
                    not_after=_WORD,
                )
            })(?!\w)
            [ \t]*[:=][ \t]*(?P<q>["']?)
            (?P<secret>[^\s"'`]{{7,}}[^\s"'`,;)\]}}.])""",
            re.VERBOSE,
        ),
        _accept_codex_assignment,
        candidates=_starting_with("api", "token", "secret", "password"),
    ),
    # oh-my-pi, in the source's order. Only the first two differ (see the module docstring).
    Rule(
        "ohmypi_prefixed_key",
        re.compile(
            _alternation(
                ["sk", "pk", "rk", "tok", "key", "secret", "token", "password"],
                ignore_case=False,
                not_after=_PREFIXED_KEY_NOT_AFTER,
            )
            + "[-_A-Za-z0-9]{12,}"
        ),
        candidates=_starting_with("sk", "pk", "rk", "tok", "key", "secret", "password"),
    ),
    Rule(
        "ohmypi_jwt",
        re.compile(
            r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{16,}+\.[A-Za-z0-9_-]{16,}+\.[A-Za-z0-9_-]{16,}"
        ),
        candidates=_jwt_starts,
    ),
    Rule("ohmypi_aws_access_key_id", re.compile(r"(?:AKIA|ASIA)[A-Z0-9]{16}")),
    Rule("ohmypi_github_token", re.compile(r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}")),
    Rule("ohmypi_github_pat", re.compile(r"github_pat_[A-Za-z0-9_]{20,}")),
    Rule("ohmypi_npm_token", re.compile(r"npm_[A-Za-z0-9]{30,}")),
    Rule("ohmypi_slack_token", re.compile(r"xox[baprs]-[A-Za-z0-9-]{10,}")),
    Rule("ohmypi_google_api_key", re.compile(r"AIza[A-Za-z0-9_-]{30,}")),
)


def _prefixed(prefix: str, body: str, *, end: str = "") -> re.Pattern[str]:
    """`prefix` + `body` that does not start inside a word (`\\b`, but fast: see _alternation)."""
    return re.compile(
        _alternation([re.escape(prefix)], ignore_case=False, not_after=_WORD) + body + end
    )


# Provider formats not covered above; each has a prefix or shape that ordinary text lacks.
_PROVIDER_RULES: tuple[Rule, ...] = (
    # Slack incoming webhook: the path is the credential.
    Rule(
        "slack_webhook",
        re.compile(r"hooks\.slack\.com/services/(?P<secret>T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+)"),
    ),
    # Discord webhook: /api/webhooks/<id>/<token>.
    Rule(
        "discord_webhook",
        re.compile(r"discord(?:app)?\.com/api/webhooks/[0-9]+/(?P<secret>[A-Za-z0-9_-]{20,})"),
    ),
    # Discord bot token: base64 user id . 6-character timestamp . 27+ character HMAC.
    Rule(
        "discord_bot_token",
        re.compile(
            r"[MNO](?<![\w-].)[A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}"
            r"(?![\w-])"
        ),
        hint=re.compile(r"\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27}"),
    ),
    # Telegram bot token: numeric bot id, colon, "AA" and 33 more characters.
    Rule(
        "telegram_bot_token",
        re.compile(r"[0-9](?<![0-9].)[0-9]{7,9}:AA[A-Za-z0-9_-]{33}(?![\w-])"),
        hint=":aa",
    ),
    # GitLab personal, deploy, runner and pipeline-trigger tokens.
    Rule("gitlab_token", _prefixed("gl", r"(?:pat|dt|rt|ptt)-[A-Za-z0-9_-]{20,}")),
    # Hugging Face user access token.
    Rule("huggingface_token", _prefixed("hf_", r"[A-Za-z0-9]{30,}")),
    # SendGrid API key: SG.<22>.<43>.
    Rule(
        "sendgrid_api_key",
        _prefixed("SG.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", end=r"(?![\w-])"),
    ),
    # Twilio API key SID: SK and 32 hex digits.
    Rule("twilio_api_key", _prefixed("SK", r"[0-9a-fA-F]{32}", end=r"(?![A-Za-z0-9])")),
    # Azure storage and Service Bus connection strings.
    Rule(
        "azure_account_key",
        # Written to start with the literal "Key=" (fast), the names checked behind it.
        re.compile(
            r"Key=(?:(?<=AccountKey=)|(?<=SharedAccessKey=))(?P<secret>[A-Za-z0-9+/]{20,}+=*)"
        ),
    ),
    # Azure SAS token: the signature parameter of the URL query.
    Rule(
        "azure_sas_signature",
        re.compile(r"sig=(?<=[?&]sig=)(?P<secret>[A-Za-z0-9%+/]{20,}+=*)"),
    ),
    # Google OAuth access token and OAuth client secret.
    Rule("google_oauth_token", _prefixed("ya29.", r"[A-Za-z0-9_-]{20,}")),
    Rule("google_oauth_client_secret", re.compile(r"GOCSPX-[A-Za-z0-9_-]{20,}")),
    # DigitalOcean personal, OAuth and refresh tokens.
    Rule("digitalocean_token", _prefixed("do", r"[por]_v1_[a-f0-9]{64}")),
    # Shopify access, custom-app, private-app and shared-secret tokens.
    Rule("shopify_token", _prefixed("shp", r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}")),
    # PyPI API token (a macaroon; base64 of its header follows the prefix).
    Rule("pypi_token", re.compile(r"pypi-AgEI[A-Za-z0-9_-]{50,}")),
    # Docker Hub personal access token.
    Rule("dockerhub_token", re.compile(r"dckr_pat_[A-Za-z0-9_-]{20,}")),
    # Stripe webhook signing secret.
    Rule("stripe_webhook_secret", re.compile(r"whsec_[A-Za-z0-9+/=]{24,}")),
    # Linear API key.
    Rule("linear_api_key", re.compile(r"lin_api_[A-Za-z0-9]{32,}")),
    # HashiCorp Vault service, batch and recovery tokens.
    Rule("vault_token", _prefixed("hv", r"[sbr]\.[A-Za-z0-9_-]{24,}")),
    # MemoryHub's own agent tokens (accounts/tokens.py).
    Rule("memoryhub_token", _prefixed("mh_r", r"[wo]_[A-Za-z0-9_-]{20,}")),
    # An Authorization header with a scheme other than Bearer (codex_bearer has that one).
    Rule(
        "authorization_header",
        re.compile(
            _alternation(["authorization"], ignore_case=True, not_after=_WORD)
            + r"""["']?[ \t]*[:=][ \t]*["']?(?i:basic|token)[ \t]+"""
            + r"(?P<secret>[A-Za-z0-9._~+/-]{8,}+=*)"
        ),
        candidates=_starting_with("authorization"),
    ),
    # curl -u user:password; -u of most other commands is a user or a uid:gid.
    Rule(
        "curl_user_password",
        _prefixed(
            "curl",
            r"""(?!\w)[^\n]*?[ \t](?:-u|--user)[ \t]+["']?[^\s:"']+:(?P<secret>[^\s"']+)""",
        ),
        _accept_plain_value,
    ),
    # mysql -pPASSWORD: the password is glued to the flag.
    Rule(
        "mysql_password_flag",
        _prefixed("mysql", r"""(?:dump|admin)?(?!\w)[^\n]*?[ \t]-p(?P<secret>[^\s"']{4,})"""),
        _accept_plain_value,
    ),
    # --password VALUE, --token VALUE; the --flag=value form is env_assignment.
    Rule(
        "cli_secret_flag",
        re.compile(
            r"-(?<![\w-].)-(?:password|passwd|token|api-key|api_key|secret|client-secret)"
            r"""[ \t]+["']?(?P<secret>[^\s"']{4,})"""
        ),
        _accept_plain_value,
    ),
    # redis-cli -a PASSWORD (also --pass, --auth, with = or a space).
    Rule(
        "redis_cli_password",
        _prefixed(
            "redis-cli",
            r"""(?!\w)[^\n]*?[ \t](?:-a|--pass|--auth)(?:[ \t]+|=)"""
            r"""(?P<q>["'])?(?P<secret>(?(q)[^"'\n]+|[^\s"']+))""",
        ),
        _accept_plain_value,
    ),
)


def _accept_prose_value(match: Match) -> bool:
    # "the token is expired", "密码是必填项": a stated secret has a digit or a symbol, or is
    # long; a plain word is not one.
    value = match.group("secret")
    if not _accept_plain_value(match) or not (
        _PROSE_SYMBOL.search(value) is not None or len(value) >= 12
    ):
        return False
    # `token = get_token()`, `password: {{ x }}`: an English name with `=` or `:` is code or
    # configuration, which env_assignment and codex_assignment judge; they miss Chinese names.
    return not (match["sep"] in ("=", ":") and match["name"].isascii())


_PROSE_SYMBOL = re.compile(r"[\d\W_]")
_PROSE_NAMES = (
    *("密码", "口令", "密钥", "秘钥", "令牌", "password", "passwd", "passphrase"),
    *("token", "secret", "access", "api"),
)

# Secrets stated in prose, after every rule that keeps a name has run: "the password for
# staging is X", "The staging admin password is X", "密码是 X", "access key 为 X", "token: X".
_PROSE_RULES: tuple[Rule, ...] = (
    Rule(
        "prose_secret",
        re.compile(
            r"""(?P<name>密码|口令|密钥|秘钥|令牌|access[ \t]*key|secret[ \t]*key|api[ \t]*key
                |password|passwd|passphrase|\btoken\b|\bsecret\b)
            (?:[ \t]+(?:for|of|on|in)[ \t]+(?:the[ \t]+)?[\w.-]+){0,2}   # never across lines
            [ \t]*(?P<sep>是|为|:|：|=|\bis\b|\bwas\b)[ \t]*
            (?P<secret>[^\s，。,;；、]{3,}[^\s，。,;；、.!?:)\]'"])""",
            re.VERBOSE | re.IGNORECASE,
        ),
        _accept_prose_value,
        candidates=_starting_with(*_PROSE_NAMES),
    ),
)

RULES: tuple[Rule, ...] = _SEED_RULES + _PROVIDER_RULES + _PROSE_RULES


def redact(text: str) -> tuple[str, int]:
    """Replace every secret in `text` by `[REDACTED]`; return the new text and the count.

    Idempotent: a second call finds nothing.
    """
    total = 0
    for _ in range(_MAX_PASSES):
        found = 0
        lowered = text.lower()
        for rule in RULES:
            if not rule.may_match(text, lowered):
                continue
            text, count = rule.apply(text, lowered)
            if count:
                found += count
                lowered = text.lower()
        total += found
        if not found:
            break
    return text, total


def redact_json(value: Any) -> tuple[Any, int]:
    """Redact every string in a decoded JSON value; return a new value and the total count.

    Keys stay as they are. A string under a secret-looking key (`"password"`, `"api_key"`…) is
    judged like the value of a `KEY=value` line, because once the structure has separated name
    and value the text rules no longer see the name.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        result: dict[Any, Any] = {}
        total = 0
        for key, item in value.items():
            if isinstance(key, str) and isinstance(item, str) and _is_secret_field(key, item):
                result[key], count = REDACTED, 1
            else:
                result[key], count = redact_json(item)
            total += count
        return result, total
    if isinstance(value, list | tuple):
        items = []
        total = 0
        for item in value:
            new, count = redact_json(item)
            items.append(new)
            total += count
        return type(value)(items), total
    return value, 0


def _is_secret_field(key: str, value: str) -> bool:
    return (
        len(value) >= 4
        and _is_secret_name(key)
        and _looks_like_secret(name=key, value=value, quoted=True, numeric_ok=_numeric_ok(key))
    )
