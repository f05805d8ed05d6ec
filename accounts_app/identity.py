"""Who a request comes from, from what it carries: the operator's token, a personal token, a session, a share link's
cookie, or nothing. Called once per request by the gateway's access middleware (viewer_gateway/access.py).

The modes (docs/security/modes.md): no apiToken and no accounts is the open single-user mode (loopback only), in
which everyone acts as the admin; apiToken set is the operator's token with every right; accounts switch on with the
first user, and then every request that is not public needs one of the credentials above.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from importlib import import_module
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts_app.audit import audit_record
from accounts_app.mode import accounts_enabled
from accounts_app.models import Account, ApiToken, ShareLink
from accounts_app.roles import ServerRole
from accounts_app.oauth import OAUTH_TOKEN_ID_PREFIX, access_token_alive, access_token_for, first_use_this_minute
from accounts_app.secrets import OAUTH_PREFIX, SHARE_COOKIE, SHARE_PREFIX, TOKEN_PREFIX, sha256
from api.principal import TOKEN_PRINCIPAL, Principal, ShareGrant, Via
from core.provenance import DEFAULT_AUTHOR

LAST_USE_GRANULARITY = timedelta(minutes=1)  # a token's last use is written at most once a minute


@dataclass(frozen=True)
class NoIdentity:
    """The request carries a credential that is wrong, expired or revoked, or none where one is needed."""

    message: str
    presented: bool  # a credential was presented (and failed): counts towards the address's failure throttle
    stale_share_link: bool = False  # the cookie of a share link that expired or was revoked: the answer drops it


def server_role_of(user) -> str:
    if user.is_superuser:
        return ServerRole.ADMIN
    account = Account.objects.filter(user=user).only("role").first()
    return account.role if account else ServerRole.USER


def user_principal(user, address: str = "", via: str = Via.SYSTEM, **extra) -> Principal:
    """The principal of an account: its name, server role and display name (one query for the Account)."""
    account = Account.objects.filter(user=user).first()
    role = ServerRole.ADMIN if user.is_superuser else (account.role if account else ServerRole.USER)
    return Principal(name=user.get_username(), address=address, via=via, user_id=user.pk, role=role,
                     display_name=(account.display_name if account else "") or user.get_full_name(), **extra)


def _personal_token(presented: str, address: str) -> Principal | NoIdentity:
    token = ApiToken.objects.select_related("user").filter(secret_sha256=sha256(presented)).first()
    now = timezone.now()
    if token is None:
        return NoIdentity("invalid bearer token", presented=True)
    if token.revoked_at is not None:
        return NoIdentity("this token was revoked", presented=True)
    if token.expires_at is not None and token.expires_at <= now:
        return NoIdentity("this token has expired", presented=True)
    if not token.user.is_active:
        return NoIdentity("the account of this token is disabled", presented=True)
    principal = user_principal(token.user, address, Via.TOKEN, read_only=token.scope == ApiToken.Scope.READ, token_id=token.id)
    if token.last_used_at is None or now - token.last_used_at >= LAST_USE_GRANULARITY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        audit_record(principal, "token.use", object=f"token:{token.id}", detail={"name": token.name})
    return principal


def _oauth_token(presented: str, address: str) -> Principal | NoIdentity:
    """The user an OAuth2 access token of a BCF API client acts for (read-only without the `write` scope)."""
    token = access_token_for(presented)
    if token is None or token.user is None:
        return NoIdentity("invalid bearer token", presented=True)
    if token.is_expired():
        return NoIdentity("this token has expired", presented=True)
    if not token.user.is_active:
        return NoIdentity("the account of this token is disabled", presented=True)
    principal = user_principal(token.user, address, Via.OAUTH, read_only="write" not in token.scope.split(),
                               token_id=f"{OAUTH_TOKEN_ID_PREFIX}{token.pk}")
    if first_use_this_minute(token.pk):
        audit_record(principal, "oauth.use", object=f"oauth-token:{token.pk}", detail={"client": token.application.name if token.application else ""})
    return principal


def share_link_principal(presented: str, address: str) -> Principal | None:
    link = ShareLink.objects.filter(secret_sha256=sha256(presented)).first()
    if link is None or link.revoked_at is not None or link.expires_at <= timezone.now():
        return None
    grant = ShareGrant(link_id=link.id, project_id=link.project_id, model_ids=tuple(link.model_ids), downloads=link.downloads)
    return Principal(name=f"share link {link.id}", address=address, via=Via.SHARE_LINK, role=ServerRole.GUEST,
                     read_only=True, share=grant)


def anonymous(address: str) -> Principal:
    """Nobody in particular, on a route that needs no identity: may read public pages, nothing else."""
    return Principal(name="anonymous", address=address, via=Via.OPEN, role=ServerRole.GUEST, read_only=True)


def anonymous_reader(address: str) -> Principal:
    """Nobody in particular reading every model: the spec's anonymous geometry GETs when no accounts exist."""
    return Principal(name="anonymous", address=address, via=Via.OPEN, read_only=True)


