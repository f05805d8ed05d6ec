"""The gateway's edge checks inside Django: the bearer token (constant-time compare) and cross-site refusal.

The decisions are viewer_gateway/edge.py's, taken on `request.path_info` (what Django routes on); the server makes
the same decisions before reading a body, so this middleware is the second line for requests that reach Django
another way. Exempt from the token: CORS preflights, the anonymous static GETs of the spec, the web client's page
and the Swagger UI page (HTML shells that ask for the token), the admin (Django's staff login) and static assets.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication

from api.envelope import error_response
from viewer_gateway.edge import edge_refusal


def lowercase_headers(request) -> dict[str, str]:
    return {name.lower(): value for name, value in request.headers.items()}


class EdgeCheckMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        refusal = edge_refusal(
            request.method, request.path_info, request.scheme, request.get_host(), lowercase_headers(request), request.META.get("REMOTE_ADDR", "")
        )
        if refusal is not None:
            return error_response(refusal.code, refusal.message, headers=refusal.headers)
        return self.get_response(request)


class BearerTokenScheme(BaseAuthentication):
    """Documents the bearer token in the OpenAPI document; the check itself is EdgeCheckMiddleware's (and the
    server's), which also covers routes outside DRF."""

    def authenticate(self, request):
        return None


class BearerTokenSchemeExtension(OpenApiAuthenticationExtension):
    target_class = BearerTokenScheme
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "apiToken (VIEWER_API_TOKEN); not needed when it is empty"}
