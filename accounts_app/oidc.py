"""Single sign-on with an OpenID Connect provider (docs/security/single-sign-on.md), on mozilla-django-oidc.

The library does the authorization code flow with PKCE (S256), state and nonce, and fetches the ID token's signing
key from the provider's JWKS; this module adds what it leaves to its users:
- discovery: the endpoints come from `{oidcIssuer}/.well-known/openid-configuration`, fetched at the first sign-in
  and kept for the life of the process (ProviderUnavailable, naming the URL, while it cannot be read);
- the client and the scopes from the gateway's configuration (settings.VIEWER), read at each request;
- the ID token's issuer, audience and expiry checked with its RS256 signature (the library checks the signature);
- who signs in: the account linked to the provider's `sub`, else the one named by oidcUsernameClaim (then linked),
  else a new one; with oidcGroupsClaim the server role follows the groups at every sign-in;
- the audit trail of a refused sign-in ("sign-in.failed", detail {"via": "oidc", "reason": ...}); a sign-in is audited
  by the user_logged_in receiver, as every sign-in path's.

The static settings (view classes, PKCE, RS256, where to go after) are viewer_gateway/oidc_settings.py.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.views.generic import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from accounts_app.audit import audit_record
from accounts_app.identity import server_role_of
from accounts_app.models import Account
from accounts_app.roles import ServerRole
from accounts_app.services.users import NO_CHANGE, user_create, user_update
from api.envelope import error_response
from api.principal import Principal, Via
from core.errors import NOT_FOUND, UPSTREAM, ApplicationError

logger = logging.getLogger(__name__)

DISCOVERY_PATH = "/.well-known/openid-configuration"
DISCOVERY_TIMEOUT_SECONDS = 10
ID_TOKEN_ALGORITHM = "RS256"
CLOCK_SKEW_SECONDS = 60
NOT_CONFIGURED = "single sign-on is not configured (oidcIssuer)"


class ProviderUnavailable(Exception):
    """The provider's discovery document cannot be read, or is not one."""


class SignInRefused(Exception):
    """The provider vouched for someone this gateway will not sign in (a claim missing, an account taken)."""


@dataclass(frozen=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str


_discovered: dict[str, ProviderMetadata] = {}
_discovery_lock = threading.Lock()


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + DISCOVERY_PATH


def _fetch_metadata(issuer: str) -> ProviderMetadata:
    url = discovery_url(issuer)
    try:
        response = requests.get(url, timeout=DISCOVERY_TIMEOUT_SECONDS)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"the single sign-on provider's discovery document {url} cannot be read: {exc}") from None
    if not isinstance(document, dict):
        raise ProviderUnavailable(f"{url} is not an OpenID Connect discovery document (not a JSON object)")
    missing = [name for name in ProviderMetadata.__dataclass_fields__ if not isinstance(document.get(name), str)]
    if missing:
        raise ProviderUnavailable(f"{url} lacks {', '.join(missing)}")
    # the spec wants them identical; providers differ only in a trailing slash (Authentik has one, Keycloak none)
    if document["issuer"].rstrip("/") != issuer.rstrip("/"):
        raise ProviderUnavailable(f"{url} names the issuer {document['issuer']!r}, not the configured oidcIssuer {issuer!r}")
    return ProviderMetadata(**{name: document[name] for name in ProviderMetadata.__dataclass_fields__})


def provider_metadata() -> ProviderMetadata:
    """The configured provider's endpoints, discovered once per process (a failure is retried at the next call)."""
    issuer = settings.VIEWER.oidcIssuer
    if not issuer:
        raise ProviderUnavailable(NOT_CONFIGURED)
    with _discovery_lock:
        if issuer not in _discovered:
            _discovered[issuer] = _fetch_metadata(issuer)
        return _discovered[issuer]


_FROM_CONFIGURATION = {
    "OIDC_RP_CLIENT_ID": lambda viewer: viewer.oidcClientId,
    "OIDC_RP_CLIENT_SECRET": lambda viewer: viewer.oidcClientSecret,
    "OIDC_RP_SCOPES": lambda viewer: viewer.oidcScopes,
}


