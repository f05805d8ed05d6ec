"""The test runs' PostgreSQL backend: Django's own, except that a transactional test's flush deletes the rows of each
table instead of truncating the tables. PostgreSQL's TRUNCATE of the ~55 tables took 320-380 ms here (it makes new
files for every table), a DELETE of their few rows 7-20 ms, and the flush follows every transactional test (~430 in
the storage run). Same rows left (none), same sequences (a flush without reset_sequences keeps them either way);
Django's foreign keys are deferred, so the order of the deletes does not matter. Not used outside tests/settings.py."""

from django.db.backends.postgresql import base


class DatabaseOperations(base.DatabaseOperations):
    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade or not tables:  # as Django does it: TRUNCATE ... RESTART IDENTITY / CASCADE
            return super().sql_flush(style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in tables]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations
