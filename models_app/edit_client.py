"""HTTP client of the edit service: one pooled session, timeouts that fit a sandbox run, the service secret, error
mapping. Every gateway call to the edit service goes through here.

edit-service 404 -> 40400, 409 -> 40900, 422 -> 40001 (its detail kept in message and data); 503 with Retry-After
(its sandbox queue is full) -> 50200 with HTTP 503 and the Retry-After passed on (SandboxBusy); anything else, an
unreachable or slow service, or a body that is not JSON -> 50200.
"""

from __future__ import annotations

import functools
import os
import time

import requests
import urllib3
from django.conf import settings

from core.errors import CONFLICT, INVALID, NOT_FOUND, ApplicationError, Upstream
from core.service_secret import HEADER as SECRET_HEADER
from core.service_secret import SecretUnavailable, ensure_secret, secret_path

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
    """Keep-alive connections to the edit service (urllib3's pool, thread-safe). trust_env is off: requests would
    otherwise read the proxy variables, the CA bundle variables and ~/.netrc from the environment and disk on every
    call; the variables are resolved once per base URL instead (_environment), and ~/.netrc never applies (the edit
    service authenticates the service secret, nothing else)."""
    session = requests.Session()
    session.trust_env = False
    adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=32, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


# One process-wide session: Django runs each ASGI request in its own thread, so a per-thread session would open a
# new connection per request. Its urllib3 pool is thread-safe; the only shared mutable state, the cookie jar, stays
# empty because the edit service sets no cookies. A forked child (a worker started by fork) gets a session of its
# own: sockets of the parent's pool must not be shared between two processes.
_SESSION = _new_session()


def _renew_session_after_fork() -> None:
    global _SESSION
    _SESSION = _new_session()
    _SECRET_CACHE.clear()


def _session() -> requests.Session:
    return _SESSION


@functools.lru_cache(maxsize=8)
def _environment(base_url: str) -> tuple[dict[str, str], bool | str]:
    """(proxies, verify) for calls to `base_url`, as requests would take them from the environment (HTTP(S)_PROXY,
    NO_PROXY, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE); resolved once per process and base URL."""
    proxies = requests.utils.get_environ_proxies(base_url)
    verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    return proxies, verify


os.register_at_fork(after_in_child=_renew_session_after_fork)


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


# (path, inode, size, mtime) of the secret file -> the headers carrying its value
_SECRET_CACHE: dict[tuple, dict[str, str]] = {}
# a file changed less than this long ago is read again on every call: the file system's clock is coarse (a few
# ms), so two writes within one tick may leave the same mtime behind (git's "racy" entries)
_SETTLED_NS = 2_000_000_000


def _secret_headers() -> dict[str, str]:
    """The service-secret header. The file is looked at on every call (one stat), so a secret replaced on disk (a
    new file linked into place, or the file rewritten) is sent at once; it is read again only when it changed or
    changed just now. Created here when the gateway is the first process to need it."""
    path = secret_path(settings.VIEWER.dataDir)
    try:
        status = os.stat(path)
    except OSError:
        status = None
    settled = status is not None and time.time_ns() - status.st_mtime_ns > _SETTLED_NS
    key = (str(path), status.st_ino, status.st_size, status.st_mtime_ns) if settled else None
    headers = _SECRET_CACHE.get(key) if key else None
    if headers is not None:
        return headers
    try:
        headers = {SECRET_HEADER: ensure_secret(settings.VIEWER.dataDir)}
    except SecretUnavailable as exc:
        raise Upstream(f"the edit service cannot be called: {exc}") from None
    if key is not None:
        _SECRET_CACHE.clear()  # one secret at a time: an old value is never sent again
        _SECRET_CACHE[key] = headers
    return headers


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
    proxies, verify = _environment(config.editServiceURL)
    try:
        response = _session().request(
            method, url, params=params, json=json, files=files, headers=headers, proxies=proxies, verify=verify,
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
    proxies, verify = _environment(config.editServiceURL)
    try:
        with _session().get(url, stream=True, headers=headers, proxies=proxies, verify=verify, timeout=(CONNECT_TIMEOUT_SECONDS, config.editServiceTimeoutSeconds)) as response:
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
