"""HTTP client of the edit service: one pooled session, timeouts that fit a sandbox run, error mapping.

edit-service 404 -> 40400, 409 -> 40900, 422 -> 40001 (its detail kept in message and data); anything else,
an unreachable or slow service, or a body that is not JSON -> 50200.
"""

from __future__ import annotations

import requests
import urllib3
from django.conf import settings

from viewer_gateway.envelope import INVALID, CONFLICT, NOT_FOUND, ApiError, UpstreamError

CONNECT_TIMEOUT_SECONDS = 3
STATUS_CODES = {404: NOT_FOUND, 409: CONFLICT, 422: INVALID}


class UpstreamOutcomeUnknown(UpstreamError):
    """The request reached the edit service but no answer came back: it may have done the work."""


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


def call(method: str, path: str, *, params=None, json=None, files=None):
    """Calls the edit service; returns its JSON payload or raises ApiError with the mapped envelope code."""
    config = settings.VIEWER
    url = f"{config.editServiceURL}{path}"
    try:
        response = _session().request(
            method, url, params=params, json=json, files=files,
            timeout=(CONNECT_TIMEOUT_SECONDS, config.editServiceTimeoutSeconds),
        )
    except requests.ConnectTimeout:
        raise UpstreamError(f"the edit service is unreachable at {config.editServiceURL}: connection timed out") from None
    except requests.ReadTimeout:
        raise UpstreamOutcomeUnknown(f"the edit service did not answer within {config.editServiceTimeoutSeconds:g} s") from None
    except requests.ConnectionError as exc:
        if _never_connected(exc):
            raise UpstreamError(f"the edit service is unreachable at {config.editServiceURL}: connection refused") from None
        raise UpstreamOutcomeUnknown(f"the edit service dropped the connection before answering: {exc}") from None
    except requests.RequestException as exc:
        raise UpstreamOutcomeUnknown(f"the edit service call failed: {type(exc).__name__}") from None
    try:
        payload = response.json()
    except ValueError:
        raise UpstreamError(f"the edit service answered HTTP {response.status_code} with a body that is not JSON") from None
    if response.status_code == 200:
        return payload
    detail = payload.get("detail") if isinstance(payload, dict) else payload
    code = STATUS_CODES.get(response.status_code)
    if code is None:
        raise UpstreamError(f"the edit service failed (HTTP {response.status_code}): {_detail_message(detail)}", data=detail)
    raise ApiError(_detail_message(detail), code=code, data=detail)


def version_ifc_download(model_id: str, version: str, target) -> None:
    """Streams a saved version's IFC (GET /models/{id}/versions/{version}/ifc; the edit service rebuilds an older
    version from its script) into the file `target`. Errors as in call(): 404 -> 40400, others -> 50200."""
    config = settings.VIEWER
    url = f"{config.editServiceURL}/models/{model_id}/versions/{version}/ifc"
    try:
        with _session().get(url, stream=True, timeout=(CONNECT_TIMEOUT_SECONDS, config.editServiceTimeoutSeconds)) as response:
            if response.status_code != 200:
                try:
                    detail = response.json().get("detail")
                except (ValueError, AttributeError):
                    detail = f"HTTP {response.status_code}"
                code = STATUS_CODES.get(response.status_code, UpstreamError.code)
                raise ApiError(f"the edit service cannot give IFC {version}: {_detail_message(detail)}", code=code, data=detail)
            with open(target, "wb") as handle:
                for chunk in response.iter_content(chunk_size=1024 * 1024):
                    handle.write(chunk)
    except requests.RequestException as exc:
        raise UpstreamError(f"the edit service did not deliver IFC {version}: {type(exc).__name__}: {exc}") from None
