"""The test runs' own database set-up: on PostgreSQL, a transactional test's flush deletes rows instead of
truncating tables (tests/pg_backend), and leaves every table empty, as Django's flush does."""

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.db.models import ForeignKey

pytestmark = pytest.mark.storage


@pytest.mark.django_db(transaction=True)
def test_the_flush_between_tests_empties_every_table():
    user = User.objects.create_user("flushed")
    user.groups.create(name="flushed-group")  # a row that refers to others: the deletes' order must not matter
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    call_command("flush", verbosity=0, interactive=False, inhibit_post_migrate=True)
    with connection.cursor() as cursor:
        left = {}
        for table in tables:
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
            left[table] = cursor.fetchone()[0]
    assert not {table: rows for table, rows in left.items() if rows}
    assert any(isinstance(field, ForeignKey) for field in User.groups.through._meta.get_fields())


def test_on_postgresql_the_flush_deletes_rows_and_keeps_the_truncate_for_a_reset_of_sequences():
    if connection.vendor != "postgresql":
        pytest.skip("the SQLite run keeps Django's own flush")
    assert connection.settings_dict["ENGINE"] == "tests.pg_backend"
    from django.core.management.color import no_style

    assert connection.ops.sql_flush(no_style(), ["a", "b"]) == ['DELETE FROM "a";', 'DELETE FROM "b";']
    assert connection.ops.sql_flush(no_style(), ["a"], reset_sequences=True)[0].startswith("TRUNCATE")


def _natural_rows() -> tuple[set, set]:
    types = set(ContentType.objects.values_list("app_label", "model"))
    permissions = set(Permission.objects.values_list("content_type__app_label", "content_type__model", "codename", "name"))
    return types, permissions


@pytest.mark.django_db(transaction=True)
def test_after_a_flush_the_rows_put_back_are_those_post_migrate_makes():
    from django.core.management.commands import flush
    from django.core.management.sql import emit_post_migrate_signal

    from tests.post_migrate_rows import PostMigrateRows

    rows = getattr(flush.emit_post_migrate_signal, "__self__", None)
    assert isinstance(rows, PostMigrateRows)  # installed for this run (tests/conftest.py)
    call_command("flush", verbosity=0, interactive=False, inhibit_post_migrate=True)
    emit_post_migrate_signal(0, False, "default")
    made = _natural_rows()
    django_emit, rows._django_emit = rows._django_emit, None  # the signal must not be what puts them back
    try:
        call_command("flush", verbosity=0, interactive=False, reset_sequences=True)  # a flush after a transactional test
    finally:
        rows._django_emit = django_emit
    assert _natural_rows() == made
    assert len(made[0]) > 40 and len(made[1]) > 150
    Permission.objects.create(codename="after_flush", name="after flush", content_type=ContentType.objects.get_for_model(User))


@pytest.mark.django_db(transaction=True)
def test_another_post_migrate_receiver_brings_the_signal_back():
    from django.db.models.signals import post_migrate

    called = []

    def receiver(**kwargs):
        called.append(kwargs["using"])

    post_migrate.connect(receiver)
    try:
        call_command("flush", verbosity=0, interactive=False)
    finally:
        post_migrate.disconnect(receiver)
    assert called  # once per app config, as Django sends it
    assert len(_natural_rows()[0]) > 40
