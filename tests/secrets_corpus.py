"""Fake secrets in realistic surroundings, for the redaction tests.

Every value is fake. Nothing here was ever a real credential. The bodies are generated at
import time from a seeded RNG and the prefixes are split, so no token appears literally in
the source and secret scanners (GitHub push protection and the like) have nothing to flag.

`SAMPLES`: each must lose `secret_value` and count at least one redaction.
`NEGATIVES`: ordinary code and prose that must come out unchanged, with a count of 0.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretSample:
    kind: str
    context_text: str
    secret_value: str


@dataclass(frozen=True)
class NegativeSample:
    kind: str
    text: str


DIGITS = string.digits
HEX = "0123456789abcdef"
UPPER_ALNUM = string.ascii_uppercase + DIGITS
ALNUM = string.ascii_letters + DIGITS
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"
# Passwords: no characters that end a URL's userinfo or an unquoted shell word.
PASSWORD = ALNUM + "!*^%+~"


def fake(seed: str, alphabet: str, length: int) -> str:
    """A deterministic random string: the same seed always gives the same fake secret."""
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(length))


def _pem_body(seed: str, lines: int) -> str:
    return (
        "\n".join(fake(f"{seed}-{i}", B64, 64) for i in range(lines)) + "\n" + fake(seed, B64, 24)
    )


def _pem(label: str, seed: str, *, lines: int = 6) -> tuple[str, str]:
    body = _pem_body(seed, lines)
    block = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
    return block, body


# --- the fake values ----------------------------------------------------------------------

AWS_KEY_ID = "AK" + "IA" + fake("aws-id", UPPER_ALNUM, 16)
AWS_KEY_ID_2 = "AK" + "IA" + fake("aws-id-2", UPPER_ALNUM, 16)
AWS_SECRET = fake("aws-secret", B64, 40)
AWS_SESSION_ID = "AS" + "IA" + fake("aws-session-id", UPPER_ALNUM, 16)
AWS_SESSION_SECRET = fake("aws-session-secret", B64, 40)
AWS_SESSION_TOKEN = "FwoGZXIvYXdzE" + fake("aws-session-token", B64, 300)
GITHUB_CLASSIC = "gh" + "p_" + fake("ghp", ALNUM, 36)
GITHUB_FINE = "github" + "_pat_" + fake("ghfg-1", ALNUM, 22) + "_" + fake("ghfg-2", ALNUM, 59)
GITHUB_OAUTH = "gh" + "o_" + fake("gho", ALNUM, 36)
GITHUB_APP = "gh" + "s_" + fake("ghs", ALNUM, 36)
GITLAB_PAT = "gl" + "pat-" + fake("glpat", B64URL, 20)
OPENAI_KEY = "sk" + "-proj-" + fake("openai", B64URL, 120)
ANTHROPIC_KEY = "sk" + "-ant-api03-" + fake("anthropic", B64URL, 93) + "AA"
STRIPE_SECRET = "sk" + "_live_" + fake("stripe-sk", ALNUM, 99)
STRIPE_RESTRICTED = "rk" + "_live_" + fake("stripe-rk", ALNUM, 99)
STRIPE_WEBHOOK = "wh" + "sec_" + fake("stripe-whsec", ALNUM, 32)
SLACK_BOT = "xo" + "xb-" + fake("slack-1", DIGITS, 13) + "-" + fake("slack-2", DIGITS, 13)
SLACK_BOT += "-" + fake("slack-3", ALNUM, 24)
SLACK_HOOK_TOKEN = fake("slack-hook", ALNUM, 24)
SLACK_HOOK_PATH = "T" + fake("slack-t", UPPER_ALNUM, 10) + "/B" + fake("slack-b", UPPER_ALNUM, 10)
GOOGLE_API_KEY = "AI" + "za" + fake("google-api", B64URL, 35)
GOOGLE_ACCESS = "ya" + "29." + fake("google-ya29", B64URL, 160)
GOOGLE_CLIENT_SECRET = "GOC" + "SPX-" + fake("gocspx", B64URL, 28)
JWT = ".".join(
    [
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "eyJ" + fake("jwt-payload", B64URL, 80),
        fake("jwt-signature", B64URL, 43),
    ]
)
BEARER_OPAQUE = fake("bearer", B64, 42) + "=="
BASIC_CREDENTIALS = fake("basic", B64, 30) + "=="
NPM_TOKEN = "np" + "m_" + fake("npm", ALNUM, 36)
PYPI_TOKEN = "py" + "pi-AgEIcHlwaS5vcmc" + fake("pypi", B64URL, 140)
HF_TOKEN = "h" + "f_" + fake("hf", string.ascii_letters, 34)
SENDGRID_KEY = "S" + "G." + fake("sg-1", B64URL, 22) + "." + fake("sg-2", B64URL, 43)
TWILIO_KEY = "S" + "K" + fake("twilio", HEX, 32)
AZURE_ACCOUNT_KEY = fake("azure-key", B64, 86) + "=="
AZURE_SAS_SIG = fake("azure-sas", ALNUM, 40) + "%2B" + fake("azure-sas-2", ALNUM, 4) + "%3D"
AZURE_SB_KEY = fake("azure-sb", B64, 43) + "="
DISCORD_BOT = "M" + fake("discord-1", B64URL, 25) + "." + fake("discord-2", B64URL, 6)
DISCORD_BOT += "." + fake("discord-3", B64URL, 38)
DISCORD_HOOK_TOKEN = fake("discord-hook", B64URL, 68)
TELEGRAM_TOKEN = fake("tg-id", DIGITS, 10) + ":AA" + fake("tg", B64URL, 33)
DIGITALOCEAN_TOKEN = "do" + "p_v1_" + fake("do", HEX, 64)
SHOPIFY_TOKEN = "shp" + "at_" + fake("shopify", HEX, 32)
DOCKERHUB_TOKEN = "dckr" + "_pat_" + fake("docker", B64URL, 27)
LINEAR_KEY = "lin" + "_api_" + fake("linear", ALNUM, 40)
VAULT_TOKEN = "hv" + "s." + fake("vault", B64URL, 90)
MEMORYHUB_TOKEN = "mh" + "_rw_" + fake("memoryhub", B64URL, 43)
MAILGUN_KEY = "ke" + "y-" + fake("mailgun", HEX, 32)
SENTRY_KEY = fake("sentry", HEX, 32)
DJANGO_SECRET = "django-insecure-" + fake("django", ALNUM + "!@#%^&*(-_=+)", 50).replace('"', "")
PG_PASSWORD = fake("pg", PASSWORD, 20)
MYSQL_PASSWORD = fake("mysql-url", PASSWORD, 18)
MONGO_PASSWORD = fake("mongo", PASSWORD, 24)
REDIS_PASSWORD = fake("redis", ALNUM, 32)
AMQP_PASSWORD = fake("amqp", PASSWORD, 16)
ENV_DB_PASSWORD = fake("env-db", PASSWORD, 20)
COMPOSE_PASSWORD = fake("compose", PASSWORD, 18)
CURL_PASSWORD = fake("curl", PASSWORD, 14)
MYSQL_CLI_PASSWORD = fake("mysql-cli", ALNUM, 14)
CLI_FLAG_PASSWORD = fake("cli-flag", PASSWORD, 22)
PROSE_PASSWORD = fake("prose", PASSWORD, 12)
PROSE_FOR_PASSWORD = fake("prose-for", PASSWORD, 12)
PROSE_IS_PASSWORD = fake("prose-is", PASSWORD, 14)
PROSE_ZH_PASSWORD = fake("prose-zh", PASSWORD, 12)
PROSE_ZH_KEY = fake("prose-zh-key", ALNUM, 20)
PROSE_TOKEN = fake("prose-token", ALNUM, 24)
REDIS_CLI_PASSWORD = fake("redis-cli", ALNUM, 16)
NUMERIC_PIN = fake("pin", DIGITS, 8)

RSA_KEY, RSA_BODY = _pem("RSA PRIVATE KEY", "rsa", lines=12)
OPENSSH_KEY, OPENSSH_BODY = _pem("OPENSSH PRIVATE KEY", "openssh", lines=6)
PGP_KEY, PGP_BODY = _pem("PGP PRIVATE KEY BLOCK", "pgp", lines=8)
EC_KEY, EC_BODY = _pem("PRIVATE KEY", "ec-json", lines=4)
ENCRYPTED_BODY = _pem_body("encrypted", 3)


# --- secrets in context -------------------------------------------------------------------

SAMPLES: list[SecretSample] = [
    SecretSample(
        "aws_access_key_id",
        "$ aws sts get-caller-identity --debug 2>&1 | grep -i credential\n"
        "2025-03-02 10:14:07,118 - MainThread - botocore.credentials - INFO - Found "
        f"credentials in environment variables.\nUsing access key {AWS_KEY_ID} for signing\n",
        AWS_KEY_ID,
    ),
    SecretSample(
        "aws_secret_access_key",
        "# ~/.aws/credentials\n[default]\n"
        f"aws_access_key_id = {AWS_KEY_ID_2}\naws_secret_access_key = {AWS_SECRET}\n"
        "region = eu-west-1\n",
        AWS_SECRET,
    ),
    SecretSample(
        "aws_session_token",
        "$ aws sts assume-role --role-arn arn:aws:iam::123456789012:role/deploy "
        "--role-session-name ci\n"
        '{\n    "Credentials": {\n'
        f'        "AccessKeyId": "{AWS_SESSION_ID}",\n'
        f'        "SecretAccessKey": "{AWS_SESSION_SECRET}",\n'
        f'        "SessionToken": "{AWS_SESSION_TOKEN}",\n'
        '        "Expiration": "2025-03-02T11:14:07+00:00"\n    }\n}\n',
        AWS_SESSION_TOKEN,
    ),
    SecretSample(
        "github_classic_pat",
        f'curl -s -H "Authorization: token {GITHUB_CLASSIC}" '
        "https://api.github.com/repos/acme/memoryhub/pulls?state=open | jq '.[].title'",
        GITHUB_CLASSIC,
    ),
    SecretSample(
        "github_fine_grained_pat",
        f"$ GH_TOKEN={GITHUB_FINE} gh pr list --repo acme/memoryhub --state open\n"
        "Showing 3 of 3 open pull requests in acme/memoryhub\n",
        GITHUB_FINE,
    ),
    SecretSample(
        "github_oauth_token",
        "# ~/.config/gh/hosts.yml\ngithub.com:\n    user: octocat\n"
        f"    oauth_token: {GITHUB_OAUTH}\n    git_protocol: https\n",
        GITHUB_OAUTH,
    ),
    SecretSample(
        "github_app_token_in_git_url",
        f"$ git clone https://x-access-token:{GITHUB_APP}@github.com/acme/api.git\n"
        "Cloning into 'api'...\nremote: Enumerating objects: 1184, done.\n",
        GITHUB_APP,
    ),
    SecretSample(
        "gitlab_pat",
        f'curl --header "PRIVATE-TOKEN: {GITLAB_PAT}" '
        '"https://gitlab.com/api/v4/projects/4242/pipelines?status=failed"',
        GITLAB_PAT,
    ),
    SecretSample(
        "openai_project_key",
        "from openai import OpenAI\n\n"
        f'client = OpenAI(api_key="{OPENAI_KEY}")\n'
        'reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)\n',
        OPENAI_KEY,
    ),
    SecretSample(
        "anthropic_api_key",
        "curl https://api.anthropic.com/v1/messages \\\n"
        f'     -H "x-api-key: {ANTHROPIC_KEY}" \\\n'
        '     -H "anthropic-version: 2023-06-01" \\\n'
        "     -d @request.json\n",
        ANTHROPIC_KEY,
    ),
    SecretSample(
        "stripe_secret_key",
        "// billing/charge.js\n"
        f"const stripe = require('stripe')('{STRIPE_SECRET}');\n"
        "await stripe.charges.create({ amount: 2000, currency: 'usd', source: 'tok_visa' });\n",
        STRIPE_SECRET,
    ),
    SecretSample(
        "stripe_restricted_key",
        f"billing:\n  provider: stripe\n  reporting: {STRIPE_RESTRICTED}\n  currency: eur\n",
        STRIPE_RESTRICTED,
    ),
    SecretSample(
        "stripe_webhook_secret",
        "$ stripe listen --forward-to localhost:8000/webhooks/stripe/\n"
        "> Ready! You are using Stripe API Version [2024-06-20]. Your webhook signing "
        f"secret is {STRIPE_WEBHOOK} (^C to quit)\n",
        STRIPE_WEBHOOK,
    ),
    SecretSample(
        "slack_bot_token",
        '{\n  "slack": {\n'
        f'    "bot": "{SLACK_BOT}",\n'
        '    "channel": "#deploys",\n    "notify_on": ["failure", "recovery"]\n  }\n}\n',
        SLACK_BOT,
    ),
    SecretSample(
        "slack_webhook_url",
        "# alertmanager.yml\nreceivers:\n  - name: team-memoryhub\n    slack_configs:\n"
        "      - api_url: https://hooks.slack.com/services/"
        f"{SLACK_HOOK_PATH}/{SLACK_HOOK_TOKEN}\n        channel: '#alerts'\n",
        SLACK_HOOK_TOKEN,
    ),
    SecretSample(
        "google_api_key",
        '<script async src="https://maps.googleapis.com/maps/api/js?'
        f'key={GOOGLE_API_KEY}&callback=initMap"></script>\n',
        GOOGLE_API_KEY,
    ),
    SecretSample(
        "google_oauth_access_token",
        f"$ gcloud auth print-access-token\n{GOOGLE_ACCESS}\n$ gcloud config list\n",
        GOOGLE_ACCESS,
    ),
    SecretSample(
        "google_oauth_client_secret",
        '{"installed": {"client_id": "1234567890-abc123def456.apps.googleusercontent.com", '
        f'"project_id": "acme-memoryhub", "client_secret": "{GOOGLE_CLIENT_SECRET}", '
        '"redirect_uris": ["http://localhost"]}}',
        GOOGLE_CLIENT_SECRET,
    ),
    SecretSample(
        "jwt_in_cookie",
        "GET /api/v1/projects/alpha/memories/ HTTP/1.1\nHost: memoryhub.internal\n"
        f"Cookie: csrftoken=ab12; access={JWT}\nAccept: application/json\n",
        JWT,
    ),
    SecretSample(
        "bearer_token_curl",
        "curl -X POST https://api.example.com/v2/deployments \\\n"
        f'  -H "Authorization: Bearer {BEARER_OPAQUE}" \\\n'
        "  -H 'Content-Type: application/json' -d '{\"ref\": \"main\"}'\n",
        BEARER_OPAQUE,
    ),
    SecretSample(
        "basic_auth_header",
        "> GET /job/memoryhub/lastBuild/api/json HTTP/1.1\n> Host: ci.example.com\n"
        f"> Authorization: Basic {BASIC_CREDENTIALS}\n> User-Agent: curl/8.5.0\n",
        BASIC_CREDENTIALS,
    ),
    SecretSample(
        "npm_token",
        "# ~/.npmrc\nregistry=https://registry.npmjs.org/\n"
        f"//registry.npmjs.org/:_authToken={NPM_TOKEN}\nsave-exact=true\n",
        NPM_TOKEN,
    ),
    SecretSample(
        "pypi_token",
        f"$ twine upload -u __token__ -p {PYPI_TOKEN} dist/*\n"
        "Uploading memoryhub-0.1.0-py3-none-any.whl\n",
        PYPI_TOKEN,
    ),
    SecretSample(
        "huggingface_token",
        f'from huggingface_hub import login\n\nlogin("{HF_TOKEN}")\n'
        'model = AutoModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")\n',
        HF_TOKEN,
    ),
    SecretSample(
        "sendgrid_api_key",
        "from sendgrid import SendGridAPIClient\n\n"
        f'sg = SendGridAPIClient("{SENDGRID_KEY}")\nresponse = sg.send(message)\n',
        SENDGRID_KEY,
    ),
    SecretSample(
        "twilio_api_key_sid",
        "const twilio = require('twilio');\n"
        f"const client = twilio('{TWILIO_KEY}', process.env.TWILIO_API_SECRET, {{\n"
        "  accountSid: 'AC00000000000000000000000000000000',\n});\n",
        TWILIO_KEY,
    ),
    SecretSample(
        "azure_storage_connection_string",
        "from azure.storage.blob import BlobServiceClient\n\n"
        'service = BlobServiceClient.from_connection_string("DefaultEndpointsProtocol=https;'
        f'AccountName=acmeprod;AccountKey={AZURE_ACCOUNT_KEY};EndpointSuffix=core.windows.net")\n',
        AZURE_ACCOUNT_KEY,
    ),
    SecretSample(
        "azure_sas_url",
        'azcopy copy ./build "https://acmeprod.blob.core.windows.net/site?sv=2022-11-02'
        "&ss=b&srt=co&sp=rwdlac&se=2026-01-01T00:00:00Z&st=2025-01-01T00:00:00Z&spr=https"
        f'&sig={AZURE_SAS_SIG}" --recursive\n',
        AZURE_SAS_SIG,
    ),
    SecretSample(
        "azure_service_bus_key",
        "Endpoint=sb://acme-events.servicebus.windows.net/;"
        f"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={AZURE_SB_KEY}\n",
        AZURE_SB_KEY,
    ),
    SecretSample(
        "discord_bot_token",
        "import discord\n\nclient = discord.Client(intents=discord.Intents.default())\n"
        f'client.run("{DISCORD_BOT}")\n',
        DISCORD_BOT,
    ),
    SecretSample(
        "discord_webhook_url",
        "curl -X POST -H 'Content-Type: application/json' -d '{\"content\": \"deploy ok\"}' "
        f"https://discord.com/api/webhooks/1187654321098765432/{DISCORD_HOOK_TOKEN}\n",
        DISCORD_HOOK_TOKEN,
    ),
    SecretSample(
        "telegram_bot_token",
        f"requests.post(f'https://api.telegram.org/bot{TELEGRAM_TOKEN}/sendMessage', "
        "data={'chat_id': 42, 'text': 'build failed'})\n",
        TELEGRAM_TOKEN,
    ),
    SecretSample(
        "digitalocean_token",
        f"$ doctl auth init --context acme --access-token {DIGITALOCEAN_TOKEN}\n"
        "Validating token... OK\n",
        DIGITALOCEAN_TOKEN,
    ),
    SecretSample(
        "shopify_access_token",
        f'curl -H "X-Shopify-Access-Token: {SHOPIFY_TOKEN}" '
        "https://acme.myshopify.com/admin/api/2024-01/products.json\n",
        SHOPIFY_TOKEN,
    ),
    SecretSample(
        "dockerhub_token",
        f'$ echo "{DOCKERHUB_TOKEN}" | docker login -u acme --password-stdin\nLogin Succeeded\n',
        DOCKERHUB_TOKEN,
    ),
    SecretSample(
        "linear_api_key",
        f'from linear import LinearClient\n\nlinear = LinearClient("{LINEAR_KEY}")\n',
        LINEAR_KEY,
    ),
    SecretSample(
        "vault_token",
        f"$ vault login {VAULT_TOKEN}\nSuccess! You are now authenticated.\n",
        VAULT_TOKEN,
    ),
    SecretSample(
        "memoryhub_agent_token",
        "$ python manage.py token_create --project alpha --name ci-agent\n"
        f"Created token {MEMORYHUB_TOKEN} (shown once; store it now)\n",
        MEMORYHUB_TOKEN,
    ),
    SecretSample(
        "mailgun_api_key",
        f'MAILGUN = {{"domain": "mg.example.com", "api": "{MAILGUN_KEY}"}}\n',
        MAILGUN_KEY,
    ),
    SecretSample(
        "sentry_dsn",
        f"# .env.production\nSENTRY_DSN=https://{SENTRY_KEY}@o123456.ingest.sentry.io/4505\n"
        "SENTRY_ENVIRONMENT=production\n",
        SENTRY_KEY,
    ),
    SecretSample(
        "django_secret_key",
        "# memoryhub/settings_local.py\nDEBUG = True\n"
        f'SECRET_KEY = "{DJANGO_SECRET}"\nALLOWED_HOSTS = ["*"]\n',
        DJANGO_SECRET,
    ),
    SecretSample(
        "postgres_url_docker_run",
        "docker run --rm -p 8000:8000 "
        f"-e DATABASE_URL=postgres://app:{PG_PASSWORD}@db:5432/memoryhub "
        "-e DJANGO_DEBUG=0 acme/memoryhub:latest\n",
        PG_PASSWORD,
    ),
    SecretSample(
        "mysql_url_stack_trace",
        "Traceback (most recent call last):\n"
        '  File "/srv/shop/db.py", line 8, in <module>\n'
        f'    engine = create_engine("mysql+pymysql://shop:{MYSQL_PASSWORD}@10.0.0.5:3306/shop")\n'
        "sqlalchemy.exc.OperationalError: (pymysql.err.OperationalError) (2003, \"Can't "
        "connect to MySQL server on '10.0.0.5'\")\n",
        MYSQL_PASSWORD,
    ),
    SecretSample(
        "mongodb_srv_url",
        '{\n  "mongo": {\n'
        f'    "uri": "mongodb+srv://svc:{MONGO_PASSWORD}@cluster0.ab12c.mongodb.net/prod'
        '?retryWrites=true&w=majority"\n  }\n}\n',
        MONGO_PASSWORD,
    ),
    SecretSample(
        "redis_url_password_only",
        "# memoryhub/settings.py (local override)\n"
        f'CELERY_BROKER_URL = "redis://:{REDIS_PASSWORD}@redis.internal:6379/0"\n',
        REDIS_PASSWORD,
    ),
    SecretSample(
        "amqp_url_in_logs",
        "$ kubectl logs deploy/worker | tail -2\n"
        "[2025-03-02 10:20:11,004: ERROR/MainProcess] consumer: Cannot connect to "
        f"amqps://rabbit:{AMQP_PASSWORD}@mq.internal:5671/%2F: timed out.\n",
        AMQP_PASSWORD,
    ),
    SecretSample(
        "dotenv_db_password",
        "# .env\nDJANGO_DEBUG=1\nDB_HOST=localhost\nDB_USER=memoryhub\n"
        f"DB_PASSWORD={ENV_DB_PASSWORD}\nDB_NAME=memoryhub\n",
        ENV_DB_PASSWORD,
    ),
    SecretSample(
        "compose_yaml_password",
        "services:\n  db:\n    image: postgres:17\n    environment:\n"
        f"      POSTGRES_USER: memoryhub\n      POSTGRES_PASSWORD: {COMPOSE_PASSWORD}\n",
        COMPOSE_PASSWORD,
    ),
    SecretSample(
        "numeric_password",
        f"export MYSQL_ROOT_PASSWORD={NUMERIC_PIN}\ndocker compose up -d mysql\n",
        NUMERIC_PIN,
    ),
    SecretSample(
        "rsa_private_key",
        f"$ cat deploy/id_rsa\n{RSA_KEY}\n$ chmod 600 deploy/id_rsa\n",
        RSA_BODY,
    ),
    SecretSample(
        "openssh_private_key",
        f"Here is the key the CI uses:\n\n```\n{OPENSSH_KEY}\n```\n",
        OPENSSH_BODY,
    ),
    SecretSample(
        "pgp_private_key_block",
        f"$ gpg --export-secret-keys --armor release@acme.dev\n{PGP_KEY}\n",
        PGP_BODY,
    ),
    SecretSample(
        "private_key_in_service_account_json",
        '{"type": "service_account", "project_id": "acme-prod", "private_key_id": "1a2b3c", '
        '"private_key": "' + EC_KEY.replace("\n", "\\n") + '\\n", '
        '"client_email": "ci@acme-prod.iam.gserviceaccount.com"}',
        EC_BODY.replace("\n", "\\n"),
    ),
    SecretSample(
        "truncated_encrypted_private_key",
        "$ head -n 7 secrets/server.key\n-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
        f"Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F2B8C1E9D4A4B7E\n\n{ENCRYPTED_BODY}\n"
        "$ wc -l secrets/server.key\n",
        ENCRYPTED_BODY,
    ),
    SecretSample(
        "curl_basic_user_password",
        f"curl -fsS -u deploy:{CURL_PASSWORD} https://ci.example.com/job/memoryhub/build -X POST\n",
        CURL_PASSWORD,
    ),
    SecretSample(
        "mysql_cli_password",
        f"$ mysql -h db.internal -u root -p{MYSQL_CLI_PASSWORD} shop < dump.sql\n",
        MYSQL_CLI_PASSWORD,
    ),
    SecretSample(
        "cli_password_flag",
        f"$ docker login registry.acme.dev --username ci --password {CLI_FLAG_PASSWORD}\n"
        "WARNING! Using --password via the CLI is insecure. Use --password-stdin.\n",
        CLI_FLAG_PASSWORD,
    ),
    SecretSample(
        "password_in_prose",
        f"The staging admin password: {PROSE_PASSWORD} (rotate it after the demo).\n",
        PROSE_PASSWORD,
    ),
    SecretSample(
        "password_for_is_prose",
        f"The password for staging is {PROSE_FOR_PASSWORD}\n",
        PROSE_FOR_PASSWORD,
    ),
    SecretSample(
        "password_is_prose",
        f"The staging admin password is {PROSE_IS_PASSWORD}; rotate it after the demo.\n",
        PROSE_IS_PASSWORD,
    ),
    SecretSample(
        "password_is_prose_zh",
        f"测试环境数据库的密码是 {PROSE_ZH_PASSWORD}，不要外传。\n",
        PROSE_ZH_PASSWORD,
    ),
    SecretSample(
        "access_key_prose_zh",
        f"线上的 access key 为{PROSE_ZH_KEY}，下周轮换。\n",
        PROSE_ZH_KEY,
    ),
    SecretSample(
        "token_colon_prose",
        f"Here's the deploy token: {PROSE_TOKEN} — it expires on Friday.\n",
        PROSE_TOKEN,
    ),
    SecretSample(
        "redis_cli_password",
        f"$ redis-cli -h cache.internal -a {REDIS_CLI_PASSWORD} ping\nPONG\n",
        REDIS_CLI_PASSWORD,
    ),
]


# --- ordinary text that must survive -------------------------------------------------------

NEGATIVES: list[NegativeSample] = [
    NegativeSample(
        "secret_words_in_prose",
        "The token is expired and the password is required again; the secret is out.\n"
        "密码是必填项，令牌已过期。API key is missing, see the docs.\n",
    ),
    NegativeSample("uuid", "Request 3f2b8c1e-9d4a-4b7e-8f21-6c0d5e9a7b13 took 42 ms (p95 118 ms)"),
    NegativeSample(
        "git_sha",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: Jane Doe <jane@example.com>\n"
        "Date:   Sun Mar 2 10:14:07 2025 +0100\n\n    Fix compaction boundary (3f2b8c1)\n",
    ),
    NegativeSample(
        "identifiers_containing_prefixes",
        "monkey_business_value = hockey_tournament_bracket + desktop_notification_settings\n"
        "turnkey_installation_mode = task_scheduler_backend_name\n",
    ),
    NegativeSample(
        "urls_without_credentials",
        "Docs: https://docs.djangoproject.com/en/6.1/ref/settings/#std-setting-SECRET_KEY and "
        "http://localhost:8000/api/v1/projects/alpha/sessions/?limit=50&offset=100",
    ),
    NegativeSample(
        "empty_password_values",
        "DB_HOST=localhost\nDB_PASSWORD=\nREDIS_PASSWORD=''\nAPI_TOKEN=\"\"\n",
    ),
    NegativeSample(
        "css_hex_colours",
        ".btn-primary { color: #1a2b3c; background-color: #ffcc00; border: 1px solid #0f0f0f; }",
    ),
    NegativeSample(
        "file_paths",
        "/home/dev/projects/memoryhub/memoryhub/core/redaction.py:120 and "
        "C:\\Users\\dev\\AppData\\Local\\Temp\\build.log and ./tests/secrets_corpus.py",
    ),
    NegativeSample(
        "version_strings",
        "Django==6.1.3 djangorestframework==3.18.3 celery[redis]==5.7.0 node v20.11.1 "
        "1.2.3-rc.1+build.5",
    ),
    NegativeSample(
        "python_auth_code",
        "def login(request: HttpRequest, username: str, password: str) -> Token:\n"
        '    password = request.POST.get("password")\n'
        "    token = Token.objects.get(user=user)\n"
        "    client = Client(api_key=api_key, timeout=30)\n"
        "    secret = settings.SECRET_KEY\n"
        "    return token\n",
    ),
    NegativeSample(
        "python_llm_client_code",
        "reply = client.chat(\n"
        "    max_tokens=openai.omit if hosted else max_tokens,\n"
        "    tokens_in=reply.tokens_in,\n"
        "    created_by_token=actor.token,\n"
        ")\n"
        'usage = {"current_tokens": tokens, "total_tokens": script.tokens_in + script.extra}\n'
        "settings.LLM_API_KEY = api_key\n"
        "def token_revoke(*, token: ApiToken, actor: Actor) -> ApiToken | None:\n"
        'print(f"  password: {password}")\n',
    ),
    NegativeSample(
        "typescript_types",
        "interface Session {\n  token: string;\n  password?: string;\n"
        "  apiKey: string | null;\n  onAuth: () => void;\n}\n",
    ),
    NegativeSample(
        "token_counts",
        '{"usage": {"input_tokens": 1532, "output_tokens": 87, '
        '"cache_read_input_tokens": 20480}, "max_tokens": 4096}\n'
        "KEEP_RECENT_TOKENS = 10_000\nsummaryInjectionTokenLimit: 5000\n",
    ),
    NegativeSample(
        "environment_references",
        'export DB_PASSWORD="${DB_PASSWORD:?missing}"\n'
        "API_KEY=$(cat /run/secrets/api_key)\nTOKEN=$GITHUB_TOKEN\n"
        "password: {{ vault_db_password }}\n",
    ),
    NegativeSample(
        "ssh_git_remotes",
        "git remote add origin git@github.com:acme/memoryhub.git\n"
        "git clone ssh://git@gitlab.com:2222/acme/web.git\n",
    ),
    NegativeSample(
        "prose_about_secrets",
        "Rotate the API key every 90 days, never commit a password to git, and keep tokens "
        "out of logs. Ping alice@example.com about the password reset flow.\n"
        "The bank's tokenizer: what search and the index agree a term is.\n",
    ),
    NegativeSample(
        "docker_digest",
        "image: postgres@sha256:4c5d7a2e9f0b1c3d5e7f9a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d",
    ),
    NegativeSample(
        "base64_png",
        "![dot](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42"
        "mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)",
    ),
    NegativeSample(
        "django_settings",
        "AUTH_PASSWORD_VALIDATORS = [\n"
        '    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},\n]\n'
        'PASSWORD_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]\n'
        'LOGIN_URL = "/accounts/login/"\n',
    ),
    NegativeSample(
        "worker_log_lines",
        "[2025-03-02 10:20:11,004: INFO/MainProcess] celery@worker-1 ready.\n"
        "[2025-03-02 10:20:41,517: WARNING/MainProcess] Retrying memory_embed[42] in 30s "
        "(attempt 2/5)\n",
    ),
    NegativeSample(
        "checksums_and_numbers",
        "Build 4242 finished in 03:14.159, exit code 0, md5 5d41402abc4b2a76b9719d911017c592",
    ),
    NegativeSample(
        "json_config_without_secrets",
        '{"name": "memoryhub", "debug": false, "allowed_hosts": ["localhost"], "timeout": 30}',
    ),
    NegativeSample(
        "short_prefixed_identifiers",
        "sk_test = None\npk = obj.pk\nkey_id = 7\ntokens = text.split()\n",
    ),
    NegativeSample(
        "dotted_names_and_files",
        "archive.tar.gz, memoryhub.core.redaction, a.b.c and e.g. i.e. v1.2.3",
    ),
    NegativeSample(
        "bearer_in_docs_and_templates",
        "See https://oauth.net/2/bearer-tokens/ for Bearer usage.\n"
        "headers = {'Authorization': f'Bearer {token}'}\n"
        "requests.post(url, auth=auth, headers=headers)\n",
    ),
    NegativeSample(
        "env_dump_working_directory",
        "PWD=/home/dev/projects/memoryhub\nOLDPWD=/home/dev\nSHELL=/bin/bash\nLANG=C.UTF-8\n",
    ),
]
