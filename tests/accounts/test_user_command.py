"""`manage.py user create|update|delete|list`: the operator's accounts on the host, through the same use cases as the
API (validated, audited as the operator)."""

from __future__ import annotations

import io
import sys

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from accounts_app.models import AuditEvent
from tests.accounts.people import PASSWORD, person

pytestmark = pytest.mark.django_db
User = get_user_model()


def run(*args: str, stdin: str | None = None, monkeypatch=None) -> str:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    out = io.StringIO()
    call_command("user", *args, stdout=out)
    return out.getvalue()


def test_create_with_every_option():
    output = run("create", "ana", "--role", "admin", "--password", PASSWORD, "--email", "ana@example.org", "--display-name", "Ana Lima")
    assert output.strip() == "created ana (admin)"
    ana = User.objects.get(username="ana")
    assert ana.check_password(PASSWORD) and ana.is_superuser and ana.is_staff
    assert (ana.email, ana.account.display_name, ana.account.role) == ("ana@example.org", "Ana Lima", "admin")
    event = AuditEvent.objects.get(action="user.create")
    assert (event.username, event.via, event.object) == ("operator", "operator", "user:ana")


@pytest.mark.parametrize("args", [("--password", "-"), ()])
def test_create_reads_the_password_from_stdin(monkeypatch, args):
    assert run("create", "ben", *args, stdin=PASSWORD + "\n", monkeypatch=monkeypatch).strip() == "created ben (user)"
    assert User.objects.get(username="ben").check_password(PASSWORD)


def test_create_without_a_password():
    run("create", "sso", "--role", "guest", "--no-password")
    assert not User.objects.get(username="sso").has_usable_password()


def test_an_empty_stdin_is_no_password(monkeypatch):
    with pytest.raises(CommandError, match="no password"):
        run("create", "carl", stdin="", monkeypatch=monkeypatch)
    assert not User.objects.filter(username="carl").exists()


def test_refusals_are_command_errors(settings):
    person("dana")
    with pytest.raises(CommandError, match="exists"):
        run("create", "dana", "--password", PASSWORD)
    with pytest.raises(CommandError, match="username"):
        run("create", "two words", "--password", PASSWORD)
    settings.AUTH_PASSWORD_VALIDATORS = [{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}]
    with pytest.raises(CommandError, match="password: .*too short"):
        run("create", "erin", "--password", "short")
    with pytest.raises(CommandError):
        run("create", "fred", "--role", "boss", "--password", PASSWORD)
    with pytest.raises(CommandError, match="not found"):
        run("update", "nobody", "--role", "user")
    assert set(User.objects.values_list("username", flat=True)) == {"dana"}


def test_update_changes_only_what_is_given(monkeypatch):
    person("gina", "admin")
    person("root", "admin")
    assert run("update", "gina", "--role", "guest", "--display-name", "Gina").strip() == "updated gina (guest)"
    gina = User.objects.get(username="gina")
    assert not gina.is_superuser and not gina.is_staff and gina.account.display_name == "Gina" and gina.check_password(PASSWORD)
    assert AuditEvent.objects.get(action="user.role").detail == {"from": "admin", "to": "guest"}
    run("update", "gina", "--password", "-", stdin="another long pass phrase\n", monkeypatch=monkeypatch)
    assert User.objects.get(username="gina").check_password("another long pass phrase")


def test_delete_and_the_last_admin():
    person("root", "admin")
    person("hana")
    assert run("delete", "hana").strip() == "deleted hana"
    assert AuditEvent.objects.filter(action="user.delete", object="user:hana").exists()
    with pytest.raises(CommandError, match="last admin"):
        run("delete", "root")
    with pytest.raises(CommandError, match="last admin"):
        run("update", "root", "--role", "user")
    assert User.objects.get(username="root").is_superuser


def test_list():
    person("root", "admin", display_name="Root")
    ivan = person("ivan", "guest")
    ivan.is_active = False
    ivan.save()
    assert run("list").splitlines() == ["ivan\tguest\t\t\tinactive", "root\tadmin\t\tRoot"]
