"""How much of a sequence is handed out and when it runs out, from its row alone: the one place the admin, the
command, the logs and the metrics work it out."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.utils.translation import gettext_lazy as _

from django_segment_seq.db.columns import BIGINT_MAX
from django_segment_seq.db.table import Sequence

# A row younger than this (from created to its last change) has no pace worth projecting:
# the first range is taken milliseconds after the row is created.
MIN_HISTORY = datetime.timedelta(minutes=1)
# Projections further out than this are not told apart.
HORIZON = datetime.timedelta(days=100 * 365)
# Shown for the maximum of a row that has none of its own, and for the numbers it has left.
NO_LIMIT = _("no limit")


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
    return row.max_value < BIGINT_MAX


def numbers_left(row: Sequence) -> int | None:
    """Numbers after `value` up to the maximum, none below `min_value` counted; None without a maximum of its own."""
    if not has_limit(row):
        return None
    return max(0, row.max_value - max(row.value, row.min_value - 1))


def used_share(last: int, min_value: int, max_value: int) -> float:
    """Share of the numbers from min_value to max_value at or below `last`, the row's value after a fetch."""
    return max(0, last - min_value + 1) / (max_value - min_value + 1)


def usage(row: Sequence) -> Usage:
    """The figures of `row` as loaded. A projection starts now: the row shows no numbers taken since `modified`."""
    span = row.max_value - row.min_value + 1
    handed_out = min(max(row.value - row.min_value + 1, 0), span)
    pace = None
    if row.created is not None and row.modified is not None and row.modified - row.created >= MIN_HISTORY:
        pace = handed_out / (row.modified - row.created).total_seconds()
    left = numbers_left(row)
    if left is None:
        return Usage(handed_out, None, None, pace, None)
    runs_out_in = None
    if left == 0:
        runs_out_in = datetime.timedelta(0)
    elif pace:
        runs_out_in = datetime.timedelta(seconds=min(left / pace, HORIZON.total_seconds()))
    return Usage(handed_out, left, used_share(row.value, row.min_value, row.max_value), pace, runs_out_in)
