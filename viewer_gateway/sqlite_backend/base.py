"""SQLite with the write transactions of one process taken in turn.

SQLite lets one writer in at a time; the others wait in its busy handler, which sleeps in growing steps and wakes
without any order, so under load some writers starve for seconds while others go through. Here the threads of a
process queue on one lock before BEGIN IMMEDIATE and are woken as it is released; only writers of other processes
(the conversion workers, rarely) still meet the busy handler."""

import threading

from django.db.backends.sqlite3 import base

_write_turn = threading.Lock()


class DatabaseWrapper(base.DatabaseWrapper):
    _holds_write_turn = False

    def _start_transaction_under_autocommit(self):
        _write_turn.acquire()
        self._holds_write_turn = True
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._end_write_turn()
            raise

    def _end_write_turn(self):
        if self._holds_write_turn:
            self._holds_write_turn = False
            _write_turn.release()

    def _commit(self):
        try:
            return super()._commit()
        finally:
            self._end_write_turn()

    def _rollback(self):
        try:
            return super()._rollback()
        finally:
            self._end_write_turn()

    def _close(self):
        try:
            return super()._close()
        finally:
            self._end_write_turn()
