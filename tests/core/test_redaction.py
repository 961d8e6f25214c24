from __future__ import annotations

import copy
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memoryhub.core.redaction import REDACTED, RULES, Rule, redact, redact_json
from tests.secrets_corpus import (
    ANTHROPIC_KEY,
    AWS_KEY_ID,
    BEARER_OPAQUE,
    EC_KEY,
    GITHUB_CLASSIC,
    GITLAB_PAT,
    JWT,
    MAILGUN_KEY,
    NEGATIVES,
    OPENAI_KEY,
    SAMPLES,
    STRIPE_RESTRICTED,
    STRIPE_SECRET,
    NegativeSample,
    SecretSample,
    fake,
)

RULE = {rule.name: rule for rule in RULES}


def rule(name: str) -> Rule:
    return RULE[name]


# --- the corpus -----------------------------------------------------------------------------


def test_the_corpus_is_broad_and_consistent() -> None:
    kinds = [sample.kind for sample in SAMPLES]
    assert len(set(kinds)) == len(kinds) >= 30
    assert len({sample.secret_value for sample in SAMPLES}) == len(SAMPLES)
    assert all(sample.secret_value in sample.context_text for sample in SAMPLES)
    assert len({negative.kind for negative in NEGATIVES}) == len(NEGATIVES) >= 20


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda sample: sample.kind)
def test_it_removes_every_secret_of_the_corpus(sample: SecretSample) -> None:
    redacted, count = redact(sample.context_text)

    assert sample.secret_value not in redacted
    assert count >= 1
    assert redact(redacted) == (redacted, 0)


@pytest.mark.parametrize("negative", NEGATIVES, ids=lambda negative: negative.kind)
def test_it_leaves_ordinary_text_unchanged(negative: NegativeSample) -> None:
    assert redact(negative.text) == (negative.text, 0)


# --- what a replacement looks like ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2hunter2", "password=[REDACTED]"),
        ("export API_TOKEN='abc123def456'", "export API_TOKEN='[REDACTED]'"),
        ('"api_key": "abcd1234efgh"', '"api_key": "[REDACTED]"'),
        ("DB_PASSWORD: s3cr3t-pw", "DB_PASSWORD: [REDACTED]"),
        ("'password' => 'hunter2hunter2'", "'password' => '[REDACTED]'"),
        ("set PASSWORD=hunter22.", "set PASSWORD=[REDACTED]."),
        ("Authorization: Bearer abcdefghijklmnop1234+/==", "Authorization: Bearer [REDACTED]"),
        ("token: Bearer abcdefghijklmnopqrstu", "token: Bearer [REDACTED]"),
        (
            "postgres://user:pa55word@db.example.com/app",
            "postgres://user:[REDACTED]@db.example.com/app",
        ),
        ("redis://:hunter22@cache:6379/0", "redis://:[REDACTED]@cache:6379/0"),
        ("https://user:p@ss@host/x", "https://user:[REDACTED]@host/x"),
        ("curl -u admin:s3cretpass https://x", "curl -u admin:[REDACTED] https://x"),
        ("the admin password: hunter22hunter", "the admin password: [REDACTED]"),
        (f"key {AWS_KEY_ID} here", "key [REDACTED] here"),
    ],
)
def test_it_keeps_names_and_replaces_only_values(text: str, expected: str) -> None:
    assert redact(text) == (expected, 1)


