"""The rows Django's post_migrate makes, put back after a transactional test's flush instead of made again.

A transactional test ends with a flush of every table, then Django sends post_migrate, whose two receivers here
(auth's create_permissions, contenttypes' create_contenttypes) query and re-create the 51 content types and 204
permissions app by app: ~15 % of the in-process tests' processor time (a py-spy profile of `make test-fast`). The
rows are the same after every flush, so they are read once, right after the test database is migrated, and inserted
again in one statement per table, with their first ids.

Used only when post_migrate has exactly those two receivers: a receiver added later (another app, a test's own)
brings Django's signal back for the whole run. tests/core/test_test_database.py compares the rows with what the
signal makes.
"""

from __future__ import annotations

import weakref

from django.contrib.auth.management import create_permissions
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.management import create_contenttypes
from django.contrib.contenttypes.models import ContentType
from django.core.management.commands import flush
from django.db import connections
from django.db.models.signals import post_migrate

RECEIVERS = frozenset({create_permissions, create_contenttypes})
MODELS = (ContentType, Permission)  # in the order of their foreign key


def post_migrate_receivers() -> set:
    return {receiver() if isinstance(receiver, weakref.ref) else receiver for _key, receiver, *_rest in post_migrate.receivers}


def read_rows(database: str) -> dict[str, tuple[list[str], list[tuple]]]:
    """table -> (columns, rows) of the tables post_migrate fills, as they are now."""
    connection = connections[database]
    taken = {}
    with connection.cursor() as cursor:
        for model in MODELS:
            table = model._meta.db_table
            columns = [field.column for field in model._meta.concrete_fields]
            quoted = ", ".join(connection.ops.quote_name(column) for column in columns)
            cursor.execute(f"SELECT {quoted} FROM {connection.ops.quote_name(table)} ORDER BY {connection.ops.quote_name(model._meta.pk.column)}")
            taken[table] = (columns, cursor.fetchall())
    return taken


class PostMigrateRows:
    """Replaces flush's emit_post_migrate_signal while installed; `rows[database]` are read at install."""

    def __init__(self):
        self.rows: dict[str, dict] = {}
        self._signal = None

    def install(self, databases) -> bool:
        if post_migrate_receivers() != RECEIVERS:
            return False
        self.rows = {database: read_rows(database) for database in databases}
        self._signal, flush.emit_post_migrate_signal = flush.emit_post_migrate_signal, self.put_back
        return True

    def uninstall(self) -> None:
        if self._signal is not None:
            flush.emit_post_migrate_signal, self._signal = self._signal, None

    def put_back(self, verbosity, interactive, db, **kwargs):
        if db not in self.rows or post_migrate_receivers() != RECEIVERS:
            return self._signal(verbosity, interactive, db, **kwargs)
        connection = connections[db]
        with connection.cursor() as cursor:
            for table, (columns, rows) in self.rows[db].items():
                if rows:
                    quoted = ", ".join(connection.ops.quote_name(column) for column in columns)
                    marks = ", ".join(["%s"] * len(columns))
                    cursor.executemany(f"INSERT INTO {connection.ops.quote_name(table)} ({quoted}) VALUES ({marks})", rows)
        ContentType.objects.clear_cache()  # as create_contenttypes does
