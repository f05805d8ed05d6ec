"""Who may call the edit service, decided from the request line and headers alone, before any body byte is read.

The edit service has no users (spec): it is called by the gateway and by trusted direct callers on the host. This
module turns "trusted" into checks, in one place, applied twice alike: by the server before the body is read
(the header check that edit_service/__main__.py gives serving/http_server.py) and by `DoorMiddleware` for requests that
reach Django otherwise.

- Every route except the read-only `GET /health`, `/docs`, `/openapi.json` and the docs' static files needs the
  shared service secret (core/service_secret.py) in the `X-Service-Secret` header, loopback callers included: a
  process that can read the data directory's secret can read the models themselves, so the secret only shuts out
  those who could not (other users' processes, other hosts, web pages). The peer address and the Host header play
  no part in the decision.
- Requests made by a web browser are refused on those routes whatever they carry: a browser announces itself with
  `Origin` or a `Sec-Fetch-*` header, which the gateway, curl and scripts do not send. The docs stay readable in a
  browser tab (the open routes are not judged).
- A body is taken only in the route's format: JSON, except multipart on `POST /models/{id}/diff/upload`; a form a
  web page can post without a preflight is refused before it is read.
- A secret that can be neither read nor created means refusal (503), never an open door.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.http import JsonResponse

from core.service_secret import HEADER as SECRET_HEADER
from core.service_secret import SecretUnavailable, read_secret, secret_matches

logger = logging.getLogger(__name__)

UPLOAD_ROUTE = re.compile(r"^/models/[^/]+/diff/upload$")
OPEN_PATHS = frozenset({"/health", "/docs", "/openapi.json"})
STATIC_PREFIX = "/static/"  # the offline Swagger UI assets of /docs
BROWSER_HEADERS = ("origin", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest", "sec-fetch-user")
JSON_TYPE = "application/json"
MULTIPART_TYPE = "multipart/form-data"


@dataclass(frozen=True)
class Refusal:
    status: int
    detail: str


def is_open(method: str, path: str) -> bool:
    return method in ("GET", "HEAD") and (path in OPEN_PATHS or path.startswith(STATIC_PREFIX))


def _browser_refusal(headers: dict[str, str]) -> Refusal | None:
    sent = [name for name in BROWSER_HEADERS if name in headers]
    if not sent:
        return None
    return Refusal(403, f"requests made by a web browser are refused (it sent {', '.join(sent)}): the edit service is "
                        "for the gateway and trusted callers on its host; browsers use the gateway")


def _secret_refusal(headers: dict[str, str], data_dir: Path) -> Refusal | None:
    try:
        secret = read_secret(data_dir)
    except SecretUnavailable as exc:
        logger.error("refusing every call: %s", exc)
        return Refusal(503, "the edit service cannot read its service secret; every call is refused until it can (see its log)")
    if secret_matches(headers.get(SECRET_HEADER.lower()), secret):
        return None
    return Refusal(401, f"missing or wrong {SECRET_HEADER} header: send the contents of the file service-secret in the "
                        "edit service's data directory")


def _body_refusal(path: str, headers: dict[str, str]) -> Refusal | None:
    has_body = headers.get("content-length", "").strip() not in ("", "0") or "transfer-encoding" in headers
    if not has_body:
        return None
    media_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    expected = MULTIPART_TYPE if UPLOAD_ROUTE.match(path) else JSON_TYPE
    if media_type == expected:
        return None
    return Refusal(415, f"this route takes {expected} bodies, not {media_type or 'a body without Content-Type'}")


def refusal(method: str, path: str, headers: dict[str, str], data_dir: Path) -> Refusal | None:
    """Why the request must be refused, or None. `headers` have lowercase names; `path` is the path Django routes
    on (percent-decoded, no query string)."""
    if is_open(method, path):
        return None
    return _browser_refusal(headers) or _secret_refusal(headers, data_dir) or _body_refusal(path, headers)


class DoorMiddleware:
    """The same decision for requests that reach Django without passing the server's check (tests, other servers)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        headers = {name.lower(): value for name, value in request.headers.items()}
        refused = refusal(request.method, request.path_info, headers, settings.DATA_DIR)
        if refused is not None:
            return JsonResponse({"detail": refused.detail}, status=refused.status)
        return self.get_response(request)