@pytest.mark.parametrize(
    "label",
    [
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "DSA PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ],
)
def test_it_replaces_whole_private_key_blocks(label: str) -> None:
    body = "\n".join(fake(f"{label}-{i}", "ABCDEFGHabcdefgh0123456789+/", 64) for i in range(4))
    text = f"before\n-----BEGIN {label}-----\n{body}\n-----END {label}-----\nafter"

    assert redact(text) == (f"before\n{REDACTED}\nafter", 1)


def test_it_cuts_a_truncated_private_key_at_the_end_of_its_body() -> None:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
    text = f"-----BEGIN PRIVATE KEY-----\n{body}\n(output truncated)"

    assert redact(text) == (f"{REDACTED}\n(output truncated)", 1)


def test_it_keeps_public_keys_and_certificates() -> None:
    body = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo"
    text = (
        f"-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n"
        f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"
    )

    assert redact(text) == (text, 0)


# --- rule order -----------------------------------------------------------------------------


def test_rules_run_in_the_documented_order() -> None:
    assert [r.name for r in RULES[:13]] == [
        "pem_private_key",
        "url_password",
        "env_assignment",
        "codex_bearer",
        "codex_assignment",
        "ohmypi_prefixed_key",
        "ohmypi_jwt",
        "ohmypi_aws_access_key_id",
        "ohmypi_github_token",
        "ohmypi_github_pat",
        "ohmypi_npm_token",
        "ohmypi_slack_token",
        "ohmypi_google_api_key",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The URL rule takes the password; the .env rule then sees a marker and stays out.
        (
            "REDIS_AUTH_URL=redis://:hunter22@cache:6379/0",
            "REDIS_AUTH_URL=redis://:[REDACTED]@cache:6379/0",
        ),
        (
            f"git remote add origin https://oauth2:{GITLAB_PAT}@gitlab.com/acme/web.git",
            "git remote add origin https://oauth2:[REDACTED]@gitlab.com/acme/web.git",
        ),
        # The .env rule takes the value before the token formats see it.
        (f"GITHUB_TOKEN={GITHUB_CLASSIC}", "GITHUB_TOKEN=[REDACTED]"),
        (f"token={JWT}", "token=[REDACTED]"),
        # Bearer before the oh-my-pi sk- pattern.
        (f"Authorization: Bearer {ANTHROPIC_KEY}", "Authorization: Bearer [REDACTED]"),
        # The whole PEM block before the "private_key" name.
        (
            '"private_key": "' + EC_KEY.replace("\n", "\\n") + '"',
            '"private_key": "[REDACTED]"',
        ),
    ],
)
def test_a_secret_matched_by_several_rules_is_counted_once(text: str, expected: str) -> None:
    assert redact(text) == (expected, 1)


# --- deviations from the seeds --------------------------------------------------------------

OHMYPI_FIRST_PATTERN = re.compile(r"(?:sk|pk|rk|tok|key|secret|token|password)[-_A-Za-z0-9]{12,}")
OHMYPI_JWT_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")


def test_the_prefixed_key_pattern_no_longer_eats_the_tail_of_identifiers() -> None:
    text = "monkey_business_value"

    # The source pattern, without the left boundary we add:
    assert OHMYPI_FIRST_PATTERN.sub(REDACTED, text) == "mon[REDACTED]"
    assert redact(text) == (text, 0)


@pytest.mark.parametrize(
    "identifier", ["tokenizer_config_v2xx", "skip_existing_records", "keyboard_layout_name"]
)
def test_identifiers_starting_with_a_prefix_are_still_redacted_as_in_the_source(
    identifier: str,
) -> None:
    assert OHMYPI_FIRST_PATTERN.fullmatch(identifier)
    assert redact(f"x = {identifier}") == (f"x = {REDACTED}", 1)


@pytest.mark.parametrize(
    "secret",
    [
        ANTHROPIC_KEY,
        OPENAI_KEY,
        STRIPE_SECRET,
        STRIPE_RESTRICTED,
        "pk" + "_live_" + fake("stripe-pk", "abcdefXYZ0123456789", 40),
        MAILGUN_KEY,
    ],
    ids=["anthropic", "openai", "stripe_sk", "stripe_rk", "stripe_pk", "mailgun"],
)
def test_provider_keys_are_caught_whole_by_the_prefixed_key_pattern(secret: str) -> None:
    assert rule("ohmypi_prefixed_key").pattern.fullmatch(secret)


