"""Django settings of the gateway, derived from server_config.json (see viewer_gateway/config.py)."""

import os
import secrets
from datetime import timedelta
from pathlib import Path

from core.files import create_once
from core.log_format import logging_config
from viewer_gateway.config import load_config_or_defaults
from viewer_gateway.database import database_settings

BASE_DIR = Path(__file__).resolve().parent.parent
# A malformed configuration is reported by the system check gateway.E001 (viewer_gateway/checks.py), which stops every
# command that runs the checks; meanwhile the defaults stand in, and nothing is written and no database opened.
VIEWER, VIEWER_CONFIG_ERROR = load_config_or_defaults()
DATA_DIR = VIEWER.dataDir
MODELS_DIR = DATA_DIR / "models"
UPLOAD_TMP_DIR = DATA_DIR / "tmp"
if VIEWER_CONFIG_ERROR is None:
    for _folder in (MODELS_DIR, UPLOAD_TMP_DIR, DATA_DIR / "static"):
        _folder.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    """A per-data-directory secret, created once, so admin sessions survive restarts. Processes starting together
    race to create it: the first one wins (core.files.create_once)."""
    path = DATA_DIR / "secret_key"
    if not path.exists():
        create_once(path, secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or (_secret_key() if VIEWER_CONFIG_ERROR is None else secrets.token_urlsafe(50))
DEBUG = os.environ.get("VIEWER_DEBUG") == "1"
ALLOWED_HOSTS = VIEWER.allowed_host_names()

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "corsheaders",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_tasks",
    "django_tasks_db",
    "channels",
    "axes",
    "accounts_app",
    "models_app",
    "issues_app",
    "chat_app",
    "plans_app",
    "checks_app",
    "coordination_app",
    "oauth2_provider",
    "bcfapi_app",
    "viewer_gateway",  # label "gateway": the configuration checks, run_gateway
]

MIDDLEWARE = [
    "viewer_gateway.compression.ApiGZipMiddleware",
    "corsheaders.middleware.CorsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Locks out admin logins after repeated failures (by user name and client address; see AXES_* below).
    "axes.middleware.AxesMiddleware",
    # Innermost and sync-only on purpose: under ASGI it makes Django run the whole middleware chain in one thread
    # instead of hopping threads around every async-capable middleware (several ms per request).
    "viewer_gateway.auth.EdgeCheckMiddleware",
    # Who the caller is and whether their role allows this route on this model or project (docs/security/roles.md).
    "viewer_gateway.access.AccessMiddleware",
    # Sync-only too; after the token check, so a client without the token never gets its body scanned.
    "viewer_gateway.json_body.JSONDepthMiddleware",
    # Content-Security-Policy of the HTML pages (the web client keeps the token in sessionStorage).
    "viewer_gateway.security_headers.ContentSecurityPolicyMiddleware",
]

AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend", "accounts_app.oidc.OidcBackend"]
# Admin login throttling: 5 failed attempts for one user name from one client address lock that pair for 15
# minutes. The address is the TCP peer, or what a proxy named in trustedProxies forwards (never a client's own
# X-Forwarded-For), so a client cannot dodge the count by inventing addresses.
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_ONLY_ADMIN_SITE = False  # every sign-in path: the admin, the web client's page, token creation with a password
AXES_VERBOSE = False
# a locked-out API client gets the envelope (42900); pages keep axes' own answer, with 429
AXES_LOCKOUT_CALLABLE = "accounts_app.views.lockout_response"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": f"django.contrib.auth.password_validation.{name}"}
    for name in ("UserAttributeSimilarityValidator", "MinimumLengthValidator", "CommonPasswordValidator", "NumericPasswordValidator")
]

ROOT_URLCONF = "viewer_gateway.urls"
APPEND_SLASH = False
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
            ],
        },
    },
]
ASGI_APPLICATION = "viewer_gateway.asgi.application"
WSGI_APPLICATION = "viewer_gateway.wsgi.application"

DATABASES = {"default": database_settings(VIEWER.pgDSN, DATA_DIR)} if VIEWER_CONFIG_ERROR is None else {}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        "QUEUES": ["conversions", "checks", "clashes"],
    }
}

# channels_redis blocks in BZPOPMIN for up to 5 s per receive; redis-py's default read timeout is also 5 s, so an
# idle stream's read would time out and end the stream. Reads get room above the blocking time.
REDIS_READ_TIMEOUT_SECONDS = 30
CHANNEL_LAYERS = (
    {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                 "CONFIG": {"hosts": [{"address": VIEWER.redisURL, "socket_timeout": REDIS_READ_TIMEOUT_SECONDS}]}}}
    if VIEWER.redisURL
    else {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
)

# The bearer-token throttle counts failures per client address here: in Redis when it is configured, so that every
# gateway process sees the same counts; in the process's memory otherwise (one gateway process).
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": VIEWER.redisURL}
    if VIEWER.redisURL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

