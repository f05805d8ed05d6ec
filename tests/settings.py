"""Test settings: the gateway's real settings on a throw-away data directory and configuration file."""

import json
import os
import tempfile
from pathlib import Path

_data_dir = Path(tempfile.mkdtemp(prefix="viewer-test-"))
_config = _data_dir / "server_config.json"
# the shipped converter; no token throttle unless a test sets one (tests send many wrong tokens on purpose)
_config.write_text(json.dumps({"dataDir": str(_data_dir), "tokenFailureLimit": 1_000_000}))
os.environ["VIEWER_CONFIG"] = str(_config)
os.environ.pop("VIEWER_DATA_DIR", None)
os.environ.pop("VIEWER_API_TOKEN", None)

from viewer_gateway.settings import *  # noqa: E402,F403

# Django's own advice for test runs: a cheap hasher first (checks of stored passwords, OAuth2 client secrets and the
# hashes tests make). PBKDF2 stays listed, so a hash made with it still verifies; the deployed settings are untouched.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher", "django.contrib.auth.hashers.PBKDF2PasswordHasher"]

# the same WhiteNoise, its static-file table read once per test process (tests/static_files.py)
MIDDLEWARE = [  # noqa: F405
    "tests.static_files.WhiteNoiseMiddlewareFindingOnce" if entry == "whitenoise.middleware.WhiteNoiseMiddleware" else entry
    for entry in MIDDLEWARE  # noqa: F405
]
assert "tests.static_files.WhiteNoiseMiddlewareFindingOnce" in MIDDLEWARE

if DATABASES.get("default", {}).get("ENGINE") == "django.db.backends.postgresql":  # noqa: F405
    DATABASES["default"]["ENGINE"] = "tests.pg_backend"  # noqa: F405 - Django's, with a faster flush between tests
