"""A signed-in person changes their own password: the current one checked the way a sign-in is (django-axes counts a
wrong one towards the same lockout), the new one against the configured password validators."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import authenticate, get_user_model, update_session_auth_hash
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError

from accounts_app.audit import audit_record
from accounts_app.policy import Forbidden
from api.principal import Principal, Via
from core.errors import TOO_MANY_REQUESTS, ApplicationError, Invalid


def lockout_message() -> str:
    minutes = max(1, round(settings.AXES_COOLOFF_TIME.total_seconds() / 60))
    return f"Too many failed attempts: try again in {minutes} minutes."


def locked_out(request) -> bool:
    """Whether django-axes refused the last authenticate() on `request` because of earlier failures. The flag is
    taken off the request: the caller answers in its own words, and AxesMiddleware would otherwise replace the answer
    with its own plain-text page."""
    return bool(request.__dict__.pop("axes_locked_out", False))


class TooManyAttempts(ApplicationError):
    code = TOO_MANY_REQUESTS


def change_password(request, principal: Principal, old_password: str, new_password: str) -> None:
    """`request` is Django's HttpRequest (axes counts failures on it; the session stays signed in after the change);
    the user is the session's principal's (DRF replaces request.user with its own, None, here)."""
    if principal.via != Via.SESSION:
        raise Forbidden("the password is changed from a signed-in browser session, not with a token")
    user = get_user_model().objects.get(pk=principal.user_id)
    if not new_password:
        raise Invalid("newPassword: a new password is required", data={"field": "newPassword"})
    checked = authenticate(request=request, username=user.get_username(), password=old_password or "")
    if locked_out(request):
        raise TooManyAttempts(lockout_message())
    if checked is None or checked.pk != user.pk:
        raise Invalid("oldPassword: the current password is wrong", data={"field": "oldPassword"})
    try:
        validate_password(new_password, user)
    except ValidationError as error:
        raise Invalid("newPassword: " + " ".join(error.messages), data={"field": "newPassword", "problems": error.messages}) from None
    user.set_password(new_password)
    user.save(update_fields=["password"])
    request.user = user  # update_session_auth_hash renews the session's hash only for request.user
    update_session_auth_hash(request, user)
    audit_record(principal, "password.change", object=f"user:{user.get_username()}")