# seconds between heartbeat comments on an idle event stream
CHAT_HEARTBEAT_SECONDS = float(os.environ.get("VIEWER_SSE_HEARTBEAT_SECONDS") or 15)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"
# the web client, built by `make run` / `make test` from frontend/ (npm ci + esbuild): a stable entry app.js and
# style.css (revalidated on every load: max-age 0 with ETag / Last-Modified), the code in content-hashed chunks
# under viewer/chunks/ (cached for good: immutable), each file also pre-compressed (.gz, .br) by the build, which
# whitenoise serves to clients that accept it.
STATICFILES_DIRS = [("viewer", BASE_DIR / "frontend" / "dist")]
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = False
WHITENOISE_MAX_AGE = 0
WHITENOISE_IMMUTABLE_FILE_TEST = r"^/static/viewer/chunks/[^/]+-[A-Z0-9]{8}\.(js|css)(\.map)?$"

# Uploads stream into the data directory (same filesystem as the models, so publishing is a rename).
FILE_UPLOAD_HANDLERS = ["api.uploads.SizeLimitedUploadHandler"]
FILE_UPLOAD_TEMP_DIR = str(UPLOAD_TMP_DIR) if VIEWER_CONFIG_ERROR is None else None
FILE_UPLOAD_MAX_MEMORY_SIZE = 0
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

CORS_ALLOWED_ORIGINS = list(VIEWER.corsOrigins)
from corsheaders.defaults import default_headers  # noqa: E402

CORS_ALLOW_HEADERS = (*default_headers, "last-event-id")
CORS_EXPOSE_HEADERS = ["Content-Range", "Accept-Ranges", "Content-Length", "ETag", "Content-Disposition", "Link", "X-Total-Count", "WWW-Authenticate"]

# OAuth2 authorization server of the BCF API (django-oauth-toolkit; docs/api/bcf.md, docs/decisions/0010): the
# authorization-code grant only, refresh tokens rotated, PKCE required from public clients (a confidential one
# authenticates with its secret, as IfcOpenShell's bcf-client does); tokens are `bmo_` secrets kept only as SHA-256.
LOGIN_URL = "/sign-in"  # DOT's authorize page sends a signed-out browser here (?next= back to the consent page)


def _pkce_required(client_id: str) -> bool:
    """accounts_app.oauth.pkce_required, imported when first asked (DOT takes this setting as a callable, and the
    module cannot be imported while settings load)."""
    from accounts_app.oauth import pkce_required

    return pkce_required(client_id)


OAUTH2_PROVIDER = {
    "ACCESS_TOKEN_GENERATOR": "accounts_app.oauth.new_token",
    "REFRESH_TOKEN_GENERATOR": "accounts_app.oauth.new_token",
    "PKCE_REQUIRED": _pkce_required,
    "SCOPES": {"read": "Read the projects, topics, comments and viewpoints you may see", "write": "Create, change and delete topics, comments and viewpoints where your role allows"},
    "DEFAULT_SCOPES": ["read", "write"],
    "REQUEST_APPROVAL_PROMPT": "auto",  # consent once per client; a later sign-in reuses the approval
    "ACCESS_TOKEN_EXPIRE_SECONDS": 3600,
    "REFRESH_TOKEN_EXPIRE_SECONDS": 30 * 24 * 3600,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
}

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["api.envelope.EnvelopeJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "rest_framework.parsers.JSONParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_AUTHENTICATION_CLASSES": ["viewer_gateway.auth.BearerTokenScheme"],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "api.envelope.envelope_exception_handler",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "api.envelope.JSONOnlyNegotiation",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Building-model review gateway",
    "DESCRIPTION": "Gateway REST API. Every JSON response is wrapped in the envelope {code, message, data}.",
    "VERSION": "0.2.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Raw JS: the page asks for the token once (when the schema answers 401) and sends it with every request.
    "SWAGGER_UI_SETTINGS": """{
  requestInterceptor: (request) => {
    const token = sessionStorage.getItem("viewerApiToken");
    if (token) request.headers["Authorization"] = "Bearer " + token;
    return request;
  },
  responseInterceptor: (response) => {
    if (response.status === 401 && response.url.endsWith("/openapi.json")) {
      const token = window.prompt("This gateway needs its API token (apiToken):");
      if (token) { sessionStorage.setItem("viewerApiToken", token); window.location.reload(); }
    }
    return response;
  },
}""",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "ModelStatusEnum": "models_app.models.IfcModel.Status",
        "IssueStatusEnum": "issues_app.models.Issue.Status",
        "CheckStatusEnum": "checks_app.models.Check.Status",
        "TrashItemKindEnum": "models_app.models.Deletion.Kind",
        "ProjectKindEnum": "models_app.models.Project.Kind",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "chat_app.openapi.add_event_stream",
        # last: it documents the envelope and the error statuses of every operation, the ones added above too
        "viewer_gateway.openapi.wrap_responses_in_envelope",
    ],
}

# single sign-on (mozilla-django-oidc): the fixed settings; client and endpoints come from the configuration per request
from viewer_gateway.oidc_settings import *  # noqa: E402,F403

LOGGING = logging_config({"django.request": {"level": "ERROR"}})