def test_labelled_aws_secret_keys_are_caught_by_the_env_rule() -> None:
    secret = fake("aws", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+", 40)
    text = f"aws_secret_access_key = {secret}"

    assert rule("env_assignment").apply(text) == ("aws_secret_access_key = [REDACTED]", 1)


# Runs of token characters short or around the 16-character threshold, between breaks.
_token_run = st.one_of(
    st.text(alphabet="aZ9_-", max_size=6), st.text(alphabet="aZ9_-", min_size=15, max_size=18)
)
_jwt_like_text = st.lists(
    st.tuples(_token_run, st.sampled_from([".", ".", " ", "..", "\n", "+"])), max_size=12
).map(lambda parts: "".join(run + sep for run, sep in parts))


@given(_jwt_like_text)
def test_the_jwt_boundary_changes_no_match(text: str) -> None:
    ours = [match.span() for match in rule("ohmypi_jwt").pattern.finditer(text)]
    source = [match.span() for match in OHMYPI_JWT_PATTERN.finditer(text)]

    assert ours == source


_RULE_TEXT = st.lists(
    st.one_of(
        st.sampled_from(
            ["Token", "TOKEN", "token", "secret", "Password", "api_key", "ApiKey", "auth"]
            + ["sk", "pk_", "key-", "Bearer ", "authorization: basic ", "pwd", "dsn"]
            + ["=", ": ", " = ", '"', "'", ".", "..", "-", "_", " ", "\n", "İ", "ß", REDACTED]
        ),
        st.text(alphabet="aZ9_-", min_size=1, max_size=20),
    ),
    max_size=30,
).map("".join)


@settings(max_examples=500)
@given(st.one_of(_RULE_TEXT, _jwt_like_text))
@example("ab." + "a" * 16 + "." + "b" * 16 + "." + "c" * 16)  # a JWT after a short dotted part
@example("SECRET=x İ token=abcd Bearer " + "x" * 20)  # İ lowercases to two characters
def test_fast_candidate_scans_find_the_same_matches_as_the_regex(text: str) -> None:
    for candidate_rule in RULES:
        if candidate_rule.candidates is None:
            continue
        fast = [m.span() for m in candidate_rule.matches(text, text.lower())]
        plain = [m.span() for m in candidate_rule.pattern.finditer(text)]

        assert fast == plain, candidate_rule.name


# --- values that are not secrets -----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "token = get_token()",
        "password = os.environ['DB_PASSWORD']",
        "token=self.token",
        "secret = settings.SECRET_KEY",
        "client = Client(api_key=api_key)",
        "api_token: Optional[str] = None",
        "password: String,",
        '"token": null',
        "DB_PASSWORD=${DB_PASSWORD}",
        'password: "{{ db_password }}"',
        "MAX_TOKENS=4096",
        "max_output_tokens: 8192",
        "def f(token: ApiToken | None = None, token_id: UUID) -> None:",
        "record(tokens_in=reply.tokens_in, daily_token_budget=budget)",
        'print(f"  password: {password}")',
        '{"redact_secrets": redact}',
        "LLM_API_KEY = api_key",
        "password = db_password",
        "INFO auth: login succeeded for alice",
    ],
)
def test_it_keeps_values_that_are_code_references_or_counts(text: str) -> None:
    assert redact(text) == (text, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DB_PASSWORD=12345678", "DB_PASSWORD=[REDACTED]"),
        ("password: 12345678", "password: [REDACTED]"),
        ('password = "get_password()"', 'password = "[REDACTED]"'),
    ],
)
def test_it_redacts_numeric_passwords_and_quoted_strings(text: str, expected: str) -> None:
    assert redact(text) == (expected, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('AUTH_USER_MODEL = "accounts.User"', 'AUTH_USER_MODEL = "[REDACTED]"'),
        ("tokenizer: cl100k_base", "tokenizer: [REDACTED]"),
    ],
)
def test_documented_false_positives(text: str, expected: str) -> None:
    assert redact(text) == (expected, 1)


@pytest.mark.parametrize(
    "text",
    # The boundary we add to oh-my-pi's first pattern includes _ and -: parts of snake_case and
    # kebab-case names are not secrets (the source turned these into test_[REDACTED]).
    ["def test_token_estimate_counts():", "my_secret_value_for_x", "monkey-token-refresh-flag"],
)
def test_name_parts_after_underscores_and_dashes_are_kept(text: str) -> None:
    assert redact(text) == (text, 0)


# --- the marker and idempotence -------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        REDACTED,
        "password=[REDACTED]",
        'token: "[REDACTED]"',
        "API_KEY=[REDACTED]",
        "Authorization: Bearer [REDACTED]",
        "Authorization: Basic [REDACTED]",
        "postgres://app:[REDACTED]@db/app",
        "DATABASE_PASSWORD=postgres://app:[REDACTED]@db/app",
        "curl -u admin:[REDACTED] https://x",
        "mysql -u root -p[REDACTED]",
        "--password [REDACTED]",
        "AccountKey=[REDACTED];",
        "https://hooks.slack.com/services/[REDACTED]",
        "[REDACTED][REDACTED] [REDACTED].[REDACTED].[REDACTED]",
    ],
)
def test_the_marker_is_never_matched_again(text: str) -> None:
    assert redact(text) == (text, 0)


