"""How much of a sequence is handed out and when it runs out, worked out from its row alone for the admin."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django_segment_seq.allocator.blocks import BIGINT_MAX
from django_segment_seq.models import Sequence

# A row younger than this (from created to its last change) has no pace worth projecting:
# the first range is taken milliseconds after the row is created.
MIN_HISTORY = datetime.timedelta(minutes=1)
# Projections further out than this are not told apart.
HORIZON = datetime.timedelta(days=100 * 365)


@dataclass(frozen=True)
class Usage:
    """Figures of one row; None where there is nothing to tell (no maximum, no history)."""

    handed_out: int  # numbers from min_value up to value, taken by processes (used or still cached)
    left: int | None  # numbers after value up to max_value; None for the default maximum
    share: float | None  # handed_out of all numbers from min_value to max_value, 0.0 to 1.0
    pace: float | None  # numbers a second, averaged from created to modified; None without history
    runs_out_in: datetime.timedelta | None  # at that pace from now on; None when it never does or cannot be told


def has_limit(row: Sequence) -> bool:
    """Whether the row has a maximum of its own rather than the column's default (2**63 - 1)."""
    return row.max_value != BIGINT_MAX


def usage(row: Sequence) -> Usage:
    """The figures of `row` as loaded. A projection starts now: the row shows no numbers taken since `modified`."""
    span = row.max_value - row.min_value + 1
    handed_out = min(max(row.value - row.min_value + 1, 0), span)
    pace = None
    if row.created is not None and row.modified is not None and row.modified - row.created >= MIN_HISTORY:
        pace = handed_out / (row.modified - row.created).total_seconds()
    if not has_limit(row):
        return Usage(handed_out, None, None, pace, None)
    left = span - handed_out
    runs_out_in = None
    if left == 0:
        runs_out_in = datetime.timedelta(0)
    elif pace:
        runs_out_in = datetime.timedelta(seconds=min(left / pace, HORIZON.total_seconds()))
    return Usage(handed_out, left, handed_out / span, pace, runs_out_in)
