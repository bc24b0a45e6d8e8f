"""Use figures of a row: numbers handed out and left, their share, and when the row runs out at its average pace."""

import datetime

from django.utils import timezone

from django_segment_seq.allocator.blocks import BIGINT_MAX
from django_segment_seq.models import Sequence
from django_segment_seq.observe.usage import HORIZON, MIN_HISTORY, has_limit, usage

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
