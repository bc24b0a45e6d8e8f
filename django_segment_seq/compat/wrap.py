"""A django-sequences call's wrap (initial_value, reset_value) against its row's: django-sequences reads the wrap
from each call and keeps none in its table, so a row carried over from it has none until a call gives one.

A row without a wrap of its own takes the call's (minimum initial_value, maximum reset_value - 1, cycle on), so
it hands out what django-sequences would have; a row that wraps otherwise refuses the call, loudly.
"""

from __future__ import annotations

import logging

from django.db import connections
from django.db.models import F
from django.utils import timezone

from django_segment_seq.db.columns import BIGINT_MAX
from django_segment_seq.db.statements import statements_for
from django_segment_seq.db.table import Sequence

logger = logging.getLogger("django_segment_seq")


class ResetValueConflict(ValueError):
    """The call's initial_value and reset_value disagree with the wrap its sequence's row already has."""

    def __init__(self, name: str, initial_value: int, reset_value: int, problem: str) -> None:
        self.name = name
        self.initial_value = initial_value
        self.reset_value = reset_value
        super().__init__(
            f"Sequence {name!r} was called with initial_value={initial_value}, reset_value={reset_value}, "
            f"but {problem}; no number was taken. Call it as it was called before, or change the row first "
            f"(segment_seq set {name} --min {initial_value} --max {reset_value - 1} --cycle)."
        )


def agree(alias: str, name: str, initial_value: int, reset_value: int, *, nowait: bool) -> None:
    """Lock the existing row in the caller's transaction; give it the call's wrap if it has none, else refuse
    with ResetValueConflict a wrap unlike the call's."""
    connection = connections[alias]
    sql = statements_for(connection)
    with connection.cursor() as cursor:
        if sql.take_write_lock is not None:
            cursor.execute(sql.take_write_lock, [name])  # SQLite: the write lock before any read
        cursor.execute(sql.lock_row_nowait if nowait else sql.lock_row, [name])
        found = cursor.fetchone()
    if found is None:
        return  # deleted meanwhile: the take that follows says so
    value, min_value, max_value, cycle = int(found[0]), int(found[2]), int(found[3]), bool(found[4])
    top = reset_value - 1
    if cycle and (min_value, max_value) == (initial_value, top):
        return
    if cycle or max_value != BIGINT_MAX:
        limits = f"min_value {min_value}, max_value {max_value}, cycle {'on' if cycle else 'off'}"
        raise ResetValueConflict(name, initial_value, reset_value, f"its row has {limits}")
    if value < initial_value - 1:
        problem = f"its row stands at {value}, below initial_value, where django-sequences would not wrap"
        raise ResetValueConflict(name, initial_value, reset_value, problem)
    # Past the top, django-sequences' next number is initial_value: standing at the top, the row wraps there too.
    Sequence._base_manager.using(alias).filter(name=name).update(
        min_value=initial_value,
        max_value=top,
        cycle=True,
        value=min(value, top),
        version=F("version") + 1,
        modified=timezone.now(),
    )
    logger.info(
        "Sequence %r takes the wrap of its django-sequences calls: %s to %s, then %s again.",
        name,
        initial_value,
        top,
        initial_value,
    )
