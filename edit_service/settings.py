"""Settings of the edit service (no database, no users: callers hold the service secret, see edit_service/door.py)."""

import os
from pathlib import Path

from core.log_format import logging_config
from edit_service.engine.sandbox import SandboxLimits

DATA_DIR = Path(os.environ.get("VIEWER_DATA_DIR") or "../data").resolve()
PORT = int(os.environ.get("EDIT_SERVICE_PORT") or 8100)
HOST = os.environ.get("EDIT_SERVICE_HOST") or "127.0.0.1"
SANDBOX_LIMITS = SandboxLimits.from_environment()
UPLOAD_MAX_BYTES = int(float(os.environ.get("EDIT_UPLOAD_MAX_MB") or 200) * 1024 * 1024)
JSON_BODY_MAX_BYTES = 20 * 1024 * 1024
LOCK_TIMEOUT_SECONDS = float(os.environ.get("EDIT_LOCK_TIMEOUT_SECONDS") or 30)

SECRET_KEY = "edit-service-has-no-sessions-or-signed-data"
DEBUG = os.environ.get("EDIT_SERVICE_DEBUG") == "1"
# Host header check against DNS rebinding: a page on another name that resolves to this address gets 400.
ALLOWED_HOSTS = list(dict.fromkeys([
    "127.0.0.1", "localhost", "[::1]",
    *([f"[{HOST}]" if ":" in HOST else HOST] if HOST not in ("0.0.0.0", "::") else []),
    *(name.strip() for name in os.environ.get("EDIT_ALLOWED_HOSTS", "").split(",") if name.strip()),
]))
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
]
MIDDLEWARE = ["edit_service.door.DoorMiddleware", "django.middleware.common.CommonMiddleware"]
ROOT_URLCONF = "edit_service.urls"
APPEND_SLASH = False
DATABASES = {}
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True, "OPTIONS": {}}]
STATIC_URL = "/static/"
USE_TZ = True
TIME_ZONE = "UTC"  # as the gateway: Django sets the process's zone from it, and access log lines are in that zone
FILE_UPLOAD_HANDLERS = ["edit_service.uploads.SizeLimitedUploadHandler"]
FILE_UPLOAD_TEMP_DIR = str(DATA_DIR / "tmp")  # the data directory's disk, not the system's /tmp
FILE_UPLOAD_MAX_MEMORY_SIZE = 0
DATA_UPLOAD_MAX_MEMORY_SIZE = JSON_BODY_MAX_BYTES

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON only; the one multipart route (diff/upload) names its parser itself
    "DEFAULT_PARSER_CLASSES": ["edit_service.parsing.JSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "edit_service.errors.detail_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Edit service",
    "DESCRIPTION": "Script-as-source editing of building models: staging, sandbox runs, versions, diffs. Errors are {detail: ...}.",
    "VERSION": "0.1.0",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "edit_service.openapi.document_error_statuses"],
}
LOGGING = logging_config()
