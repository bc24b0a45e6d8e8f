"""django-sequences' API on this app's Sequence rows: `from django_segment_seq.compat import sequences` in place of
`import sequences`, and the admin, the command, the metrics and gapless SequenceFields see the same numbers.

As in django-sequences, numbers are gapless: each is taken inside the caller's transaction (a transaction
of its own in autocommit) from the row locked until that transaction ends, so concurrent callers queue
in order, a rollback gives the number back, and `nowait=True` fails at once on a row another
transaction holds (on MariaDB also a row another transaction has just created). A row is created on first use,
counting from `initial_value`; with `reset_value`, it wraps back to `initial_value` when it reaches `reset_value`:
a row without a wrap of its own (carried over from django-sequences) takes the call's, one with another refuses it
(compat/wrap.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db import connections, transaction
from django.utils import timezone

from django_segment_seq.allocator.blocks import Row
from django_segment_seq.compat import wrap
from django_segment_seq.conf import app_settings
from django_segment_seq.db.columns import BIGINT_MAX
from django_segment_seq.db.history import server_history
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import require_valid_name
from django_segment_seq.db.statements import statements_for
from django_segment_seq.db.table import Sequence as SequenceRow
from django_segment_seq.exceptions import SequenceNotFound
from django_segment_seq.flow.gapless import take_block_locked

__all__ = ["Sequence", "delete", "get_last_value", "get_next_value", "get_next_values"]


def get_next_value(
    sequence_name: str = "default",
    initial_value: int = 1,
    reset_value: int | None = None,
    *,
    nowait: bool = False,
    using: str | None = None,
) -> int:
    """The next value of the sequence, taken in the caller's transaction (django-sequences' get_next_value)."""
    return _take(sequence_name, initial_value, reset_value, 1, nowait, using)[0]


def get_next_values(
    batch_size: int,
    sequence_name: str = "default",
    initial_value: int = 1,
    reset_value: int | None = None,
    *,
    nowait: bool = False,
    using: str | None = None,
) -> range:
    """The next `batch_size` consecutive values, taken together; a batch of 0 is an empty range."""
    return _take(sequence_name, initial_value, reset_value, batch_size, nowait, using)


def get_last_value(sequence_name: str = "default", *, using: str | None = None) -> int | None:
    """The last value handed out, or None when the sequence does not exist (or has handed out none)."""
    row = SequenceRow._base_manager.using(sequence_database(using)).filter(name=sequence_name).first()
    if row is None or row.value < row.min_value:
        return None
    return row.value


def delete(sequence_name: str = "default", *, using: str | None = None) -> bool:
    """Delete the sequence's row; True if there was one. The next value counts from initial_value again."""
    deleted, _per_model = SequenceRow._base_manager.using(sequence_database(using)).filter(name=sequence_name).delete()
    return deleted > 0


class Sequence:
    """One sequence with its options, iterable: each `next()` is get_next_value()."""

    def __init__(
        self,
        sequence_name: str = "default",
        initial_value: int = 1,
        reset_value: int | None = None,
        *,
        using: str | None = None,
    ) -> None:
        _check_reset(initial_value, reset_value)
        self.sequence_name = sequence_name
        self.initial_value = initial_value
        self.reset_value = reset_value
        self.using = using

    def get_last_value(self) -> int | None:
        return get_last_value(self.sequence_name, using=self.using)

    def get_next_value(self, *, nowait: bool = False) -> int:
        return get_next_value(self.sequence_name, self.initial_value, self.reset_value, nowait=nowait, using=self.using)

    def get_next_values(self, batch_size: int, *, nowait: bool = False) -> range:
        return get_next_values(
            batch_size, self.sequence_name, self.initial_value, self.reset_value, nowait=nowait, using=self.using
        )

    def delete(self) -> bool:
        return delete(self.sequence_name, using=self.using)

    def __iter__(self) -> Iterator[int]:
        return self

    def __next__(self) -> int:
        return self.get_next_value()


def _check_reset(initial_value: int, reset_value: int | None) -> None:
    if reset_value is not None and reset_value <= initial_value:
        raise ValueError("reset_value must be greater than initial_value")


def _take(name: str, initial_value: int, reset_value: int | None, count: int, nowait: bool, using: str | None) -> range:
    """`count` values of the locked row, created in the caller's transaction if missing."""
    _check_reset(initial_value, reset_value)
    require_valid_name(name)
    if count < 0:
        raise ValueError(f"batch_size must not be negative, not {count}")
    alias = sequence_database(using)
    with transaction.atomic(using=alias, savepoint=False):
        if count == 0:
            return range(0)
        _create_if_missing(alias, name, initial_value, reset_value, nowait)
        if reset_value is not None:
            wrap.agree(alias, name, initial_value, reset_value, nowait=nowait)
        block = take_block_locked(alias, name, count, nowait=nowait)
        if block is None:  # pragma: no cover - created above, in this transaction
            raise SequenceNotFound(name, alias)
    return range(block.first, block.last + 1)


def _create_if_missing(alias: str, name: str, initial_value: int, reset_value: int | None, nowait: bool) -> None:
    """INSERT the row if it is missing: counting from initial_value, wrapping before reset_value.

    With nowait on MariaDB the row is read with a locking read that fails at once on a row another transaction
    has just inserted, as django-sequences' SELECT ... FOR UPDATE NOWAIT does there; a plain read would not see
    that row, and the INSERT would wait for the other transaction.
    """
    connection = connections[alias]
    sql = statements_for(connection)
    top = BIGINT_MAX if reset_value is None else reset_value - 1
    row = Row(initial_value - 1, app_settings()["DEFAULT_STEP"], initial_value, top, reset_value is not None, 0)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    history = server_history(connection)
    with connection.cursor() as cursor:
        if sql.take_write_lock is not None:
            cursor.execute(sql.take_write_lock, [name])  # SQLite: the write lock before any read, or a deadlock
        # Read first: an INSERT that meets a row another transaction has changed waits for that transaction
        # (PostgreSQL), which nowait=True must not do.
        locking = nowait and connection.vendor == "mysql"
        cursor.execute(sql.lock_row_nowait if locking else sql.select_row, [name])
        if cursor.fetchone() is not None:
            return
        cursor.execute(
            sql.insert_if_missing,
            [name, row.value, row.step, row.min_value, row.max_value, row.cycle, now, now, None, None, history],
        )
