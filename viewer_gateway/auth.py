"""Bearer-token authentication for the whole gateway (constant-time compare).

Exempt: OPTIONS preflights, the anonymous static GETs of the spec (model.xkt, metadata.json, issue screenshots:
viewers and <img> tags cannot send headers), /admin/ (Django's own staff login) and /static/ (library assets).
"""

import hmac
import re

from django.conf import settings

from viewer_gateway.envelope import UNAUTHORIZED, error_response

ANONYMOUS_GETS = re.compile(
    r"^/v1/models/m_[0-9a-f]{16}/(model\.xkt|metadata\.json|issues/[^/]+)$"
)
EXEMPT_PREFIXES = ("/admin/", "/static/")


def is_exempt(method: str, path: str) -> bool:
    if method == "OPTIONS" or path.startswith(EXEMPT_PREFIXES):
        return True
    return method in ("GET", "HEAD") and bool(ANONYMOUS_GETS.match(path))


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
        if token and not is_exempt(request.method, request.path):
            if not token_matches(request.headers.get("Authorization", ""), token):
                return error_response(UNAUTHORIZED, "missing or invalid bearer token")
        return self.get_response(request)
