"""The functions callers use to get numbers; everything else is plumbing behind them."""

from __future__ import annotations

from django.db import router

from .cache import SequenceStats, ranges
from .conf import app_settings


def sequence_database(using: str | None = None) -> str:
    """The alias whose Sequence table serves a call: `using`, else SEGMENT_SEQ['DATABASE'], else the router."""
    if using:
        return using
    alias = app_settings()["DATABASE"]
    if alias:
        return alias
    from .models import Sequence

    return router.db_for_write(Sequence)


def next_value(sequence_name: str, *, using: str | None = None) -> int:
    """The next number of the named sequence, from this process's cached range when it has one."""
    return ranges.take(sequence_database(using), sequence_name)


def next_values(sequence_name: str, count: int, *, using: str | None = None) -> range:
    """`count` distinct, increasing, contiguous numbers, taken in one allocation when the cache lacks them."""
    if not isinstance(count, int) or isinstance(count, bool):
        raise TypeError(f"Sequence {sequence_name!r}: count must be an int, not {type(count).__name__}")
    return ranges.take_many(sequence_database(using), sequence_name, count)


def sequence_stats() -> dict[tuple[str, str], SequenceStats]:
    """This process's figures per (alias, sequence name): numbers handed out, ranges fetched, retries."""
    return ranges.stats()


def clear_cache() -> None:
    """Drop this process's cached ranges; their unused numbers become gaps. Needed after deleting Sequence rows."""
    ranges.clear()
    from .periods import forget

    forget()
