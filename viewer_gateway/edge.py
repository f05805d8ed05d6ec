"""Trust decisions at the gateway's edge, made from the request line and headers alone.

Two places call these functions and must decide alike: the server, before a single body byte is read
(viewer_gateway/server.py), and the Django middleware (viewer_gateway/auth.py), which repeats the check for
requests that reach Django by other ways (tests, another ASGI server). Both decide on the path exactly as it
arrived on the wire, which is what Django routes on (`request.path_info`): a client-supplied root path
(Daphne's `Daphne-Root-Path`, say) or forwarded prefix never changes routing, and a forwarded prefix, client address or scheme is
honoured only from a proxy the operator names in `trustedProxies` (see `ForwardedView`).

Failed token attempts are counted per client address in Django's cache (Redis when configured, so every gateway
process shares the counts); an address over `tokenFailureLimit` in the current window is refused with 429 on every
route that needs the token, the right token included: otherwise the answer to a guess would still tell right from
wrong, and the throttle would slow nothing (docs/operations/gateway-hardening.md).
"""

from __future__ import annotations

import hmac
import functools
import ipaddress
import logging
import re
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from django.http.cookie import parse_cookie
from django.urls import Resolver404, ResolverMatch, get_resolver

from accounts_app.mode import accounts_marked
from accounts_app.roles import Capability
from accounts_app.secrets import OAUTH_PREFIX, SHARE_COOKIE, TOKEN_PREFIX
from api.envelope import CROSS_SITE, TOO_MANY_REQUESTS, UNAUTHORIZED
from viewer_gateway.access_rules import route_capability

logger = logging.getLogger(__name__)

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
# URL names of the GETs that stay anonymous while no accounts exist: the spec's three static files and a saved
# version's geometry files (viewers and <img> tags cannot send headers). With accounts they need a session or a
# share link's cookie, which a same-origin loader sends. Routes whose rule is public need no token at all.
ANONYMOUS_GET_ROUTES = frozenset({
    "model-xkt", "model-metadata", "model-version-xkt", "model-version-metadata", "issue-screenshot",
})
# Django's admin has its own staff login, session and CSRF protection.
SELF_AUTHENTICATING_NAMESPACES = frozenset({"admin"})
FORWARDED_PREFIX_RE = re.compile(r"^(/(?!\.{1,2}(?:/|$))[A-Za-z0-9._~-]+)+$")


# the OAuth2-protected APIs (bcfapi_app): their 401s name the scheme and why (RFC 6750), so a client signs in again
BEARER_CHALLENGE_PREFIXES = ("/bcf/", "/foundation/")


def bearer_challenge(path_info: str, presented: bool) -> str:
    """The WWW-Authenticate value of a 401 on an OAuth2-protected route ("" elsewhere)."""
    if not path_info.startswith(BEARER_CHALLENGE_PREFIXES):
        return ""
    return 'Bearer realm="bcf", error="invalid_token"' if presented else 'Bearer realm="bcf"'


@dataclass(frozen=True)
class Refusal:
    code: int
    message: str
    retry_after_seconds: int | None = None
    challenge: str = ""  # WWW-Authenticate of a 401 (bearer_challenge)

    @property
    def headers(self) -> dict[str, str]:
        headers = {"Retry-After": str(self.retry_after_seconds)} if self.retry_after_seconds is not None else {}
        return {**headers, "WWW-Authenticate": self.challenge} if self.challenge else headers


@dataclass(frozen=True)
class ForwardedView:
    """Who sent a request and how, as the gateway may believe it: the TCP peer, unless that peer is a trusted
    proxy, whose X-Forwarded-For / -Proto / -Prefix headers are then taken."""

    client_host: str
    scheme: str
    root_path: str

    @classmethod
    def of(cls, peer_host: str, scheme: str, headers: dict[str, str]) -> ForwardedView:
        if not _is_trusted_proxy(peer_host):
            return cls(peer_host, scheme, "")
        hops = [hop.strip() for hop in headers.get("x-forwarded-for", "").split(",") if hop.strip()]
        # The rightmost address a trusted proxy did not add is the client; anything left of it is client-supplied.
        client = next((hop for hop in reversed(hops) if not _is_trusted_proxy(hop)), peer_host)
        proto = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
        prefix = headers.get("x-forwarded-prefix", "").strip().rstrip("/")
        return cls(
            client,
            proto if proto in ("http", "https") else scheme,
            prefix if FORWARDED_PREFIX_RE.match(prefix) else "",
        )


