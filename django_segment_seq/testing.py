"""Helpers for a project's own test suite: sequences that start at their minimum in every test.

Numbers are cached per process and ranges are committed on connections of their own, so neither is
rolled back with a test's transaction. `reset_sequences()` forgets the cache and puts the rows back;
`clean_after_test()` also removes rows committed outside the test's transaction while it ran (and
leaves the rows a TestCase class's transaction holds, from its setUpTestData, to that transaction's
rollback). The runner (or its mixin, in a project's own runner) does that around every database test and
test class, as the pytest plugin does; SequenceTestCaseMixin does it for one class under any runner. Both
close the private connections before the test databases are dropped.
"""

from __future__ import annotations

import datetime
from contextlib import suppress
from typing import Any

from django.db import DatabaseError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Q
from django.test.runner import DiscoverRunner as DjangoDiscoverRunner
from django.test.runner import ParallelTestSuite
from django.utils import timezone

from django_segment_seq import testcase_hooks
from django_segment_seq.allocator.callers import Session, holds_row, session
from django_segment_seq.allocator.connections import pool
from django_segment_seq.api import clear_cache, close_connections
from django_segment_seq.db.cleanup import CleanupStatements
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.statements import BEGIN, COMMIT, ROLLBACK
from django_segment_seq.db.table import Sequence

__all__ = [
    "DiscoverRunner",
    "SequenceTestCaseMixin",
    "SequenceTestRunnerMixin",
    "begin_test",
    "clean_after_test",
    "end_test",
    "reset_sequences",
]

# When the earliest database test (or test class) whose leftovers are not cleaned up durably yet began.
_since: datetime.datetime | None = None
# When the current test began: rows committed outside its transaction since then are its leftovers.
_test_began: datetime.datetime | None = None


def reset_sequences(*names: str, using: str | None = None) -> None:
    """Forget this process's cached ranges and make each named sequence (all when none) hand out its min_value next.

    The rows are written with the caller's connection: inside a test's transaction the reset is
    rolled back with it, which is what a `setUp` wants. Per-period and per-scope rows of a named sequence are
    reset too.
    """

    clear_cache()
    rows = Sequence.objects.using(using or sequence_database())
    if names:
        rows = rows.filter(Q(name__in=names) | Q(base_name__in=names))
    rows.update(value=F("min_value") - 1, version=F("version") + 1)


def begin_test() -> None:
    """Before a database test (and before a test class's setUpClass): forget the cache, note when it began."""
    global _since, _test_began
    clear_cache()
    _test_began = timezone.now()
    if _since is None:
        _since = _test_began


def end_test() -> None:
    """After a database test, once its own transaction is rolled back: clean up, unless already done.

    Inside a TestCase class only what the test left committed is cleaned; the rest once the class's
    transaction is rolled back too (the mixin and the plugin call this again then).
    """
    global _since
    if _since is not None and clean_after_test(_since, test_began=_test_began):
        _since = None


def clean_after_test(
    since: datetime.datetime, using: str | None = None, *, test_began: datetime.datetime | None = None
) -> bool:
    """After a test: drop rows created since `since` outside its transaction, reset the rest, forget the cache.

    A row the allocator created on a private connection (first use of a sequence inside a test's
    transaction) is committed and would outlive the test. When the test's connection is still inside
    a transaction (Django's TestCase keeps one open per class, with the rows of its setUpTestData),
    only the rows committed outside it since `test_began` (default: `since`) are cleaned, and never
    one that transaction holds: its rollback restores those. On SQLite that is done inside the
    transaction, which may hold the file's only write lock; elsewhere on a private connection. False
    then says the whole cleanup is still due once the transaction is rolled back. No lock is waited
    for longer than SEGMENT_SEQ's LOCK_TIMEOUT.
    """
    clear_cache()
    alias = using or sequence_database()
    caller = connections[alias]
    durable = session(caller) is Session.IDLE
    if durable:
        _clean_all(caller, since)
    elif caller.vendor == "sqlite":
        _clean_moved_inside(caller, test_began or since)
    else:
        with pool.borrow(alias) as private:
            _clean_moved_outside(private, caller, test_began or since)
    clear_cache()
    return durable


def _bound_transaction(cursor: Any, sql: CleanupStatements) -> None:
    bound = sql.bound_transaction()
    if bound is not None:
        cursor.execute(*bound)


def _clean_all(caller: BaseDatabaseWrapper, since: datetime.datetime) -> None:
    """Outside any transaction: drop the rows created since `since`, reset every other row."""
    sql = CleanupStatements(caller)
    when = caller.ops.adapt_datetimefield_value(since)
    with transaction.atomic(using=caller.alias), caller.cursor() as cursor:
        _bound_transaction(cursor, sql)
        cursor.execute(sql.delete_created_since(), [when])
        cursor.execute(sql.reset())


