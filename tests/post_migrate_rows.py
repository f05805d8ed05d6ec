"""The rows Django's post_migrate makes, put back after a transactional test's flush instead of made again.

A transactional test ends with a flush of every table, then Django sends post_migrate, whose two receivers here
(auth's create_permissions, which calls contenttypes' create_contenttypes first) query and re-create the 51 content
types and 204 permissions app by app: ~13 % of the in-process tests' processor time (a py-spy profile of
`make test-fast`). The rows are the same after every flush, so they are read once, right after the test database is
migrated, and inserted again after each flush (in one transaction, with their first ids; PostgreSQL's sequences
then moved past them, as the signal's inserts would have moved them).

Used only while post_migrate has exactly those two receivers: while another is connected (another app's, a test's
own), Django's signal runs instead. tests/core/test_test_database.py compares the rows with what the signal makes.
"""

from __future__ import annotations

import weakref

from django.contrib.auth.management import create_permissions
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.management import create_contenttypes
from django.contrib.contenttypes.models import ContentType
from django.core.management.color import no_style
from django.core.management.commands import flush
from django.db import connections, transaction
from django.db.models.signals import post_migrate

DJANGO_POST_MIGRATE_RECEIVERS = frozenset({create_permissions, create_contenttypes})
POST_MIGRATE_MODELS = (ContentType, Permission)  # in the order of their foreign key


def post_migrate_receivers() -> set:
    return {receiver() if isinstance(receiver, weakref.ref) else receiver for _key, receiver, *_rest in post_migrate.receivers}


def _columns_sql(connection, model) -> str:
    return ", ".join(connection.ops.quote_name(field.column) for field in model._meta.concrete_fields)


def read_rows(database: str) -> dict[type, list[tuple]]:
    """model -> its rows as they are now (every concrete column, in field order), for the models post_migrate fills."""
    connection = connections[database]
    taken = {}
    with connection.cursor() as cursor:
        for model in POST_MIGRATE_MODELS:
            columns_sql = _columns_sql(connection, model)
            table, key = connection.ops.quote_name(model._meta.db_table), connection.ops.quote_name(model._meta.pk.column)
            cursor.execute(f"SELECT {columns_sql} FROM {table} ORDER BY {key}")
            taken[model] = cursor.fetchall()
    return taken


class PostMigrateRows:
    """Replaces flush's emit_post_migrate_signal while installed; `rows[database]` are read at install."""

    def __init__(self):
        self.rows: dict[str, dict[type, list[tuple]]] = {}
        self._django_emit = None

    def install(self, databases) -> None:
        """Does nothing while post_migrate has receivers other than Django's two."""
        if post_migrate_receivers() != DJANGO_POST_MIGRATE_RECEIVERS:
            return
        self.rows = {database: read_rows(database) for database in databases}
        self._django_emit, flush.emit_post_migrate_signal = flush.emit_post_migrate_signal, self.put_back

    def uninstall(self) -> None:
        if self._django_emit is not None:
            flush.emit_post_migrate_signal, self._django_emit = self._django_emit, None

    def put_back(self, verbosity, interactive, db, **kwargs):
        if db not in self.rows or post_migrate_receivers() != DJANGO_POST_MIGRATE_RECEIVERS:
            return self._django_emit(verbosity, interactive, db, **kwargs)
        connection = connections[db]
        with transaction.atomic(using=db), connection.cursor() as cursor:
            for model, rows in self.rows[db].items():
                if rows:
                    marks = ", ".join(["%s"] * len(rows[0]))
                    cursor.executemany(f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({_columns_sql(connection, model)}) VALUES ({marks})", rows)
            for statement in connection.ops.sequence_reset_sql(no_style(), POST_MIGRATE_MODELS):
                cursor.execute(statement)
        ContentType.objects.clear_cache()  # as create_contenttypes does
