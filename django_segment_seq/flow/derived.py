"""Numbers for formatted, scoped and gapless fields: the row of the scope and period, created on first use."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.db import connections, transaction

from django_segment_seq.allocator import callers
from django_segment_seq.allocator.rows import ensure_derived_row
from django_segment_seq.cache.range_cache import ranges
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import require_valid_name, row_name, shown
from django_segment_seq.exceptions import SequenceExhausted
from django_segment_seq.flow import gapless as gapless_path

T = TypeVar("T")

# (alias, row name) of rows this process has seen committed, so first-use creation is tried once per period.
_durable: set[tuple[str, str]] = set()


def forget() -> None:
    """Forget which rows exist (after deleting rows, in tests)."""
    _durable.clear()
    callers.forget()


def ensure_row(alias: str, name: str, *, base_name: str | None, period: str | None, cap: int | None) -> None:
    """Create the row on first use in this process: from the base row's settings, max_value lowered to the cap."""
    if (alias, name) in _durable:
        return
    require_valid_name(name)
    caller = connections[alias]
    if caller.vendor != "sqlite" and callers.known_to_hold(caller, name):
        return  # created inside the caller's transaction, which still stands
    if ensure_derived_row(alias, name, base_name=base_name, period=period, cap=cap):
        _durable.add((alias, name))


def take(
    sequence_name: str,
    render: Callable[[int], T],
    *,
    period: str | None = None,
    cap: int | None = None,
    gapless: bool = False,
    using: str | None = None,
    scope: str | None = None,
) -> T:
    """render(number) for the next number of `sequence_name` in `scope` and `period`, never above `cap`.

    Gapless numbers are taken and rendered inside transaction.atomic() on the sequence's database,
    so an error while rendering gives the number back.
    """
    alias = sequence_database(using)
    name = row_name(sequence_name, scope, period)
    base_name = sequence_name if period is not None or scope is not None else None
    ensure_row(alias, name, base_name=base_name, period=period, cap=cap)
    try:
        if gapless:
            with transaction.atomic(using=alias):
                number = gapless_path.take_locked(alias, name)
                if number is None:  # created inside a transaction that has rolled back since
                    _durable.discard((alias, name))
                    ensure_row(alias, name, base_name=base_name, period=period, cap=cap)
                    number = gapless_path.take(alias, name)
                return render(_within_cap(name, number, cap))
        number = ranges.take(alias, name)
    except SequenceExhausted as exc:
        raise _explained(exc, sequence_name, period, cap, scope) from None
    try:
        return render(_within_cap(name, number, cap))
    except SequenceExhausted as exc:
        raise _explained(exc, sequence_name, period, cap, scope) from None


def _within_cap(name: str, number: int, cap: int | None) -> int:
    # The row's max_value normally stops numbers at the cap; this holds even if someone raised it.
    if cap is not None and number > cap:
        raise SequenceExhausted(name, cap)
    return number


def _explained(
    exc: SequenceExhausted, sequence_name: str, period: str | None, cap: int | None, scope: str | None = None
) -> SequenceExhausted:
    """The same error, saying which scope and period ran out and, when the format's width was the limit, what to widen.

    `scope` is the encoded scope of a scoped field's row, None otherwise.
    """
    where = f"Sequence {sequence_name!r}" + (f", scope {shown(scope)}," if scope else "")
    where += f", period {period}," if period else ""
    if cap is not None and exc.max_value >= cap:
        message = (
            f"{where} is exhausted: its format's zero-padded width holds numbers up to {cap}, "
            "and a wider number would make a longer text. Widen the {value:…} spec of the format"
            + (" or reset more often." if period else ".")
        )
    else:
        message = (
            f"{where} is exhausted: row {exc.name!r} reached its max_value {exc.max_value} and cycle is off. "
            "Raise that row's max_value, or turn on cycle (cycling repeats numbers)."
        )
    explained = SequenceExhausted(exc.name, exc.max_value)
    explained.args = (message,)
    explained.period = period  # type: ignore[attr-defined]
    explained.sequence_name = sequence_name  # type: ignore[attr-defined]
    return explained
