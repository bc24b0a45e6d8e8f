"""The caller-transaction decision asked directly: what each backend's session says, row by row."""

from __future__ import annotations

import contextlib

import pytest
from django.conf import settings
from django.db import DataError, connections, transaction
from django.db.models import F

from django_segment_seq.allocator import callers
from django_segment_seq.allocator.callers import Session
from django_segment_seq.allocator.connections import pool
from django_segment_seq.models import Sequence

pytestmark = pytest.mark.django_db(transaction=True)

# The wrapper itself: the decision keeps per-connection memory, which the thread-local proxy cannot key.
connection = connections["default"]


class RolledBack(Exception):
    """Leaves an atomic block by rolling back its savepoint."""


on_server = pytest.mark.skipif(settings.BACKEND == "sqlite", reason="SQLite has one write lock, no row locks")


def raw(sql: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(sql)


def test_idle_connection_in_autocommit():
    connection.ensure_connection()
    assert callers.session(connection) is Session.IDLE


def test_atomic_block_is_a_transaction_before_its_first_statement():
    with transaction.atomic():
        assert callers.session(connection) is Session.IN_TRANSACTION


@pytest.mark.parametrize("begin", ["BEGIN", "START TRANSACTION"])
def test_raw_begin_outside_atomic_is_a_transaction(begin):
    """Django's get_autocommit() stays true after a raw BEGIN; the server's answer is what counts."""
    if settings.BACKEND == "sqlite" and begin != "BEGIN":
        pytest.skip("SQLite has no START TRANSACTION")
    connection.ensure_connection()
    raw(begin)
    try:
        assert connection.get_autocommit()
        assert callers.session(connection) is Session.IN_TRANSACTION
    finally:
        raw("ROLLBACK")
    assert callers.session(connection) is Session.IDLE


@pytest.mark.skipif(settings.BACKEND != "postgres", reason="psycopg's transaction states")
def test_failed_transaction_is_unusable():
    connection.ensure_connection()
    raw("BEGIN")
    try:
        with pytest.raises(DataError), connection.cursor() as cursor:
            cursor.execute("SELECT 1/0")
        assert callers.session(connection) is Session.UNUSABLE
    finally:
        raw("ROLLBACK")


def test_closed_wrapper_in_autocommit_is_idle():
    connection.close()
    assert callers.session(connection) is Session.IDLE


@on_server
@pytest.mark.parametrize(
    "how",
    ["create", "update", "update-in-released-savepoint", "select-for-update", "save"],
)
def test_rows_the_callers_transaction_holds(how):
    if how != "create":
        Sequence.objects.create(name="x", step=10)
    with transaction.atomic():
        if how == "create":
            Sequence.objects.create(name="x", step=10)
        elif how == "update":
            Sequence.objects.filter(name="x").update(step=F("step"))
        elif how == "update-in-released-savepoint":
            with transaction.atomic():
                Sequence.objects.filter(name="x").update(step=F("step"))
        elif how == "select-for-update":
            list(Sequence.objects.select_for_update().filter(name="x"))
        else:
            row = Sequence.objects.get(name="x")
            row.step = 20
            row.save(update_fields=["step"])
        assert callers.holds_row(connection, "x")
        callers.forget()
        assert callers.holds_row(connection, "x")  # asked again of the server, not remembered


@on_server
@pytest.mark.parametrize("how", ["other-row-updated", "read-only", "rolled-back-savepoint"])
def test_rows_the_callers_transaction_does_not_hold(how):
    """A write to another row, a plain read, or a lock undone with its savepoint holds nothing of row x."""
    Sequence.objects.create(name="x", step=10)
    other = Sequence.objects.create(name="other", step=10)
    with transaction.atomic():
        if how == "other-row-updated":
            Sequence.objects.filter(pk=other.pk).update(step=F("step"))
        elif how == "read-only":
            list(Sequence.objects.filter(name="x"))
        else:
            with contextlib.suppress(RolledBack), transaction.atomic():
                list(Sequence.objects.select_for_update().filter(name="x"))
                raise RolledBack
        assert not callers.holds_row(connection, "x")
        # Asking took no lock: another connection takes the row at once.
        with pool.borrow("default") as private, private.cursor() as cursor:
            cursor.execute(f"SELECT 1 FROM {Sequence._meta.db_table} WHERE name = %s FOR UPDATE SKIP LOCKED", ["x"])
            assert cursor.fetchone() is not None


@on_server
def test_row_another_transaction_holds_is_not_the_callers():
    Sequence.objects.create(name="x", step=10)
    with pool.borrow("default") as private, private.cursor() as other:
        other.execute("BEGIN")
        try:
            other.execute(f"SELECT 1 FROM {Sequence._meta.db_table} WHERE name = %s FOR UPDATE", ["x"])
            with transaction.atomic():
                assert not callers.holds_row(connection, "x")
        finally:
            other.execute("ROLLBACK")


def test_sqlite_write_lock_is_known_without_asking():
    if settings.BACKEND != "sqlite":
        pytest.skip("SQLite's write lock")
    Sequence.objects.create(name="x", step=10)
    with transaction.atomic():
        assert not callers.known_to_hold(connection, "x")  # nothing read or written yet
        Sequence.objects.filter(name="x").update(step=F("step"))
        assert callers.known_to_hold(connection, "x")
