"""The test runs' own database set-up: on PostgreSQL, a transactional test's flush deletes rows instead of
truncating tables (tests/pg_backend), and leaves every table empty, as Django's flush does."""

import pytest
from django.contrib.auth.models import User
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