def _clean_moved_inside(caller: BaseDatabaseWrapper, began: datetime.datetime) -> None:
    """SQLite, inside the caller's transaction: only the rows created or moved since the test began.

    The test's own writes are rolled back already, and the rows the transaction wrote before the test
    (setUpTestData's) are older: what is left of that age was committed by private connections.
    """
    sql = CleanupStatements(caller)
    when = caller.ops.adapt_datetimefield_value(began)
    with caller.cursor() as cursor:
        cursor.execute(sql.delete_created_since(), [when])
        cursor.execute(sql.reset_modified_since(), [when])


def _clean_moved_outside(private: BaseDatabaseWrapper, caller: BaseDatabaseWrapper, began: datetime.datetime) -> None:
    """PostgreSQL, MySQL/MariaDB, on a private connection: the committed rows created or moved since the test began.

    Rows the caller's transaction created are not seen here; rows it holds are skipped (FOR UPDATE
    SKIP LOCKED, then asked of the caller), never waited for. A row another transaction holds is
    waited for, at most LOCK_TIMEOUT.
    """
    sql = CleanupStatements(private)
    when = private.ops.adapt_datetimefield_value(began)
    with private.cursor() as cursor:
        cursor.execute(BEGIN)
        try:
            _bound_transaction(cursor, sql)
            cursor.execute(sql.select_moved(), [when, when])
            found = dict(cursor.fetchall())
            taken: set[Any] = set()
            if found:
                cursor.execute(sql.lock_moved_unless_locked(), [when, when])
                taken = {row[0] for row in cursor.fetchall()}
            for pk, name in found.items():
                if pk in taken or holds_row(caller, name):
                    continue
                cursor.execute(sql.lock_row(), [pk])
                if cursor.fetchone() is not None:
                    taken.add(pk)
            if taken:
                cursor.execute(sql.delete_created_among(len(taken)), [*taken, when])
                cursor.execute(sql.reset_among(len(taken)), [*taken])
        except BaseException:
            with suppress(DatabaseError):  # a broken connection: the pool drops it
                cursor.execute(ROLLBACK)
            raise
        cursor.execute(COMMIT)


class SequenceTestCaseMixin:
    """For Django's TestCase and TransactionTestCase: every test starts with sequences at their minimum.

    `class OrderTests(SequenceTestCaseMixin, TestCase): ...`
    """

    @classmethod
    def setUpClass(cls) -> None:
        # Before TestCase opens the class's transaction and runs setUpTestData: what that commits on a
        # private connection (a sequence's first use) is cleaned up after the class.
        begin_test()
        super().setUpClass()  # type: ignore[misc]

    def _setup_and_call(self, *args: Any, **kwargs: Any) -> None:
        # Wraps one test's setup, run and teardown (_pre_setup may run once per class).
        begin_test()
        super()._setup_and_call(*args, **kwargs)  # type: ignore[misc]

    def _post_teardown(self) -> None:
        super()._post_teardown()  # type: ignore[misc]
        end_test()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()  # type: ignore[misc]
        end_test()  # TestCase's class transaction is gone now
        close_connections()


class SequenceTestRunnerMixin:
    """For a project's own test runner: every database test and test class it runs starts with sequences at
    their minimum and leaves no row behind (testcase_hooks.py), and the private connections are closed before
    the test databases are dropped, which PostgreSQL refuses while another session is connected.
    """

    def setup_test_environment(self, **kwargs: Any) -> None:
        super().setup_test_environment(**kwargs)  # type: ignore[misc]
        testcase_hooks.hook_test_cases()

    def teardown_test_environment(self, **kwargs: Any) -> None:
        testcase_hooks.unhook_test_cases()
        super().teardown_test_environment(**kwargs)  # type: ignore[misc]

    def teardown_databases(self, old_config: Any, **kwargs: Any) -> None:
        close_connections()
        super().teardown_databases(old_config, **kwargs)  # type: ignore[misc]


class SequenceParallelTestSuite(ParallelTestSuite):
    """Django's parallel suite, hooking the test cases in each worker it spawns (forked ones inherit the hooks).

    A spawned worker calls this before Django is set up, so it lives in a module that imports no model.
    """

    process_setup = testcase_hooks.process_setup


class DiscoverRunner(SequenceTestRunnerMixin, DjangoDiscoverRunner):
    """Django's DiscoverRunner, cleaning up after every database test as the pytest plugin does.

    `TEST_RUNNER = "django_segment_seq.testing.DiscoverRunner"`.
    """

    parallel_test_suite = SequenceParallelTestSuite
