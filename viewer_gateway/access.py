"""Who may call which route: the one place where every request's access is decided, before any view runs and before
any view reads the body (docs/security/roles.md).

The decision is taken on what Django routes on (`request.path_info` resolved to a URL name and its arguments): the
route's rule names the capability each method needs (accounts_app.roles.Capability), the URL's arguments name the
scope (a model, a project, a chat session, a trash item), and accounts_app.policy decides. A route without a rule is
refused (fail closed), and the role x route matrix test (tests/accounts/test_route_matrix.py) fails until it has one.
"""

from __future__ import annotations

from collections.abc import Callable

from django.middleware.csrf import CsrfViewMiddleware

from accounts_app.audit import audit_record
from accounts_app.identity import NoIdentity, anonymous, anonymous_reader, identify
from accounts_app.mode import accounts_enabled
from accounts_app.policy import Scope, decide
from accounts_app.roles import Capability
from accounts_app.secrets import SHARE_COOKIE
from viewer_gateway.access_rules import ROUTE_RULES, OAuthRule, route_capability
from api.envelope import error_response
from api.principal import Principal, Via
from chat_app.selectors import session_scope
from core.errors import FORBIDDEN, INTERNAL, INVALID, UNAUTHORIZED
from models_app.access_scopes import model_scope, project_scope, trash_item_scope
from viewer_gateway.edge import ANONYMOUS_GET_ROUTES, SAFE_METHODS, SELF_AUTHENTICATING_NAMESPACES, TokenFailures, bearer_challenge, request_route

# the URL argument that names a route's scope, in order of precedence
SCOPE_ARGUMENTS: tuple[tuple[str, Callable[[str], Scope]], ...] = (
    ("model_id", model_scope),
    ("project_id", project_scope),
    ("cid", session_scope),
    ("item_id", trash_item_scope),
)


def route_scope(kwargs: dict) -> Scope | None:
    for argument, scope_of in SCOPE_ARGUMENTS:
        if argument in kwargs:
            return scope_of(kwargs[argument])
    return None


def _csrf_refusal(request):
    """A session (cookie) may change nothing without the CSRF token the page got with it (X-CSRFToken)."""
    check = CsrfViewMiddleware(lambda _request: None)
    check.process_request(request)
    return check.process_view(request, lambda _request: None, (), {})


def _method_not_allowed(request, rule: dict[str, Capability]):
    allowed = ", ".join(sorted({*rule, "OPTIONS", *(["HEAD"] if "GET" in rule else [])}))
    return error_response(INVALID, f'Method "{request.method}" not allowed.', headers={"Allow": allowed})


def _unauthorized(request, message: str, presented: bool):
    """A 401; on the OAuth2-protected APIs with the bearer challenge that says why (edge.bearer_challenge)."""
    challenge = bearer_challenge(request.path_info, presented)
    return error_response(UNAUTHORIZED, message, headers={"WWW-Authenticate": challenge} if challenge else None)


def request_principal(request, route_name: str, capability: Capability, address: str):
    """The caller's principal, or the 401 answer for a request whose credential fails or that carries none where
    one is needed. A failed token counts towards the address's failure throttle (viewer_gateway/edge.py); a stale
    share link's cookie does not (it is no guess), and the answer deletes it."""
    principal = identify(request, address=address, authorization=request.headers.get("Authorization", ""))
    if isinstance(principal, NoIdentity):
        request.stale_share_link = principal.stale_share_link
        if capability == Capability.PUBLIC:
            return anonymous(address)  # a public page needs no credential, so a failing one is not asked about
        if principal.presented:
            TokenFailures(address).add_one()
            audit_record(Principal("anonymous", address=address, via=Via.TOKEN), "token.failed", detail={"reason": principal.message, "route": route_name})
        return _unauthorized(request, principal.message, principal.presented)
    if principal is None:
        if capability == Capability.PUBLIC:
            return anonymous(address)
        if route_name in ANONYMOUS_GET_ROUTES and not accounts_enabled():
            return anonymous_reader(address)  # the spec's anonymous geometry GETs while only the operator's token guards
        return _unauthorized(request, "sign in, or send a bearer token (Authorization: Bearer ...)", presented=False)
    return principal


class AccessMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.decided(request)
        if getattr(request, "stale_share_link", False):
            response.delete_cookie(SHARE_COOKIE)
        return response

    def decided(self, request):
        route = request_route(request)
        if route is None:
            return self.get_response(request)  # no route: Django's 404 (static assets: WhiteNoise answered already)
        if SELF_AUTHENTICATING_NAMESPACES.intersection(route.namespaces):
            return self.get_response(request)
        rule = ROUTE_RULES.get(route.url_name or "")
        if rule is None:
            return error_response(INTERNAL, f"no access rule for route {route.url_name!r}: refused")
        capability = route_capability(route.url_name, request.method)
        if capability is None:
            return _method_not_allowed(request, rule)
        principal = request_principal(request, route.url_name, capability, request.META.get("REMOTE_ADDR", ""))
        if not isinstance(principal, Principal):
            return principal
        if principal.via == Via.SESSION and request.method not in SAFE_METHODS and _csrf_refusal(request) is not None:
            return error_response(FORBIDDEN, "CSRF check failed: send the X-CSRFToken header the page got with its session")
        if principal.via == Via.OAUTH and capability != Capability.PUBLIC and not isinstance(rule, OAuthRule):
            return error_response(FORBIDDEN, "an OAuth2 client's token acts on the BCF API (/bcf/, /foundation/) only; the rest of "
                                             "the API needs a sign-in or a personal token")
        scope = route_scope(route.kwargs)
        decision = decide(principal, capability, scope)
        if not decision.allowed:
            return error_response(decision.code, decision.message)
        request.principal = principal
        request.access_scope = scope  # what the decision looked up (a view may use it instead of a second query)
        return self.get_response(request)
