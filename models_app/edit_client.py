"""HTTP client of the edit service: kept-alive pooled connections (urllib3), timeouts that fit a sandbox run, the
service secret, error mapping. Every gateway call to the edit service goes through here.

edit-service 404 -> 40400, 409 -> 40900, 422 -> 40001 (its detail kept in message and data); 503 with Retry-After
(its sandbox queue is full) -> 50200 with HTTP 503 and the Retry-After passed on (SandboxBusy); anything else, an
unreachable or slow service, or a body that is not JSON -> 50200.
"""

from __future__ import annotations

import json as json_module
import os
import time
from urllib.parse import urlencode

import certifi
import requests.utils
import urllib3
from django.conf import settings

from core.errors import CONFLICT, INVALID, NOT_FOUND, ApplicationError, Upstream
from core.service_secret import HEADER as SECRET_HEADER
from core.service_secret import SecretUnavailable, ensure_secret, secret_path

CONNECT_TIMEOUT_SECONDS = 3
STATUS_CODES = {404: NOT_FOUND, 409: CONFLICT, 422: INVALID}
JSON_HEADERS = {"Content-Type": "application/json"}


class UpstreamOutcomeUnknown(Upstream):
    """The request reached the edit service but no answer came back: it may have done the work."""


class SandboxBusy(Upstream):
    """The edit service's sandbox queue is full; the caller may retry after `retry_after` (the header's value)."""

    def __init__(self, message: str, retry_after: str, data=None):
        super().__init__(message, data=data, http_status=503)
        self.retry_after = retry_after


# Keep-alive connections to the edit service: urllib3's pools (thread-safe), one manager per base URL and process,
# used directly (requests' session added 0.3-0.45 ms per call on top of them). Django runs each request on a thread
# of its own, so a per-thread pool would open a new connection per request. A forked child (a worker started by
# fork) gets pools of its own: sockets of the parent's pool must not be shared between two processes.
_POOLS: dict[str, urllib3.PoolManager] = {}


def _renew_pools_after_fork() -> None:
    global _POOLS
    _POOLS = {}
    _SECRET_CACHE.clear()


def _pools() -> dict[str, urllib3.PoolManager]:
    """This process's pools (a forked child's are its own)."""
    return _POOLS


def _pool(base_url: str) -> urllib3.PoolManager:
    pools = _pools()
    manager = pools.get(base_url)
    if manager is None:  # two threads may both make one; the second simply replaces the first
        manager = pools[base_url] = _new_manager(base_url)
    return manager


def _new_manager(base_url: str) -> urllib3.PoolManager:
    """No retries and no redirects, as before with requests (max_retries=0): a call whose outcome is unknown is
    reported, never repeated. The proxy and CA bundle are those requests took from the environment (HTTP(S)_PROXY,
    NO_PROXY, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, else certifi's); ~/.netrc never applies (the edit service
    authenticates the service secret, nothing else)."""
    options = {"num_pools": 4, "maxsize": 32, "retries": False,
               "ca_certs": os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or certifi.where()}
    proxies = requests.utils.get_environ_proxies(base_url)
    proxy = proxies.get(base_url.partition(":")[0]) or proxies.get("all")
    return urllib3.ProxyManager(proxy, **options) if proxy else urllib3.PoolManager(**options)


os.register_at_fork(after_in_child=_renew_pools_after_fork)


def _detail_message(detail) -> str:
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):
        first = detail[0]
        where = ".".join(str(part) for part in first.get("loc", []) if part != "body")
        return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
    return str(detail)


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


def _refusal(response: urllib3.BaseHTTPResponse, detail, message: str, upstream_message: str) -> ApplicationError:
    """The error for an edit-service answer other than 200: `message` for the mapped statuses, `upstream_message`
    for the rest (50200)."""
    retry_after = response.headers.get("Retry-After")
    if response.status == 503 and retry_after:
        return SandboxBusy(f"the edit service's sandbox is busy: retry after {retry_after} s ({message})", retry_after, data=detail)
    code = STATUS_CODES.get(response.status)
    if code is None:
        return Upstream(upstream_message, data=detail)
    return ApplicationError(message, code=code, data=detail)


def _request(method: str, path: str, *, params=None, json=None, preload_content=True) -> urllib3.BaseHTTPResponse:
    """One request to the edit service, its failures mapped: never connected -> Upstream, connected but no answer
    -> UpstreamOutcomeUnknown."""
    config = settings.VIEWER
    url = f"{config.editServiceURL}{path}"
    if params:
        url = f"{url}?{urlencode(params, doseq=True)}"
    headers = _secret_headers()
    body = None
    if json is not None:
        body, headers = json_module.dumps(json).encode(), {**headers, **JSON_HEADERS}
    try:
        return _pool(config.editServiceURL).request(
            method, url, body=body, headers=headers, redirect=False, preload_content=preload_content,
            timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=config.editServiceTimeoutSeconds),
        )
    except urllib3.exceptions.NewConnectionError:
        raise Upstream(f"the edit service is unreachable at {config.editServiceURL}: connection refused") from None
    except urllib3.exceptions.ConnectTimeoutError:
        raise Upstream(f"the edit service is unreachable at {config.editServiceURL}: connection timed out") from None
    except urllib3.exceptions.ReadTimeoutError:
        raise UpstreamOutcomeUnknown(f"the edit service did not answer within {config.editServiceTimeoutSeconds:g} s") from None
    except urllib3.exceptions.ProtocolError as exc:
        raise UpstreamOutcomeUnknown(f"the edit service dropped the connection before answering: {exc}") from None
    except urllib3.exceptions.HTTPError as exc:
        raise UpstreamOutcomeUnknown(f"the edit service call failed: {type(exc).__name__}") from None


def call(method: str, path: str, *, params=None, json=None):
    """Calls the edit service; returns its JSON payload or raises ApplicationError with the mapped envelope code."""
    response = _request(method, path, params=params, json=json)
    try:
        payload = response.json()
    except ValueError:
        raise Upstream(f"the edit service answered HTTP {response.status} with a body that is not JSON") from None
    if response.status == 200:
        return payload
    detail = payload.get("detail") if isinstance(payload, dict) else payload
    message = _detail_message(detail)
    raise _refusal(response, detail, message, f"the edit service failed (HTTP {response.status}): {message}")


def version_ifc_download(model_id: str, version: str, target) -> None:
    """Streams a saved version's IFC (GET /models/{id}/versions/{version}/ifc; the edit service rebuilds an older
    version from its script) into the file `target`. Errors as in call(): 404 -> 40400, others -> 50200."""
    response = _request("GET", f"/models/{model_id}/versions/{version}/ifc", preload_content=False)
    try:
        if response.status != 200:
            try:
                detail = response.json().get("detail")
            except (ValueError, AttributeError):
                detail = f"HTTP {response.status}"
            message = f"the edit service cannot give IFC {version}: {_detail_message(detail)}"
            raise _refusal(response, detail, message, message)
        with open(target, "wb") as handle:
            for chunk in response.stream(1024 * 1024):
                handle.write(chunk)
    except urllib3.exceptions.HTTPError as exc:
        raise Upstream(f"the edit service did not deliver IFC {version}: {type(exc).__name__}: {exc}") from None
    finally:
        response.close()  # a connection left in the middle of a body is not reused
        response.release_conn()
