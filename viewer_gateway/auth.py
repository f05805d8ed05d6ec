"""Bearer-token authentication for the whole gateway (constant-time compare).

Exempt: CORS preflights, the anonymous static GETs of the spec (model.xkt, metadata.json, issue screenshots: viewers
and <img> tags cannot send headers), the web client's page and the Swagger UI page (HTML shells without data; they
ask for the token and send it with every request), /admin/ (Django's own staff login) and /static/ (library assets).
"""

import hmac
import re

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication

from viewer_gateway.envelope import UNAUTHORIZED, error_response

ANONYMOUS_GETS = re.compile(
    r"^/v1/models/m_[0-9a-f]{16}/(model\.xkt|metadata\.json|issues/[^/]+)$|^/api/v1/docs$|^/$"
)
EXEMPT_PREFIXES = ("/admin/", "/static/")


def is_preflight(request) -> bool:
    return request.method == "OPTIONS" and "Origin" in request.headers and "Access-Control-Request-Method" in request.headers


def is_exempt(request) -> bool:
    if is_preflight(request) or request.path.startswith(EXEMPT_PREFIXES):
        return True
    return request.method in ("GET", "HEAD") and bool(ANONYMOUS_GETS.match(request.path))


def token_matches(header: str, token: str) -> bool:
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer":
        presented = ""
    return hmac.compare_digest(presented.strip().encode(), token.encode())


class BearerTokenMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = settings.VIEWER.apiToken
        if token and not is_exempt(request):
            if not token_matches(request.headers.get("Authorization", ""), token):
                return error_response(UNAUTHORIZED, "missing or invalid bearer token")
        return self.get_response(request)


class BearerTokenScheme(BaseAuthentication):
    """Documents the bearer token in the OpenAPI document; the check itself is BearerTokenMiddleware's, which also
    covers routes outside DRF."""

    def authenticate(self, request):
        return None


class BearerTokenSchemeExtension(OpenApiAuthenticationExtension):
    target_class = BearerTokenScheme
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "apiToken (VIEWER_API_TOKEN); not needed when it is empty"}
