"""The operator's accounts command on the host: the same use cases as /api/v1/users, signed as the operator.

    manage.py user create ana --role admin --email ana@example.org --display-name "Ana Lima"   (asks for the password)
    printf '%s\\n' "$PASS" | manage.py user update ana --password -                          (reads it from stdin)
    manage.py user list
    manage.py user delete ana
"""

from __future__ import annotations

import getpass
import sys

from django.core.management.base import BaseCommand, CommandError

from accounts_app import services
from accounts_app.identity import server_role_of
from accounts_app.roles import ServerRole
from api.principal import OPERATOR, Principal, Via
from core.errors import ApplicationError

FROM_STDIN = "-"


class Command(BaseCommand):
    help = "Create, change, delete or list the accounts people sign in with (server roles admin, user, guest)."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        for action in ("create", "update"):
            sub = actions.add_parser(action, help=f"{action} an account")
            sub.add_argument("username")
            sub.add_argument("--role", choices=[role.value for role in ServerRole])
            sub.add_argument("--email")
            sub.add_argument("--display-name")
            sub.add_argument("--password", help="the password; '-' reads it from stdin; without it create prompts for it "
                             "(or, on a terminal-less stdin, reads it), update leaves it")
            if action == "create":
                sub.add_argument("--no-password", action="store_true", help="no password: the account signs in only through single sign-on")
        actions.add_parser("delete", help="delete an account").add_argument("username")
        actions.add_parser("list", help="list the accounts")

    def handle(self, *args, action, **options):
        operator = Principal(name=OPERATOR, via=Via.OPERATOR)
        try:
            if action == "list":
                return self.list_users()
            if action == "delete":
                services.user_delete(operator, options["username"])
                self.stdout.write(f"deleted {options['username']}")
                return None
            changes = {key: options[option] for key, option in (("role", "role"), ("email", "email"), ("display_name", "display_name"))
                       if options[option] is not None}
            if action == "create":
                password = None if options["no_password"] else self.password(options["password"], prompt_missing=True)
                user = services.user_create(operator, username=options["username"], password=password, **changes)
            else:
                password = self.password(options["password"], prompt_missing=False)
                user = services.user_update(operator, options["username"], **changes, **({} if password is None else {"password": password}))
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"{action}d {user.get_username()} ({server_role_of(user)})")
        return None

    def password(self, given: str | None, *, prompt_missing: bool) -> str | None:
        if given is None and not prompt_missing:
            return None
        if given is not None and given != FROM_STDIN:
            return given
        if given is None and sys.stdin.isatty():
            first, second = getpass.getpass("Password: "), getpass.getpass("Password (again): ")
            if first != second:
                raise CommandError("the two passwords differ")
            return first
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise CommandError("no password on stdin (or pass --no-password)")
        return password

    def list_users(self) -> None:
        for user in services.user_list():
            name = services.display_name_of(user)
            self.stdout.write("\t".join([user.get_username(), str(server_role_of(user)), user.email, name, "" if user.is_active else "inactive"]).rstrip())
