"""The shared secret between the gateway (and other direct callers on the host) and the edit service.

It lives in the shared data directory, `{dataDir}/service-secret`, readable by its owner only (mode 0600), so
anyone who may call the edit service can read it with no configuration: the gateway and the edit service run as the
same user on the same data directory, and that user can read every model there anyway. Whichever process needs it
first creates it (core.files.create_once: a private temporary file hard-linked into place, so the file appears
complete or not at all and only one value ever wins). Nothing caches it: a process reads the file each time, so a
secret replaced on disk takes effect at once.
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path

from core.files import create_once

HEADER = "X-Service-Secret"
FILE_NAME = "service-secret"
_SECRET_BYTES = 32


class SecretUnavailable(Exception):
    """The secret file can neither be read nor created (the callers fail closed: no secret, no access)."""


def secret_path(data_dir: Path | str) -> Path:
    return Path(data_dir) / FILE_NAME


def read_secret(data_dir: Path | str) -> str:
    """The secret in the data directory; SecretUnavailable when the file is missing, unreadable or empty."""
    path = secret_path(data_dir)
    try:
        value = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SecretUnavailable(f"the service secret {path} cannot be read: {exc.strerror or exc}") from None
    if not value:
        raise SecretUnavailable(f"the service secret {path} is empty")
    return value


def ensure_secret(data_dir: Path | str) -> str:
    """The secret in the data directory, created first if there is none yet."""
    path = secret_path(data_dir)
    if not path.exists():
        _create(path)
    return read_secret(data_dir)


def _create(path: Path) -> None:
    try:
        create_once(path, secrets.token_urlsafe(_SECRET_BYTES) + "\n")
    except OSError as exc:
        raise SecretUnavailable(f"the service secret {path} cannot be created: {exc.strerror or exc}") from None


def secret_matches(presented: str | None, secret: str) -> bool:
    """Constant-time comparison (a timing difference must not tell how much of a guess was right)."""
    return hmac.compare_digest((presented or "").encode(), secret.encode())