_HEX = "0123456789abcdef"
_HEX_UPPER = "0123456789ABCDEF"


def _hex(size: int, extra: int = 8, alphabet: str = _HEX) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=size, max_size=size + extra)


def _bare(prefix: str, body: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[str, str]]:
    """A token that stands on its own: (text to embed, secret that must disappear)."""
    return body.map(lambda b: (prefix + b, prefix + b))


def _named(
    before: str, body: st.SearchStrategy[str], after: str = ""
) -> st.SearchStrategy[tuple[str, str]]:
    """A value after a name that stays: (text to embed, the value)."""
    return body.map(lambda b: (before + b + after, b))


def _pem_block(lines: list[str]) -> tuple[str, str]:
    body = "\n".join(lines)
    return f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----", body


# Hex bodies: no hex string can form another rule's prefix (sk, key, AKIA…) by accident,
# so each embedded secret is exactly one redaction.
_EMBEDDED_SECRETS = st.one_of(
    _bare("gh" + "p_", _hex(36)),
    _bare("AK" + "IA", _hex(16, 0, _HEX_UPPER)),
    _bare("github" + "_pat_", _hex(60)),
    _bare("np" + "m_", _hex(36)),
    _bare("xo" + "xb-", _hex(20)),
    _bare("AI" + "za", _hex(35)),
    _bare("sk" + "-ant-api03-", _hex(40)),
    _bare("h" + "f_", _hex(34)),
    _bare("gl" + "pat-", _hex(20)),
    _bare("dckr" + "_pat_", _hex(27)),
    _bare("mh" + "_rw_", _hex(43)),
    st.tuples(_hex(20), _hex(30), _hex(30)).map(
        lambda parts: (f"eyJ{parts[0]}.eyJ{parts[1]}.{parts[2]}",) * 2
    ),
    _named("Bearer ", _hex(20, 20)),
    _named("password=", _hex(8, 12)),
    _named("postgres://app:", st.text(_HEX + "XYZ!*", min_size=8, max_size=20), "@db:5432/app"),
    st.lists(_hex(64, 0), min_size=1, max_size=4).map(_pem_block),
)
# Words that no rule can match, alone or next to a secret.
_FILLER = st.sampled_from(
    ["the", "deploy", "failed", "after", "we", "ran", "tests", "on", "main", "then", "fixed"]
    + ["it", "by", "adding", "an", "index", "to", "worker", "queue", "and", "merged", "branch"]
)
_SEPARATOR = st.sampled_from([" ", "\n", "\t", ", ", ". ", " (", ") "])


@settings(max_examples=300)
@given(
    st.lists(st.tuples(st.lists(_FILLER, max_size=4), _EMBEDDED_SECRETS, _SEPARATOR), max_size=8),
    st.lists(_FILLER, max_size=4),
)
def test_every_embedded_secret_is_removed_and_counted(
    pieces: list[tuple[list[str], tuple[str, str], str]], tail: list[str]
) -> None:
    text = ""
    for words, (embedded, _secret), separator in pieces:
        text += " ".join([*words, embedded]) + separator
    text += " ".join(tail)

    redacted, count = redact(text)

    for _words, (_embedded, secret), _separator in pieces:
        assert secret not in redacted
    assert count == len(pieces)
    assert redact(redacted) == (redacted, 0)


@given(st.text())
def test_redaction_is_idempotent_on_any_text(text: str) -> None:
    redacted, _count = redact(text)

    assert redact(redacted) == (redacted, 0)


_TRICKY_PIECES = st.sampled_from(
    [
        REDACTED,
        "password=",
        "TOKEN: ",
        "Bearer ",
        "://u:",
        "@",
        ":",
        "=",
        "'",
        '"',
        "-----BEGIN PRIVATE KEY-----",
        "-----END PRIVATE KEY-----",
        "\\n",
        "\n",
        "sk_live_",
        "AKIA",
        ".",
        "monkey",
    ]
)


@settings(max_examples=300)
@given(
    st.lists(
        st.one_of(
            _TRICKY_PIECES,
            st.text(max_size=20),
            _EMBEDDED_SECRETS.map(lambda pair: pair[0]),
        )
    )
)
def test_redaction_is_idempotent_when_pieces_touch(pieces: list[str]) -> None:
    redacted, _count = redact("".join(pieces))

    assert redact(redacted) == (redacted, 0)


