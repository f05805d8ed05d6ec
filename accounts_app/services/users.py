"""Use cases of accounts: an operator or a server admin creates, changes and deletes the people who may sign in.

Django's User is the account (password hashing, sign-in, the admin); Account holds the server role and the display
name. The server role admin is Django's superuser and staff (the admin site) and nothing else is: the two are set
together here, never apart.

    >>> user = user_create(Principal.of(request), username="ana", password="a long pass phrase", role="user")
    >>> user_update(Principal.of(request), "ana", role="guest")    # audited as user.role
    >>> user_delete(Principal.of(request), "ana")                  # audited as user.delete
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from accounts_app.audit import audit_record
from accounts_app.identity import server_role_of
from accounts_app.models import Account
from accounts_app.roles import ServerRole
from api.principal import Principal
from core.errors import Conflict, Invalid, NotFound

User = get_user_model()

NO_CHANGE = object()  # an update's field that was not sent


def invalid_field(field: str, messages: list[str]) -> Invalid:
    """40001 naming the field first, as the API edge names a serializer's first failing field."""
    return Invalid(f"{field}: {' '.join(messages)}", data={field: messages})


def account_of(user) -> Account | None:
    return getattr(user, "account", None)


def display_name_of(user) -> str:
    account = account_of(user)
    return (account.display_name if account else "") or user.get_full_name()


def user_list():
    return User.objects.select_related("account").order_by(User.USERNAME_FIELD)


def user_get(username: str):
    user = User.objects.select_related("account").filter(**{User.USERNAME_FIELD: username}).first()
    if user is None:
        raise NotFound(f"user {username!r} not found")
    return user


def _clean_username(username: str) -> str:
    field = User._meta.get_field(User.USERNAME_FIELD)
    try:
        username = field.clean(username, None)
    except ValidationError as exc:
        raise invalid_field("username", exc.messages) from exc
    if User.objects.filter(**{f"{User.USERNAME_FIELD}__iexact": username}).exists():
        # case-insensitively: "Ana" and "ana" would sign different records with names people cannot tell apart
        raise Conflict(f"username: a user {username!r} exists already", data={"field": "username"})
    return username


def _set_password(user, password: str | None) -> None:
    if password is None:
        user.set_unusable_password()  # signs in only through single sign-on until a password is set
        return
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise invalid_field("password", exc.messages) from exc
    user.set_password(password)


def _set_role(user, role: str) -> None:
    is_admin = ServerRole(role) == ServerRole.ADMIN
    user.is_superuser = user.is_staff = is_admin


def _admins_besides(user) -> bool:
    return User.objects.filter(is_superuser=True, is_active=True).exclude(pk=user.pk).exists()


@transaction.atomic
def user_create(by: Principal, *, username: str, password: str | None = None, email: str = "", display_name: str = "",
                role: str = ServerRole.USER):
    """A new account; without a password it can sign in only through single sign-on."""
    user = User(**{User.USERNAME_FIELD: _clean_username(username)}, email=email or "")
    _set_password(user, password)
    _set_role(user, role)
    user.save()
    Account.objects.create(user=user, role=ServerRole(role), display_name=display_name or "")
    audit_record(by, "user.create", object=f"user:{user.get_username()}", detail={"role": str(role)})
    return user


@transaction.atomic
def user_update(by: Principal, username: str, *, password=NO_CHANGE, email=NO_CHANGE, display_name=NO_CHANGE, role=NO_CHANGE):
    """Changes what is given; a role change is audited (user.role), and the last admin is never demoted."""
    user = user_get(username)
    account = account_of(user) or Account(user=user, role=server_role_of(user))
    previous_role = server_role_of(user)
    if password is not NO_CHANGE:
        _set_password(user, password)
    if email is not NO_CHANGE:
        user.email = email or ""
    if display_name is not NO_CHANGE:
        account.display_name = display_name or ""
    if role is not NO_CHANGE and ServerRole(role) != previous_role:
        if previous_role == ServerRole.ADMIN and not _admins_besides(user):
            raise Conflict(f"{username} is the last admin: make another user admin first")
        _set_role(user, role)
        account.role = ServerRole(role)
        audit_record(by, "user.role", object=f"user:{username}", detail={"from": str(previous_role), "to": str(role)})
    user.save()
    account.save()
    return user


@transaction.atomic
def user_delete(by: Principal, username: str) -> None:
    """Deletes the account with its memberships and tokens; the records it signed keep its name."""
    user = user_get(username)
    if by.user_id is not None and by.user_id == user.pk:
        raise Conflict("you cannot delete your own account")
    if server_role_of(user) == ServerRole.ADMIN and not _admins_besides(user):
        raise Conflict(f"{username} is the last admin: make another user admin first")
    user.delete()
    audit_record(by, "user.delete", object=f"user:{username}")


def server_role_sync(user) -> None:
    """After the admin site changed a user: the Account's role decides Django's superuser and staff flags."""
    account = account_of(user)
    if account is None:
        Account.objects.create(user=user, role=ServerRole.ADMIN if user.is_superuser else ServerRole.USER)
        return
    is_admin = account.role == ServerRole.ADMIN
    if (user.is_superuser, user.is_staff) != (is_admin, is_admin):
        User.objects.filter(pk=user.pk).update(is_superuser=is_admin, is_staff=is_admin)
