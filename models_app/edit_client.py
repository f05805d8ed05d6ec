"""HTTP client of the edit service: one pooled session, timeouts that fit a sandbox run, the service secret, error
mapping. Every gateway call to the edit service goes through here.

edit-service 404 -> 40400, 409 -> 40900, 422 -> 40001 (its detail kept in message and data); 503 with Retry-After
(its sandbox queue is full) -> 50200 with HTTP 503 and the Retry-After passed on (SandboxBusy); anything else, an
unreachable or slow service, or a body that is not JSON -> 50200.
"""

from __future__ import annotations

import requests
import urllib3
from django.conf import settings

from core.errors import CONFLICT, INVALID, NOT_FOUND, ApplicationError, Upstream
from core.service_secret import HEADER as SECRET_HEADER
from core.service_secret import SecretUnavailable, ensure_secret

CONNECT_TIMEOUT_SECONDS = 3
STATUS_CODES = {404: NOT_FOUND, 409: CONFLICT, 422: INVALID}


class UpstreamOutcomeUnknown(Upstream):
    """The request reached the edit service but no answer came back: it may have done the work."""


class SandboxBusy(Upstream):
    """The edit service's sandbox queue is full; the caller may retry after `retry_after` (the header's value)."""

    def __init__(self, message: str, retry_after: str, data=None):
        super().__init__(message, data=data, http_status=503)
        self.retry_after = retry_after


def _new_session() -> requests.Session:
    session = requests.Session()
    adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=32, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


# One process-wide session: Django runs each ASGI request in its own thread, so a per-thread session would open a
# new connection per request. Its urllib3 pool is thread-safe; the only shared mutable state, the cookie jar, stays
# empty because the edit service sets no cookies.
_SESSION = _new_session()


def _session() -> requests.Session:
    return _SESSION


def _detail_message(detail) -> str:
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):
        first = detail[0]
        where = ".".join(str(part) for part in first.get("loc", []) if part != "body")
        return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
    return str(detail)


def _never_connected(exc: requests.ConnectionError) -> bool:
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, urllib3.exceptions.NewConnectionError)


def _secret_headers() -> dict[str, str]:
    """Read on every call (a file of a few bytes), so a secret replaced on disk is sent at once; created here when
    the gateway is the first process to need it."""
    try:
        return {SECRET_HEADER: ensure_secret(settings.VIEWER.dataDir)}
    except SecretUnavailable as exc:
        raise Upstream(f"the edit service cannot be called: {exc}") from None


def _refusal(response: requests.Response, detail, message: str, upstream_message: str) -> ApplicationError:
    """The error for an edit-service answer other than 200: `message` for the mapped statuses, `upstream_message`
    for the rest (50200)."""
    retry_after = response.headers.get("Retry-After")
    if response.status_code == 503 and retry_after:
        return SandboxBusy(f"the edit service's sandbox is busy: retry after {retry_after} s ({message})", retry_after, data=detail)
    code = STATUS_CODES.get(response.status_code)
    if code is None:
        return Upstream(upstream_message, data=detail)
    return ApplicationError(message, code=code, data=detail)


def call(method: str, path: str, *, params=None, json=None, files=None):
    """Calls the edit service; returns its JSON payload or raises ApplicationError with the mapped envelope code."""
    config = settings.VIEWER
    url = f"{config.editServiceURL}{path}"
    headers = _secret_headers()
    try:
        response = _session().request(
            method, url, params=params, json=json, files=files, headers=headers,
            timeout=(CONNECT_TIMEOUT_SECONDS, config.editServiceTimeoutSeconds),
        )
    except requests.ConnectTimeout:
        raise Upstream(f"the edit service is unreachable at {config.editServiceURL}: connection timed out") from None
    except requests.ReadTimeout:
        raise UpstreamOutcomeUnknown(f"the edit service did not answer within {config.editServiceTimeoutSeconds:g} s") from None
    except requests.ConnectionError as exc:
        if _never_connected(exc):
            raise Upstream(f"the edit service is unreachable at {config.editServiceURL}: connection refused") from None
        raise UpstreamOutcomeUnknown(f"the edit service dropped the connection before answering: {exc}") from None
    except requests.RequestException as exc:
        raise UpstreamOutcomeUnknown(f"the edit service call failed: {type(exc).__name__}") from None
    try:
        payload = response.json()
    except ValueError:
        raise Upstream(f"the edit service answered HTTP {response.status_code} with a body that is not JSON") from None
    if response.status_code == 200:
        return payload
    detail = payload.get("detail") if isinstance(payload, dict) else payload
    message = _detail_message(detail)
    raise _refusal(response, detail, message, f"the edit service failed (HTTP {response.status_code}): {message}")


def version_ifc_download(model_id: str, version: str, target) -> None:
    """Streams a saved version's IFC (GET /models/{id}/versions/{version}/ifc; the edit service rebuilds an older
    version from its script) into the file `target`. Errors as in call(): 404 -> 40400, others -> 50200."""
    config = settings.VIEWER
    url = f"{config.editServiceURL}/models/{model_id}/versions/{version}/ifc"
    headers = _secret_headers()
    try:
        with _session().get(url, stream=True, headers=headers, timeout=(CONNECT_TIMEOUT_SECONDS, config.editServiceTimeoutSeconds)) as response:
            if response.status_code != 200:
                try:
                    detail = response.json().get("detail")
                except (ValueError, AttributeError):
                    detail = f"HTTP {response.status_code}"
                message = f"the edit service cannot give IFC {version}: {_detail_message(detail)}"
                raise _refusal(response, detail, message, message)
            with open(target, "wb") as handle:
                for chunk in response.iter_content(chunk_size=1024 * 1024):
                    handle.write(chunk)
    except requests.RequestException as exc:
        raise Upstream(f"the edit service did not deliver IFC {version}: {type(exc).__name__}: {exc}") from None