@settings(max_examples=50)
@given(st.lists(st.sampled_from(SAMPLES), min_size=1, max_size=6, unique_by=lambda s: s.kind))
def test_corpus_samples_redact_the_same_together_as_alone(samples: list[SecretSample]) -> None:
    redacted, count = redact("\n\n".join(sample.context_text for sample in samples))

    assert all(sample.secret_value not in redacted for sample in samples)
    assert count == sum(redact(sample.context_text)[1] for sample in samples)


# --- redact_json ----------------------------------------------------------------------------


def test_redact_json_redacts_every_string_of_a_nested_structure() -> None:
    value = {
        "type": "tool_use",
        "input": {
            "command": f"export GITHUB_TOKEN={GITHUB_CLASSIC}",
            "args": [f"Bearer {BEARER_OPAQUE}", 3, None, True, 2.5],
        },
        "content": [{"type": "text", "text": f"the key is {AWS_KEY_ID}"}],
        # Keys are never rewritten, even one that looks like a secret.
        GITHUB_CLASSIC: "value",
    }
    original = copy.deepcopy(value)

    redacted, count = redact_json(value)

    assert redacted == {
        "type": "tool_use",
        "input": {
            "command": "export GITHUB_TOKEN=[REDACTED]",
            "args": ["Bearer [REDACTED]", 3, None, True, 2.5],
        },
        "content": [{"type": "text", "text": "the key is [REDACTED]"}],
        GITHUB_CLASSIC: "value",
    }
    assert count == 3
    assert value == original


def test_redact_json_judges_strings_under_secret_names_like_assignments() -> None:
    value = {
        "password": "correct horse battery staple",
        "db": {"PASSWORD": "12345678", "host": "db.internal"},
        "max_tokens": "4096",
        "api_token": "",
        "token": "${API_TOKEN}",
        "author": "Jane Doe",
        "secret": "abc",
    }

    redacted, count = redact_json(value)

    assert redacted == value | {
        "password": REDACTED,
        "db": {"PASSWORD": REDACTED, "host": "db.internal"},
    }
    assert count == 2


def test_redact_json_keeps_scalars_and_sequence_types() -> None:
    assert redact_json(None) == (None, 0)
    assert redact_json(42) == (42, 0)
    assert redact_json(("a", f"key {AWS_KEY_ID}")) == (("a", "key [REDACTED]"), 1)
    assert redact_json([]) == ([], 0)
    assert redact_json(f"x {AWS_KEY_ID}") == ("x [REDACTED]", 1)
    assert redact_json({"n": REDACTED, "password": REDACTED}) == (
        {"n": REDACTED, "password": REDACTED},
        0,
    )


# --- prose: the one policy covers what the pipeline used to catch on its own ---------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The password for staging is Xy7!kq2Lm9", "The password for staging is [REDACTED]"),
        ("The staging admin password is Hunter2024", "The staging admin password is [REDACTED]"),
        ("password is s3cr3t-pw", "password is [REDACTED]"),
        ("测试环境的密码是 Ab12cd34，别外传", "测试环境的密码是 [REDACTED]，别外传"),
        ("密码：Ab12cd34", "密码：[REDACTED]"),
        ("token: abc123def456xyz", "token: [REDACTED]"),
        ("redis-cli -h cache -a s3cretpw ping", "redis-cli -h cache -a [REDACTED] ping"),
    ],
)
def test_secrets_stated_in_prose_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == (expected, 1)


def test_the_pipeline_has_no_redaction_rule_of_its_own() -> None:
    from memoryhub.pipeline import extractor

    assert not hasattr(extractor, "redact_prose_secrets")
    assert not hasattr(extractor, "redact_all")


def test_only_core_redaction_writes_the_marker() -> None:
    """A second redaction policy would have to write the marker itself: none may."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    own = root / "memoryhub" / "core" / "redaction.py"
    offenders = [
        str(path.relative_to(root))
        for folder in ("memoryhub", "accounts", "projects")
        for path in (root / folder).rglob("*.py")
        if path != own and re.search(r"""["']\[REDACTED\]["']""", path.read_text())
    ]
    assert offenders == []