def oidc_setting(attr: str, *default):
    """What mozilla-django-oidc reads as a setting: the client and scopes from the gateway's configuration, the rest
    from Django's settings (viewer_gateway/oidc_settings.py)."""
    if attr in _FROM_CONFIGURATION:
        return _FROM_CONFIGURATION[attr](settings.VIEWER)
    return import_from_settings(attr, *default)


# --- who signs in -------------------------------------------------------------------------------------------------

User = get_user_model()


def role_for_groups(groups) -> ServerRole:
    """oidcAdminGroups -> admin, else oidcGuestGroups -> guest, else user. A claim may be a list or one string."""
    viewer = settings.VIEWER
    names = {groups} if isinstance(groups, str) else {str(group) for group in groups or ()}
    if names & set(viewer.oidcAdminGroups):
        return ServerRole.ADMIN
    if names & set(viewer.oidcGuestGroups):
        return ServerRole.GUEST
    return ServerRole.USER


def _linked_or_named_user(subject: str, username: str):
    account = Account.objects.select_related("user").filter(external_subject=subject).first()
    if account is not None:
        return account.user
    user = User.objects.filter(**{f"{User.USERNAME_FIELD}__iexact": username}).first()
    if user is None:
        return None
    linked_to = Account.objects.filter(user=user).values_list("external_subject", flat=True).first()
    if linked_to and linked_to != subject:
        raise SignInRefused(f"the account {username!r} is linked to another identity of the provider")
    return user


@transaction.atomic
def account_for_sign_in(claims: dict, by: Principal):
    """The user the provider's claims name, created on the first sign-in and linked to the provider's `sub`."""
    viewer = settings.VIEWER
    subject = claims.get("sub")
    username = claims.get(viewer.oidcUsernameClaim)
    if not isinstance(subject, str) or not subject:
        raise SignInRefused("the provider sent no sub claim")
    if not isinstance(username, str) or not username.strip():
        raise SignInRefused(f"the provider sent no {viewer.oidcUsernameClaim} claim (oidcUsernameClaim)")
    username = username.strip()
    mapped_role = role_for_groups(claims.get(viewer.oidcGroupsClaim)) if viewer.oidcGroupsClaim else None
    display_name = claims.get("name") if isinstance(claims.get("name"), str) else ""
    email = claims.get("email") if isinstance(claims.get("email"), str) else ""
    user = _linked_or_named_user(subject, username)
    if user is None:
        try:
            user = user_create(by, username=username, email=email, display_name=display_name, role=mapped_role or ServerRole.USER)
        except ApplicationError as exc:
            raise SignInRefused(f"no account can be made for {username!r}: {exc.message}") from None
    else:
        user_update(by, user.get_username(), display_name=display_name or NO_CHANGE, email=email or NO_CHANGE)
        if mapped_role is not None and mapped_role != server_role_of(user):
            try:
                user_update(by, user.get_username(), role=mapped_role)
            except ApplicationError as exc:  # the last admin is not demoted by a group change
                logger.warning("single sign-on of %s keeps the role %s: %s", user.get_username(), server_role_of(user), exc.message)
    account, _ = Account.objects.get_or_create(user=user, defaults={"role": server_role_of(user)})
    if account.external_subject != subject:
        account.external_subject = subject
        account.save(update_fields=["external_subject"])
    return user


class OidcBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend with discovered endpoints, the issuer, audience and expiry checked, and
    accounts_app's accounts. Django makes one per request that has a session: it reads nothing until a sign-in."""

    OIDC_RP_SIGN_ALGO = ID_TOKEN_ALGORITHM
    OIDC_RP_IDP_SIGN_KEY = None
    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args, **kwargs):
        self.UserModel = User

    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: provider_metadata().token_endpoint)
    OIDC_OP_USER_ENDPOINT = property(lambda self: provider_metadata().userinfo_endpoint)
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: provider_metadata().jwks_uri)
    OIDC_RP_CLIENT_ID = property(lambda self: settings.VIEWER.oidcClientId)
    OIDC_RP_CLIENT_SECRET = property(lambda self: settings.VIEWER.oidcClientSecret)

    def authenticate(self, request, **kwargs):
        # only the callback view passes a nonce: a password sign-in never reaches the provider
        if "nonce" not in kwargs or not settings.VIEWER.oidc_enabled:
            return None
        return super().authenticate(request, **kwargs)

    def _verify_jws(self, payload, key):
        if jwt.get_unverified_header(payload).get("alg") != ID_TOKEN_ALGORITHM:
            raise SuspiciousOperation(f"the ID token is not signed with {ID_TOKEN_ALGORITHM}")
        try:
            claims = jwt.decode(
                payload, key, algorithms=[ID_TOKEN_ALGORITHM], audience=self.OIDC_RP_CLIENT_ID, issuer=provider_metadata().issuer,
                leeway=CLOCK_SKEW_SECONDS, options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.InvalidTokenError as exc:
            raise SuspiciousOperation(f"ID token refused: {exc}") from None
        if isinstance(claims["aud"], list) and len(claims["aud"]) > 1 and claims.get("azp") != self.OIDC_RP_CLIENT_ID:
            raise SuspiciousOperation("ID token refused: issued to several audiences, authorized party is not this client")
        return claims

    def get_or_create_user(self, access_token, id_token, payload):
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload["sub"]:
            raise SignInRefused("the userinfo endpoint names another sub than the ID token")
        # the ID token's claims too: some providers (Entra ID) send groups only there
        by = Principal(name="single sign-on", address=Principal.of(self.request).address, via=Via.SYSTEM)
        return account_for_sign_in({**payload, **userinfo}, by)

    def get_user(self, user_id):
        return ModelBackend.get_user(self, user_id)  # checks is_active: an inactive user's session ends (the library's keeps it)


# --- the two views (mozilla_django_oidc.urls builds them from OIDC_AUTHENTICATE_CLASS / OIDC_CALLBACK_CLASS) -----


def _refusal(exc: Exception):
    return error_response(NOT_FOUND if str(exc) == NOT_CONFIGURED else UPSTREAM, str(exc))


class SignInRedirectView(OIDCAuthenticationRequestView):
    """/oidc/authenticate/: to the provider's sign-in, with state, nonce and the PKCE challenge kept in the session."""

    get_settings = staticmethod(oidc_setting)

    def __init__(self, **kwargs):
        View.__init__(self, **kwargs)  # the library's reads the endpoint here; it is discovered in get()

    def get(self, request):
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider_metadata().authorization_endpoint
        except ProviderUnavailable as exc:
            return _refusal(exc)
        self.OIDC_RP_CLIENT_ID = settings.VIEWER.oidcClientId
        return super().get(request)


class SignInCallbackView(OIDCAuthenticationCallbackView):
    """/oidc/callback/: the provider's answer; signs the user in (a Django session) or back to the sign-in page."""

    get_settings = staticmethod(oidc_setting)
    failure_reason = ""

    def get(self, request):
        if not settings.VIEWER.oidc_enabled:
            return _refusal(ProviderUnavailable(NOT_CONFIGURED))
        if request.GET.get("error"):
            self.failure_reason = f"the provider answered {request.GET['error'][:100]}"
        try:
            return super().get(request)
        except (SuspiciousOperation, SignInRefused, ProviderUnavailable, requests.RequestException) as exc:
            logger.warning("single sign-on refused: %s", exc)
            self.failure_reason = str(exc)[:300]
            return self.login_failure()

    def login_failure(self):
        # a success is audited by Django's user_logged_in signal, as every sign-in path (accounts_app/pages/receivers.py)
        reason = self.failure_reason or "no account signed in (no state in the session, or an inactive account)"
        audit_record(Principal.of(self.request), "sign-in.failed", detail={"via": "oidc", "reason": reason})
        return super().login_failure()
