"""OAuth2 for BCF API clients (django-oauth-toolkit): the tokens it hands out, when PKCE is required, who an access
token stands for, and the consent page (docs/api/bcf.md, docs/decisions/0010).

A client registered by the operator (the admin, or `manage.py createapplication`) sends the user to the consent
page; the user signs in if needed and allows it once; the client gets a `bmo_` access token (1 h) and a refresh
token (30 d, rotated on use). Both are kept only as their SHA-256 (COMPLIANT_BCP_RFC9700_TOKEN_STORAGE). An access
token acts as its user with the user's project roles; a token without the `write` scope reads only.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.cache import cache
from django.utils import timezone
from oauth2_provider.views import AuthorizationView

from accounts_app.secrets import OAUTH_PREFIX, new_secret, sha256

OAUTH_TOKEN_ID_PREFIX = "oat_"  # a principal's token_id: the access token's row ("oat_<pk>")
USE_AUDIT_SECONDS = 60  # a token's use is audited at most once a minute


def new_token(request=None) -> str:
    """An access or refresh token (DOT's ACCESS_TOKEN_GENERATOR / REFRESH_TOKEN_GENERATOR)."""
    return new_secret(OAUTH_PREFIX)


def pkce_required(client_id: str) -> bool:
    """PKCE for public clients (they hold no secret); a confidential client proves itself with its secret, as
    IfcOpenShell's bcf-client does (HTTP Basic on the token endpoint, no code_challenge)."""
    from oauth2_provider.models import get_application_model

    application = get_application_model().objects.filter(client_id=client_id).only("client_type").first()
    return application is None or application.client_type != application.CLIENT_CONFIDENTIAL


def access_token_for(presented: str):
    """The live access-token row of a presented `bmo_` secret (with its user and application), or None."""
    from oauth2_provider.models import get_access_token_model

    return get_access_token_model().objects.select_related("user", "application").filter(token_checksum=sha256(presented)).first()


def access_token_alive(token_id: str) -> bool:
    """Whether the access token a principal was made from still stands (not revoked, not expired)."""
    from oauth2_provider.models import get_access_token_model

    pk = token_id.removeprefix(OAUTH_TOKEN_ID_PREFIX)
    return pk.isdigit() and get_access_token_model().objects.filter(pk=int(pk), expires__gt=timezone.now()).exists()


def first_use_this_minute(token_pk: int) -> bool:
    """True once a minute per token: when its use is worth an audit record."""
    return cache.add(f"oauth:use:{token_pk}", 1, timeout=USE_AUDIT_SECONDS)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else ""


class ConsentView(AuthorizationView):
    """DOT's authorization page (signed out: the sign-in page first, `?next=` back here) with this service's
    template (templates/oauth2_provider/authorize.html). The page has no script; its policy lets the form's answer
    redirect to the client's redirect URL, which a browser checks against `form-action` after the POST."""

    http_method_names = ["get", "post", "head", "options"]  # not FormView's PUT

    def render_to_response(self, context, **response_kwargs):
        response = super().render_to_response(context, **response_kwargs)
        response["Content-Security-Policy"] = consent_page_policy(context.get("redirect_uri") or "")
        return response


def consent_page_policy(redirect_uri: str) -> str:
    return ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'; "
            f"form-action 'self' {_origin(redirect_uri)}".rstrip())