def _is_trusted_proxy(host: str) -> bool:
    networks = settings.VIEWER.trusted_proxy_networks
    if not networks:
        return False
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return any(address in network for network in networks)


# longer paths are resolved each time: a client without a token could otherwise fill the cache with long paths
CACHED_PATH_MAX = 256


def resolved_route(path_info: str, urlconf: str | None = None) -> ResolverMatch | None:
    """The route Django resolves `path_info` to with `urlconf` (ROOT_URLCONF's when None), or None. Kept per path: the
    server's body limit and token check, the event-stream test, the access middleware and the gateway's handler
    (viewer_gateway/asgi.py) take one look-up per path between them. The ResolverMatch is shared by every request of
    that path: read it, never change it (the handler gives each request a copy)."""
    resolver = get_resolver(urlconf)
    return _resolved(resolver, path_info) if len(path_info) <= CACHED_PATH_MAX else _resolved.__wrapped__(resolver, path_info)


def request_route(request) -> ResolverMatch | None:
    """The route Django dispatches `request` to: with the URLconf a middleware may set on it (`request.urlconf`, as
    Django's own dispatch honours it), else ROOT_URLCONF's."""
    return resolved_route(request.path_info, getattr(request, "urlconf", None))


# Keyed by the resolver itself: a changed URLconf (settings changed, tests) brings a new resolver from get_resolver,
# so an answer of the old one is never given for it.
@functools.lru_cache(maxsize=4096)
def _resolved(resolver, path_info: str):
    try:
        return resolver.resolve(path_info)
    except Resolver404:
        return None


def route_name(path_info: str) -> str | None:
    route = resolved_route(path_info)
    return route.url_name if route else None


def is_preflight(method: str, headers: dict[str, str]) -> bool:
    return method == "OPTIONS" and "origin" in headers and "access-control-request-method" in headers


def is_token_exempt(method: str, path_info: str, headers: dict[str, str]) -> bool:
    if is_preflight(method, headers):
        return True
    route = resolved_route(path_info)
    if route is not None and SELF_AUTHENTICATING_NAMESPACES.intersection(route.namespaces):
        return True
    if route is not None and method != "OPTIONS" and route_capability(route.url_name, method) == Capability.PUBLIC:
        return True  # (a non-preflight OPTIONS still needs the token, as before accounts)
    if method not in ("GET", "HEAD"):
        return False
    if route is None:
        # Static assets: WhiteNoise serves them by path_info before Django routes; no view answers under STATIC_URL.
        return path_info.startswith(settings.STATIC_URL)
    return route.url_name in ANONYMOUS_GET_ROUTES


def token_matches(header: str, token: str) -> bool:
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer":
        presented = ""
    return hmac.compare_digest(presented.strip().encode(), token.encode())


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    if not parts.scheme or not parts.hostname:
        return ""
    default_port = {"http": 80, "https": 443}.get(parts.scheme.lower())
    try:
        port = parts.port
    except ValueError:
        return ""
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme.lower()}://{host}" + (f":{port}" if port and port != default_port else "")


def request_origin(headers: dict[str, str]) -> str | None:
    """The site a browser says the request comes from (Origin, else Referer); None for non-browser clients, "" for
    an opaque origin ("null", or a header that is not a URL)."""
    if "origin" in headers:
        return _origin_of(headers["origin"])
    if "referer" in headers:
        return _origin_of(headers["referer"])
    return None


def cross_site_refusal(method: str, scheme: str, host: str, headers: dict[str, str]) -> Refusal | None:
    """A state-changing request from a page of another site is refused (a browser sends a multipart POST
    cross-origin without a preflight, so CORS alone does not stop it). Allowed: the gateway's own origin, the
    corsOrigins whitelist, and clients that send neither Origin nor Referer (curl, scripts, the agent)."""
    if method in SAFE_METHODS:
        return None
    origin = request_origin(headers)
    if origin is None:
        return None
    own = _origin_of(f"{scheme}://{host}")
    allowed = {own, *(_origin_of(o) for o in settings.VIEWER.corsOrigins)} - {""}
    if origin in allowed:
        return None
    shown = headers.get("origin") or headers.get("referer", "")
    return Refusal(
        CROSS_SITE,
        f"cross-site request refused: {method} from {shown[:200]!r}, which is neither this gateway's origin nor in corsOrigins",
    )


