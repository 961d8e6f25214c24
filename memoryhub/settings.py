"""MemoryHub settings: one file, every value from the environment (see .env.example).

Empty DATABASE_URL and broker URL select the embedded default: a SQLite file and kombu's
filesystem transport under var/, so `make run` needs no server yet still runs a real worker.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from memoryhub.core.env import env_bool, env_choice, env_int, env_list, env_secret, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("MEMORYHUB_VAR_DIR") or BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    key = env_secret("SECRET_KEY")
    if key:
        return key
    # Embedded default: generate once and keep it, so token hashes and sessions survive restarts.
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# Behind a TLS-terminating proxy, set these (see .env.example); off by default for `make run`.
if env_bool("BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # probes speak plain HTTP inside the network
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Django's defaults, stated because the deploy check and tests/core/test_security.py rely on them.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SITE_URL = env_str("SITE_URL", "http://127.0.0.1:8000").rstrip("/")
# A CSRF failure under /api/ answers in the JSON error envelope, elsewhere Django's page.
CSRF_FAILURE_VIEW = "memoryhub.core.api_views.csrf_failure"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",  # sign-in brute-force lockout (see LOGIN_FAILURE_LIMIT below)
    "memoryhub.core",
    "accounts",
    "projects",
    "memoryhub.memories",
    "memoryhub.embeddings",
    "memoryhub.llm",
    "memoryhub.sessions",
    "memoryhub.recall",
    "memoryhub.pipeline",
    "memoryhub.backups",
    "memoryhub.web",
    "memoryhub.integrations.mcp",
    "memoryhub.integrations.hindsight",
    "memoryhub.interchange",
]

MIDDLEWARE = [
    "memoryhub.core.after_response.AfterResponseMiddleware",
    "memoryhub.core.middleware.NulCharacterMiddleware",
    "memoryhub.core.middleware.ApiBodySizeLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "memoryhub.web.middleware.HtmxPageMiddleware",
    "memoryhub.core.middleware.ApiExceptionMiddleware",
    "axes.middleware.AxesMiddleware",  # answers a locked-out sign-in with the lockout page
]

ROOT_URLCONF = "memoryhub.urls"
WSGI_APPLICATION = "memoryhub.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
                "django.template.context_processors.csp",
                "memoryhub.web.context_processors.web",
            ],
        },
    },
]

# Every page: scripts and styles from our own origin only, no inline code (the dashboard renders
# untrusted agent text; htmx runs with allowEval off). The API docs relax styles (urls.py).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    try:
        _db = dj_database_url.parse(
            DATABASE_URL, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0)
        )
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is malformed: {exc}") from exc
    if _db["ENGINE"] not in {
        "django.db.backends.postgresql",
        "django.db.backends.sqlite3",
    }:
        raise ImproperlyConfigured("DATABASE_URL must be postgres://… or sqlite:///…")
    if _db["ENGINE"] == "django.db.backends.postgresql":
        # Fail fast while the server is down or restarting (requests answer 503), and check a
        # reused connection before a request so a restart heals without restarting us (our
        # backend skips the check for a connection that served a request within a second).
        _db["ENGINE"] = "memoryhub.core.postgresql"
        _db.setdefault("OPTIONS", {})["connect_timeout"] = env_int(
            "DATABASE_CONNECT_TIMEOUT", 5, minimum=1
        )
        _db["CONN_HEALTH_CHECKS"] = True
        # Parameters bound by the server, and each statement prepared from its fifth use: every
        # request runs the same few statements, and skipping PostgreSQL's parse and plan (and
        # psycopg's quoting in Python) took a third off an injection's time. Off for a pooler
        # that cannot carry prepared statements (PgBouncer before 1.21 in transaction mode).
        if env_bool("DATABASE_PREPARED_STATEMENTS", True):
            _db["OPTIONS"].update(server_side_binding=True, prepare_threshold=5)
else:
    _db = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(VAR_DIR / "memoryhub.sqlite3")}
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server and the worker read while the other writes; IMMEDIATE avoids
    # "database is locked" upgrades from read to write transactions.
    _db["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file (not :memory:) so a worker process started by the tests sees the same database.
    _db["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
DATABASES = {"default": _db}
# Threads per web process serving Django behind the ASGI server (memoryhub/asgi.py); each
# keeps its own database connection.
WEB_THREADS = env_int("WEB_THREADS", 8, minimum=1)
# Per process: search's bank statistics and document frequencies (60 s). One entry per query
# term, so far more than Django's default 300.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "OPTIONS": {"MAX_ENTRIES": 50_000},
    },
    # API rate-limit counters: shared by every process through Redis when there is one.
    "throttle": (
        {
            "BACKEND": "memoryhub.core.cache.RedisCache",  # one client per pool, not per call
            "LOCATION": env_str("REDIS_URL"),
            # Short: while Redis is down, requests skip the limit instead of waiting on it.
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
        if env_str("REDIS_URL")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"}
    ),
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Brute-force protection of the sign-in form (and the admin's) with django-axes: after
# LOGIN_FAILURE_LIMIT failures for one username from one address, sign-ins for that pair are
# refused (429) for LOGIN_LOCKOUT_MINUTES; a success resets the count. Agent tokens never pass
# through authenticate(), so the API is unaffected. 0 disables the lockout.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=0)
AXES_ENABLED = LOGIN_FAILURE_LIMIT > 0
AXES_FAILURE_LIMIT = max(LOGIN_FAILURE_LIMIT, 1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "web/auth/login.html"  # shows the lockout message instead of the form
AXES_DISABLE_ACCESS_LOG = True  # failures are kept; successful sign-ins are not logged twice
# No INFO lines of its own: they reached stderr of every manage.py command (mcp_stdio speaks
# the protocol on stdout, and its tests read stderr); lockouts still answer 429.
AXES_VERBOSE = False
LOGIN_URL = "web:login"
LOGIN_REDIRECT_URL = "web:home"
LOGOUT_REDIRECT_URL = "web:home"

LANGUAGE_CODE = "en"
# The dashboard speaks English and Simplified Chinese, from Accept-Language or the header switch.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns on every start when it is missing
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# --- API --------------------------------------------------------------------------------------
# Requests under /api/ with a larger body get 413 before any parsing happens.
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 16 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES
MEMORY_MAX_CONTENT_CHARS = env_int("MEMORY_MAX_CONTENT_CHARS", 20_000, minimum=100)
API_PAGE_SIZE = env_int("API_PAGE_SIZE", 50, minimum=1)
# Session transcripts: each over-limit request gets 413 naming the limit.
SESSION_RECORD_MAX_BYTES = env_int("SESSION_RECORD_MAX_BYTES", 1024 * 1024, minimum=1024)
SESSION_APPEND_MAX_RECORDS = env_int("SESSION_APPEND_MAX_RECORDS", 1000, minimum=1)
SESSION_IMPORT_MAX_BYTES = env_int("SESSION_IMPORT_MAX_BYTES", 256 * 1024 * 1024, minimum=1024)
# Imports up to this size run in the request (201); larger ones are staged in PostgreSQL and
# imported by the worker (202 + a job to poll), so no request nears the server's timeout.
SESSION_IMPORT_SYNC_MAX_BYTES = env_int("SESSION_IMPORT_SYNC_MAX_BYTES", 8 * 1024 * 1024, minimum=0)
API_MAX_PAGE_SIZE = env_int("API_MAX_PAGE_SIZE", 500, minimum=1)


def _rate(name: str, default: str) -> str | None:
    """ "600/min"-style API rate limit (accounts/throttling.py); "off" disables it."""
    value = env_str(name, default).strip().lower()
    if value in {"off", "0", "none"}:
        return None
    count, _, period = value.partition("/")
    if not count.isdigit() or int(count) < 1 or period[:1] not in {"s", "m", "h", "d"}:
        raise ImproperlyConfigured(f"{name} must look like 600/min or be off, got {value!r}")
    return value


API_TOKEN_RATE_LIMIT = _rate("API_TOKEN_RATE_LIMIT", "1200/min")  # per agent token
API_USER_RATE_LIMIT = _rate("API_USER_RATE_LIMIT", "6000/min")  # per person, all tokens

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.authentication.IsAuthenticatedWithinTokenLimits"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memoryhub.core.parsers.JsonParser"],
    # `format` is each endpoint's own parameter (import/?format=mewcode, injection/?format=text),
    # never DRF's renderer override: every API answer is JSON.
    "URL_FORMAT_OVERRIDE": None,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "memoryhub.core.api_errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "accounts.throttling.TokenRateThrottle",
        "accounts.throttling.UserRateThrottle",
    ],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "MemoryHub API",
    "DESCRIPTION": "Team memory server for coding agents.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/v[0-9]+",
    # Swagger UI assets ship in a package, so the docs work without internet access.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "PREPROCESSING_HOOKS": ["memoryhub.core.openapi.only_api"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "memoryhub.core.openapi.add_error_responses",
    ],
}

# --- Celery -----------------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or env_str("REDIS_URL")
if not CELERY_BROKER_URL:
    # Embedded default: kombu's filesystem transport, a real broker with no server.
    _broker_dir = VAR_DIR / "broker"
    (_broker_dir / "queue").mkdir(parents=True, exist_ok=True)
    (_broker_dir / "processed").mkdir(parents=True, exist_ok=True)
    (_broker_dir / "control").mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
elif urlsplit(CELERY_BROKER_URL).scheme not in {"redis", "rediss", "memory"}:
    raise ImproperlyConfigured("CELERY_BROKER_URL / REDIS_URL must be redis://… or rediss://…")
else:
    # A task not acked within this time is redelivered; longer than any task's time limit.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
# One name per deployment; the tests give each worker they start a queue of its own.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 15 * 60, minimum=10)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 14 * 60, minimum=5)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"
WORKER_HEARTBEAT_SECONDS = env_int("WORKER_HEARTBEAT_SECONDS", 30, minimum=5)
PIPELINE_SCAN_SECONDS = env_int("PIPELINE_SCAN_SECONDS", 60, minimum=5)
# Beat sleeps until its next task is due, and a shutdown waits for it to wake: wake every
# second so the worker (beat embedded, as `make run` starts it) stops promptly on SIGTERM.
CELERY_BEAT_MAX_LOOP_INTERVAL = 1
CELERY_BEAT_SCHEDULE = {
    # Lets /healthz report whether a worker is consuming, not just whether the broker is up.
    "worker-heartbeat": {
        "task": "memoryhub.core.tasks.worker_heartbeat",
        "schedule": float(WORKER_HEARTBEAT_SECONDS),
    },
    # Due extraction and consolidation (an ended session is picked up at the next scan).
    "pipeline-scan": {
        "task": "memoryhub.pipeline.tasks.pipeline_scan",
        "schedule": float(PIPELINE_SCAN_SECONDS),
    },
}

# --- LLM --------------------------------------------------------------------------------------
# The provider layer in memoryhub/llm/. "offline" answers deterministically without a network
# and is the default; "openai" speaks Chat Completions to any compatible base URL (OpenAI,
# DeepSeek, Ollama, vLLM, llama.cpp), "anthropic" the Messages API. Projects may override
# provider, base_url, model, smol_model, timeout_seconds and daily_token_budget in
# project.settings["llm"]; the API key is global only (memoryhub/llm/config.py says why).
LLM_PROVIDER = env_choice("LLM_PROVIDER", "offline", {"offline", "openai", "anthropic"})
LLM_BASE_URL = env_str("LLM_BASE_URL").rstrip("/")  # empty: the SDK's default (hosted) endpoint
LLM_API_KEY = env_secret("LLM_API_KEY")
LLM_MODEL = env_str("LLM_MODEL")  # the model of role "default"
LLM_SMOL_MODEL = env_str("LLM_SMOL_MODEL")  # role "smol"; empty falls back to LLM_MODEL
LLM_TIMEOUT_SECONDS = env_int("LLM_TIMEOUT_SECONDS", 60, minimum=1)  # per attempt
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 2, minimum=0)  # the SDK's own backoff on 429/5xx
LLM_DAILY_TOKEN_BUDGET = env_int("LLM_DAILY_TOKEN_BUDGET", 0, minimum=0)  # per project; 0 = none
# Search keeps each project's postings in memory per process (memoryhub.recall.engine); beyond
# this many postings in all, the least recently used banks are dropped (about 8 bytes each).
RECALL_INDEX_MAX_POSTINGS = env_int("RECALL_INDEX_MAX_POSTINGS", 6_000_000, minimum=0)
# Base URLs a project may point its own settings at (besides LLM_BASE_URL). Empty: none, so a
# project maintainer cannot make the server send prompts to a host the operator did not choose.
LLM_ALLOWED_BASE_URLS = [url.rstrip("/") for url in env_list("LLM_ALLOWED_BASE_URLS", [])]
for _url in [LLM_BASE_URL, *LLM_ALLOWED_BASE_URLS]:
    if _url and (urlsplit(_url).scheme not in {"http", "https"} or not urlsplit(_url).netloc):
        raise ImproperlyConfigured(
            f"LLM_BASE_URL and LLM_ALLOWED_BASE_URLS take http(s)://host… URLs, got {_url!r}"
        )
if LLM_PROVIDER != "offline" and not LLM_MODEL:
    raise ImproperlyConfigured(f"LLM_MODEL is required when LLM_PROVIDER is {LLM_PROVIDER!r}")
if LLM_PROVIDER != "offline" and not LLM_BASE_URL and not LLM_API_KEY:
    raise ImproperlyConfigured(
        f"LLM_API_KEY (or LLM_API_KEY_FILE) is required for {LLM_PROVIDER!r}'s hosted API; "
        "set LLM_BASE_URL for a local server that needs no key"
    )

# --- Embeddings (the opt-in re-scorer of search, memoryhub/embeddings/) ----------------------
# "local": all-MiniLM-L6-v2 in numpy (`make install-embeddings`); "openai": an OpenAI-compatible
# /embeddings endpoint at LLM_BASE_URL with LLM_API_KEY (the LLM's destination and key rules),
# model EMBEDDINGS_MODEL. The worker embeds written memories; search re-scores with them.
EMBEDDINGS_PROVIDER = env_choice("EMBEDDINGS_PROVIDER", "none", {"none", "local", "openai"})
EMBEDDINGS_MODEL = env_str("EMBEDDINGS_MODEL")
if EMBEDDINGS_PROVIDER == "openai" and (LLM_PROVIDER != "openai" or not EMBEDDINGS_MODEL):
    raise ImproperlyConfigured(
        "EMBEDDINGS_PROVIDER=openai uses the LLM's endpoint and key: it needs LLM_PROVIDER=openai "
        "and EMBEDDINGS_MODEL (e.g. text-embedding-3-small, nomic-embed-text)"
    )
if EMBEDDINGS_PROVIDER == "local" and not all(
    find_spec(name) for name in ("numpy", "tokenizers", "safetensors", "all_minilm_l6_v2")
):
    raise ImproperlyConfigured(
        "EMBEDDINGS_PROVIDER=local needs the model and numpy: run `make install-embeddings`"
    )

LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", {"DEBUG", "INFO", "WARNING", "ERROR"})
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "filters": {"client_errors": {"()": "memoryhub.core.log_filters.ClientErrorsWithoutTraceback"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["client_errors"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}