def identify(request, *, address: str, authorization: str) -> Principal | NoIdentity | None:
    """The principal the request's credentials name, NoIdentity for a credential that fails, None for a request
    that carries none (the caller decides what nobody may do)."""
    scheme, _, presented = authorization.partition(" ")
    presented = presented.strip() if scheme.lower() == "bearer" else ""
    operator_token = settings.VIEWER.apiToken
    if presented:
        if operator_token and hmac.compare_digest(presented.encode(), operator_token.encode()):
            return Principal(name=TOKEN_PRINCIPAL, address=address, via=Via.OPERATOR)
        if presented.startswith(TOKEN_PREFIX):
            return _personal_token(presented, address)
        if presented.startswith(OAUTH_PREFIX):
            return _oauth_token(presented, address)
        if operator_token or accounts_enabled():
            return NoIdentity("missing or invalid bearer token", presented=True)
    elif authorization:
        return NoIdentity("the Authorization header must be 'Bearer <token>'", presented=True)
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return user_principal(user, address, Via.SESSION)
    share_secret = request.COOKIES.get(SHARE_COOKIE, "")
    if share_secret.startswith(SHARE_PREFIX):
        return share_link_principal(share_secret, address) or NoIdentity("this share link has expired or was revoked", presented=False, stale_share_link=True)
    if not operator_token and not accounts_enabled():
        return Principal(name=DEFAULT_AUTHOR, address=address, via=Via.OPEN)
    return None


def refreshed(principal: Principal, session_key: str | None) -> Principal | None:
    """The principal as it stands now, for work that outlives the request's check (an open event stream): None when
    its credential no longer holds (a revoked or expired token or share link, a session signed out, a disabled or
    deleted account); otherwise rebuilt from the account (its server role may have changed)."""
    now = timezone.now()
    if principal.share is not None:
        link = ShareLink.objects.filter(pk=principal.share.link_id, revoked_at__isnull=True, expires_at__gt=now).exists()
        return principal if link else None
    if principal.user_id is None:
        return principal  # the operator's token, the open mode: nothing to revoke
    if principal.via == Via.TOKEN:
        token = ApiToken.objects.filter(pk=principal.token_id, revoked_at__isnull=True).values_list("expires_at", flat=True)
        if not token or (token[0] is not None and token[0] <= now):
            return None
    elif principal.via == Via.OAUTH and not access_token_alive(principal.token_id):
        return None
    elif principal.via == Via.SESSION and not (session_key and import_module(settings.SESSION_ENGINE).SessionStore().exists(session_key)):
        return None
    user = get_user_model().objects.filter(pk=principal.user_id, is_active=True).first()
    if user is None:
        return None
    return user_principal(user, principal.address, principal.via, read_only=principal.read_only, token_id=principal.token_id)