class TokenFailures:
    """Failed token attempts of one client address in the current fixed window of tokenFailureWindowSeconds."""

    def __init__(self, client_host: str):
        window = settings.VIEWER.tokenFailureWindowSeconds
        now = time.time()
        self.seconds_left = max(1, int(window - now % window))
        self.key = f"edge:token-failures:{client_host}:{int(now // window)}"
        self.window = window

    def count(self) -> int:
        try:
            return cache.get(self.key, 0)
        except Exception:  # the cache (Redis) being down must not take the API with it
            logger.warning("token failure counts unavailable; not throttling", exc_info=True)
            return 0

    def add_one(self) -> None:
        try:
            cache.add(self.key, 0, timeout=self.window + 1)
            cache.incr(self.key)
        except ValueError:  # the key expired between add and incr: this failure opens the next window
            cache.add(self.key, 1, timeout=self.window + 1)
        except Exception:
            logger.warning("token failure not counted", exc_info=True)


def carries_account_credential(headers: dict[str, str]) -> bool:
    """A personal API token, a session cookie or a share link's cookie: credentials only the access middleware can
    check (viewer_gateway/access.py, with the database), so the edge lets them through to it."""
    scheme, _, presented = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and presented.strip().startswith((TOKEN_PREFIX, OAUTH_PREFIX)):
        return True
    if "authorization" in headers:
        return False
    cookies = parse_cookie(headers.get("cookie", ""))
    return bool(cookies.get(settings.SESSION_COOKIE_NAME) or cookies.get(SHARE_COOKIE))


def token_refusal(method: str, path_info: str, headers: dict[str, str], client_host: str) -> Refusal | None:
    token = settings.VIEWER.apiToken
    if is_token_exempt(method, path_info, headers):
        return None
    account_credential = carries_account_credential(headers)
    if not token and not account_credential:
        if accounts_marked():  # accounts and no credential: refused before the body is read
            return Refusal(UNAUTHORIZED, "sign in, or send a bearer token (Authorization: Bearer ...)", challenge=bearer_challenge(path_info, False))
        return None  # the open mode
    failures = TokenFailures(client_host)
    limit = settings.VIEWER.tokenFailureLimit
    if failures.count() >= limit:
        return Refusal(
            TOO_MANY_REQUESTS,
            f"too many failed token attempts from this address ({limit} within {failures.window} s); "
            f"every request that needs the token is refused for {failures.seconds_left} s more",
            failures.seconds_left,
        )
    if account_credential or token_matches(headers.get("authorization", ""), token):
        return None
    failures.add_one()
    return Refusal(UNAUTHORIZED, "missing or invalid bearer token", challenge=bearer_challenge(path_info, "authorization" in headers))


def edge_refusal(method: str, path_info: str, scheme: str, host: str, headers: dict[str, str], client_host: str) -> Refusal | None:
    """Why the request must be refused before its body is read, or None. `headers` have lowercase names; `host`
    is the Host the request was sent to (the gateway's own origin is scheme://host); `client_host` the client's
    address as ForwardedView believes it."""
    return token_refusal(method, path_info, headers, client_host) or cross_site_refusal(method, scheme, host, headers)


def trusted_scope(scope: dict) -> dict:
    """The ASGI scope as the gateway may believe it. The server's root_path (some servers take it from a client header, as Daphne did from Daphne-Root-Path)
    is replaced: routing stays on the path as received, and only a trusted proxy's X-Forwarded-Prefix becomes the
    script prefix that URLs are built with; client address and scheme likewise come from a trusted proxy only."""
    if scope["type"] not in ("http", "websocket"):
        return scope
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", [])}
    peer_host = (scope.get("client") or ["", 0])[0]
    view = ForwardedView.of(peer_host, scope.get("scheme", "http"), headers)
    client = scope.get("client") if view.client_host == peer_host else [view.client_host, 0]
    return {**scope, "root_path": view.root_path, "path": view.root_path + scope["path"], "scheme": view.scheme, "client": client}
