"""Gapless numbers: one at a time, from the row locked inside the caller's transaction, never from cached ranges."""

from __future__ import annotations

from django.db import connections
from django.utils import timezone

from django_segment_seq.allocator.blocks import Block, Row, next_block
from django_segment_seq.db.history import server_history, unfenced_history, with_table
from django_segment_seq.db.identity import table_identity
from django_segment_seq.db.standbys import StandbyUnconfirmed, confirmed_history
from django_segment_seq.db.statements import statements_for
from django_segment_seq.exceptions import SequenceNotFound, SequenceUnavailable


def take_locked(alias: str, name: str) -> int | None:
    """The next number of row `name`, moved inside the current transaction of `alias`; None if the row is missing.

    The row stays locked until that transaction ends, so other takers queue behind it: a commit
    keeps the number, a rollback gives it back to the next taker. Call it inside transaction.atomic().
    """
    block = take_block_locked(alias, name)
    return None if block is None else block.first


def take_block_locked(alias: str, name: str, count: int = 1, *, nowait: bool = False) -> Block | None:
    """take_locked() for `count` consecutive numbers; with `nowait`, a row another transaction holds is a
    database error at once instead of a wait (SQLite, which has no row locks, waits for its write lock)."""
    connection = connections[alias]
    if not connection.in_atomic_block:
        raise RuntimeError("take_locked() must run inside transaction.atomic() on the sequence's database")
    sql = statements_for(connection)
    with connection.cursor() as cursor:
        if sql.take_write_lock is not None:
            cursor.execute(sql.take_write_lock, [name])
        cursor.execute(sql.lock_row_nowait if nowait else sql.lock_row, [name])
        found = cursor.fetchone()
        if found is None:
            return None
        value, _step, min_value, max_value, cycle, version, stored, table = found
        # `count` numbers, whatever the row's step: the step is for cached ranges, which gapless never uses.
        row = Row(int(value), count, int(min_value), int(max_value), bool(cycle), int(version))
        block = next_block(name, row, count)
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        # No failover skip: a gapless number commits with the caller's rows, and a failover keeps both or neither.
        current = with_table(server_history(connection), table_identity(connection, cursor, table or ""))
        try:
            current, _sent = confirmed_history(connection, cursor, stored or "", current)
        except StandbyUnconfirmed as exc:
            raise SequenceUnavailable(name, alias, 1, exc) from exc
        history = unfenced_history(stored or "", current)
        cursor.execute(sql.compare_and_set_locked, [block.last, now, history, name, row.value, row.version])
    return block


def take(alias: str, name: str) -> int:
    """take_locked(), for a row the caller has made sure exists."""
    number = take_locked(alias, name)
    if number is None:
        raise SequenceNotFound(name, alias)
    return number
