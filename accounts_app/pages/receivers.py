"""The audit trail of signing in and out, from Django's own signals: every sign-in path (the sign-in page, single
sign-on, a token made with a password, the admin) sends them, so each is recorded once, here."""

from __future__ import annotations

from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver

from accounts_app.audit import audit_record
from api.principal import Principal, Via


def _address(request) -> str:
    return request.META.get("REMOTE_ADDR", "") if request is not None else ""


def _signed_in(user, request) -> Principal:
    return Principal(name=user.get_username(), address=_address(request), via=Via.SESSION, user_id=user.pk)


def _sign_in_method(user) -> str:
    return "single sign-on" if "oidc" in getattr(user, "backend", "").lower() else "password"


@receiver(user_logged_in, dispatch_uid="accounts.audit.sign-in")
def record_sign_in(sender, request, user, **kwargs):
    audit_record(_signed_in(user, request), "sign-in", object=f"user:{user.get_username()}",
                 detail={"method": _sign_in_method(user)})


@receiver(user_login_failed, dispatch_uid="accounts.audit.sign-in-failed")
def record_failed_sign_in(sender, credentials, request=None, **kwargs):
    username = str(credentials.get("username") or "")
    attempt = Principal(name=username or "anonymous", address=_address(request), via=Via.SESSION)
    audit_record(attempt, "sign-in.failed", object=f"user:{username}" if username else "",
                 detail={"path": request.path if request is not None else ""})


@receiver(user_logged_out, dispatch_uid="accounts.audit.sign-out")
def record_sign_out(sender, request, user, **kwargs):
    if user is not None:
        audit_record(_signed_in(user, request), "sign-out", object=f"user:{user.get_username()}")
