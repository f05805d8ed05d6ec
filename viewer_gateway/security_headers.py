"""A Content-Security-Policy for the gateway's HTML pages: the web client (whose token sits in sessionStorage, where
any injected script could read it) and the Swagger UI page. The admin keeps Django's defaults. X-Content-Type-Options
and Referrer-Policy come from Django's SecurityMiddleware on every response (SECURE_CONTENT_TYPE_NOSNIFF,
SECURE_REFERRER_POLICY)."""

from __future__ import annotations

# Scripts only from the gateway's own files (no inline script, no eval); xeokit draws with WebGL and decodes in
# workers it may start from blob: URLs, and shows data:/blob: images (screenshots, textures). Inline styles stay
# allowed: the Swagger UI page has a <style> block, and styles cannot run code.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SELF_POLICED_NAMESPACES = frozenset({"admin"})


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        match = request.resolver_match
        if response.get("Content-Type", "").startswith("text/html") and not (match and SELF_POLICED_NAMESPACES.intersection(match.namespaces)):
            response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response
