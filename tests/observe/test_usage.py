"""Use figures of a row: numbers handed out and left, their share, and when the row runs out at its average pace."""

import datetime

from django.utils import timezone

from django_segment_seq.db.columns import BIGINT_MAX
from django_segment_seq.management import sequence_rows
from django_segment_seq.models import Sequence
from django_segment_seq.observe.usage import (
    HORIZON,
    MIN_HISTORY,
    NO_LIMIT,
    has_limit,
    numbers_left,
    usage,
    used_share,
)

NOW = timezone.now()


def row(value: int, *, life: datetime.timedelta = datetime.timedelta(days=10), **fields) -> Sequence:
    """A row (not saved) created `life` before its last change, which is now."""
    return Sequence(name="s", value=value, created=NOW - life, modified=NOW, **fields)


def test_limited_row_counts_used_and_left_numbers():
    figures = usage(row(250, min_value=1, max_value=1000))
    assert (figures.handed_out, figures.left, figures.share) == (250, 750, 0.25)


def test_minimum_above_one_counts_from_the_minimum():
    figures = usage(row(109, min_value=100, max_value=199))
    assert (figures.handed_out, figures.left, figures.share) == (10, 90, 0.1)


def test_pace_is_the_average_from_created_to_last_change():
    figures = usage(row(8640, max_value=100_000, life=datetime.timedelta(days=1)))
    assert figures.pace == 0.1  # numbers a second
    assert figures.runs_out_in == datetime.timedelta(seconds=(100_000 - 8640) / 0.1)


def test_default_maximum_has_no_limit_and_never_runs_out():
    figures = usage(row(5000))
    assert not has_limit(row(5000))
    assert (figures.handed_out, figures.left, figures.share, figures.runs_out_in) == (5000, None, None, None)
    assert figures.pace is not None


def test_untouched_row_never_runs_out():
    figures = usage(row(0, max_value=1000))
    assert (figures.handed_out, figures.left, figures.share, figures.runs_out_in) == (0, 1000, 0.0, None)


def test_young_row_has_no_pace():
    """The first range is taken moments after the row is created; that is no pace to project."""
    figures = usage(row(1000, max_value=10_000, life=MIN_HISTORY - datetime.timedelta(seconds=1)))
    assert (figures.pace, figures.runs_out_in) == (None, None)


def test_exhausted_row_runs_out_now():
    figures = usage(row(1000, max_value=1000))
    assert (figures.left, figures.share, figures.runs_out_in) == (0, 1.0, datetime.timedelta(0))


def test_far_projection_stops_at_the_horizon():
    figures = usage(row(1, max_value=BIGINT_MAX - 1, life=datetime.timedelta(days=3650)))
    assert figures.runs_out_in == HORIZON


def test_no_limit_is_one_rule_for_the_admin_the_command_and_the_logs():
    """The column's default maximum means no limit everywhere; one below it is a limit everywhere."""
    unlimited = row(10, max_value=BIGINT_MAX)
    assert not has_limit(unlimited)
    assert numbers_left(unlimited) is None
    assert usage(unlimited).left is None
    assert sequence_rows.left(unlimited) == sequence_rows.limit(unlimited) == str(NO_LIMIT)
    assert sequence_rows.row_dict(unlimited)["left"] is None

    limited = row(10, max_value=BIGINT_MAX - 1)
    assert has_limit(limited)
    assert numbers_left(limited) == usage(limited).left == sequence_rows.left(limited) == BIGINT_MAX - 11
    assert sequence_rows.limit(limited) == BIGINT_MAX - 1
    assert usage(limited).share == used_share(10, 1, BIGINT_MAX - 1)


def test_numbers_left_never_counts_below_the_minimum_or_past_the_maximum():
    assert numbers_left(row(0, min_value=100, max_value=199)) == 100
    assert numbers_left(row(250, min_value=100, max_value=199)) == 0
