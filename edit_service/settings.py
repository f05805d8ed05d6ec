"""Settings of the edit service (no database, no authentication: reachable from the gateway host only)."""

import os
from pathlib import Path

from edit_service.engine.sandbox import SandboxLimits

DATA_DIR = Path(os.environ.get("VIEWER_DATA_DIR") or "../data").resolve()
PORT = int(os.environ.get("EDIT_SERVICE_PORT") or 8100)
HOST = os.environ.get("EDIT_SERVICE_HOST") or "127.0.0.1"
SANDBOX_LIMITS = SandboxLimits.from_environment()
UPLOAD_MAX_BYTES = int(float(os.environ.get("EDIT_UPLOAD_MAX_MB") or 200) * 1024 * 1024)

SECRET_KEY = "edit-service-has-no-sessions-or-signed-data"
DEBUG = os.environ.get("EDIT_SERVICE_DEBUG") == "1"
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
]
MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
ROOT_URLCONF = "edit_service.urls"
APPEND_SLASH = False
DATABASES = {}
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True, "OPTIONS": {}}]
STATIC_URL = "/static/"
USE_TZ = True
FILE_UPLOAD_TEMP_DIR = None
FILE_UPLOAD_MAX_MEMORY_SIZE = 0
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser", "rest_framework.parsers.MultiPartParser"],
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
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "INFO"},
}
