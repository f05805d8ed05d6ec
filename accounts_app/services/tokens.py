"""Use cases of personal API tokens: a person makes named tokens (read or write, optionally expiring), sees each
secret once, lists and revokes them. Only the secret's SHA-256 is kept (accounts_app/secrets.py).

    >>> owner = token_owner(Principal.of(request), request, username="", password="")   # the signed-in caller
    >>> token, secret = token_create(Principal.of(request), owner, name="ci", scope="read", expires_at=None)
    >>> secret
    'bmr_...'                                   # sent as Authorization: Bearer bmr_...
    >>> token_revoke(Principal.of(request), token.id)
"""

from __future__ import annotations

from django.contrib.auth import authenticate, get_user_model
from django.utils import timezone

from accounts_app.audit import audit_record
from accounts_app.mode import accounts_enabled
from accounts_app.models import ApiToken
from accounts_app.policy import Forbidden
from accounts_app.secrets import TOKEN_PREFIX, new_secret, sha256
from accounts_app.services.users import invalid_field
from api.principal import Principal, Via
from core.errors import TOO_MANY_REQUESTS, UNAUTHORIZED, ApplicationError, Invalid, NotFound

User = get_user_model()


class NotSignedIn(ApplicationError):
    code = UNAUTHORIZED


class LockedOut(ApplicationError):
    code = TOO_MANY_REQUESTS


def token_owner(principal: Principal, http_request, *, username: str = "", password: str = ""):
    """Whose token the caller may make: the account named by username + password (checked through Django's
    authenticate, which django-axes throttles per username and address on `http_request`), else the caller's own."""
    if username or password:
        if not (username and password):
            raise Invalid("send both username and password, or neither (then the token is the caller's)")
        user = authenticate(request=http_request, username=username, password=password)
        if user is None:
            if getattr(http_request, "axes_locked_out", False):
                raise LockedOut("too many failed sign-ins for this username from this address: try again later")
            raise NotSignedIn("wrong username or password")
        return user
    if principal.has_account:
        return User.objects.get(pk=principal.user_id)
    if principal.via == Via.OPERATOR or not accounts_enabled():
        raise Invalid("a token belongs to an account: the operator's token and the open mode have none (sign in, or send username and password)")
    raise NotSignedIn("sign in, or send username and password")


def token_create(by: Principal, owner, *, name: str, scope: str, expires_at=None) -> tuple[ApiToken, str]:
    """A new token of `owner` and its secret, which nobody can read again. A read-only token makes no write token; an
    OAuth2 client's access token makes none at all (it would outlive the client's consent, its revoke and its app)."""
    if by.via == Via.OAUTH:
        raise Forbidden("an OAuth2 client's access token cannot make personal tokens: sign in, or use a personal token")
    if by.read_only and by.user_id == owner.pk and scope == ApiToken.Scope.WRITE:
        raise Forbidden("a read-only token cannot make a write token")
    if expires_at is not None and expires_at <= timezone.now():
        raise invalid_field("expiresAt", ["must lie in the future"])
    _refuse_outliving_the_caller(by, owner, expires_at)
    secret = new_secret(TOKEN_PREFIX)
    token = ApiToken.objects.create(user=owner, name=name, scope=scope, secret_sha256=sha256(secret), expires_at=expires_at)
    audit_record(_acting(by, owner), "token.create", object=f"token:{token.id}", detail={"name": name, "scope": scope})
    return token, secret


def _refuse_outliving_the_caller(by: Principal, owner, expires_at) -> None:
    """A token that makes a token of its own account cannot hand out more time than it has: a stolen token that
    expires soon must not mint one that never does."""
    if by.via != Via.TOKEN or by.user_id != owner.pk:
        return
    caller_expiry = ApiToken.objects.filter(pk=by.token_id).values_list("expires_at", flat=True).first()
    if caller_expiry is not None and (expires_at is None or expires_at > caller_expiry):
        raise invalid_field("expiresAt", [f"must be given and lie no later than {caller_expiry.isoformat()}, when the token making it expires"])


def _acting(by: Principal, owner) -> Principal:
    """Who made the token: the caller, or the account whose password came in the body."""
    if by.user_id == owner.pk:
        return by
    return Principal(name=owner.get_username(), address=by.address, via="password", user_id=owner.pk)


def token_list(user_id: int):
    return ApiToken.objects.filter(user_id=user_id)


def token_revoke(by: Principal, token_id: str) -> ApiToken:
    """Revokes one of the caller's tokens (someone else's is not found); revoking again changes nothing."""
    token = ApiToken.objects.filter(pk=token_id, user_id=by.user_id).first() if by.has_account else None
    if token is None:
        raise NotFound(f"token {token_id} not found")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(by, "token.revoke", object=f"token:{token.id}")
    return token
