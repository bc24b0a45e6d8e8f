"""Helpers for a project's own test suite: sequences that start at their minimum in every test.

Numbers are cached per process and ranges are committed on connections of their own, so neither is
rolled back with a test's transaction. `reset_sequences()` forgets the cache and puts the rows back;
`clean_after_test()` also removes rows committed outside the test's transaction while it ran; the
runner and the mixins close the private connections before the test databases are dropped.
"""

from __future__ import annotations

import datetime
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Q
from django.test.runner import DiscoverRunner as DjangoDiscoverRunner
from django.utils import timezone

from .api import clear_cache, close_connections
from .callers import Session, session
from .dbconn import pool
from .routing import sequence_database

__all__ = [
    "DiscoverRunner",
    "SequenceTestCaseMixin",
    "SequenceTestRunnerMixin",
    "begin_test",
    "clean_after_test",
    "end_test",
    "reset_sequences",
]

# When the earliest database test whose leftovers are not cleaned up durably yet began.
_since: datetime.datetime | None = None


def reset_sequences(*names: str, using: str | None = None) -> None:
    """Forget this process's cached ranges and make each named sequence (all when none) hand out its min_value next.

    The rows are written with the caller's connection: inside a test's transaction the reset is
    rolled back with it, which is what a `setUp` wants. Per-period and per-scope rows of a named sequence are
    reset too.
    """
    from .models import Sequence

    clear_cache()
    rows = Sequence.objects.using(using or sequence_database())
    if names:
        rows = rows.filter(Q(name__in=names) | Q(base_name__in=names))
    rows.update(value=F("min_value") - 1, version=F("version") + 1)


def begin_test() -> None:
    """Before a database test: forget the cache, and note when the test began."""
    global _since
    clear_cache()
    if _since is None:
        _since = timezone.now()


def end_test() -> None:
    """After a database test, once its transaction is rolled back: clean up, unless already done."""
    global _since
    if _since is not None and clean_after_test(_since):
        _since = None


def clean_after_test(since: datetime.datetime, using: str | None = None) -> bool:
    """After a test: drop rows created since `since` outside its transaction, reset the rest, forget the cache.

    A row the allocator created on a private connection (first use of a sequence inside a test's
    transaction) is committed and would outlive the test. When the test's connection is still inside a
    transaction (Django's TestCase keeps one open per class) the cleanup commits on a private
    connection, except on SQLite, where that transaction may hold the file's only write lock: the
    cleanup is then done inside it, and False says it must be done again once it is rolled back.
    """
    clear_cache()
    alias = using or sequence_database()
    caller = connections[alias]
    durable = session(caller) is Session.IDLE
    if durable or caller.vendor == "sqlite":
        _clean(caller, since)
    else:
        with pool.borrow(alias) as private:
            _clean(private, since)
        durable = True
    clear_cache()
    return durable


def _clean(connection: BaseDatabaseWrapper, since: datetime.datetime) -> None:
    from .models import Sequence, column_of

    # Raw SQL: a private connection is not one of Django's aliases, so the ORM cannot send it there.
    meta = Sequence._meta
    table = connection.ops.quote_name(meta.db_table)
    created, value, min_value, version = (
        connection.ops.quote_name(column_of(Sequence, name)) for name in ("created", "value", "min_value", "version")
    )
    when = connection.ops.adapt_datetimefield_value(since)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE {created} >= %s", [when])
        cursor.execute(
            f"UPDATE {table} SET {value} = {min_value} - 1, {version} = {version} + 1 WHERE {value} <> {min_value} - 1"
        )


class SequenceTestCaseMixin:
    """For Django's TestCase and TransactionTestCase: every test starts with sequences at their minimum.

    `class OrderTests(SequenceTestCaseMixin, TestCase): ...`
    """

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
    """For a project's own test runner: closes the private connections before the test databases are dropped.

    PostgreSQL refuses to drop a database another session is connected to.
    """

    def teardown_databases(self, old_config: Any, **kwargs: Any) -> None:
        close_connections()
        super().teardown_databases(old_config, **kwargs)  # type: ignore[misc]


class DiscoverRunner(SequenceTestRunnerMixin, DjangoDiscoverRunner):
    """Django's DiscoverRunner, closing the private connections first.

    `TEST_RUNNER = "django_segment_seq.testing.DiscoverRunner"`.
    """
