"""Reset periods: the key of each named period, fiscal years, and the keys a reset callable may return."""

from datetime import date, datetime

import pytest

from django_segment_seq.db.rownames import KEY_MAX_LENGTH
from django_segment_seq.flow.resets import NAMED, Reset, key_problem, named_key
from tests.testapp.models import shift_period


@pytest.mark.parametrize(
    "moment, reset, key",
    [
        ("2026-11-22 23:59", "daily", "2026-11-22"),
        ("2026-11-22 23:59", "weekly", "2026-W47"),  # a Sunday: still the week that began on the 16th
        ("2026-11-23 00:00", "weekly", "2026-W48"),
        ("2027-01-03 12:00", "weekly", "2026-W53"),  # ISO weeks belong to the year of their Thursday
        ("2027-01-04 00:00", "weekly", "2027-W01"),
        ("2024-12-30 00:00", "weekly", "2025-W01"),
        ("2026-11-22 12:00", "monthly", "2026-11"),
        ("2026-03-31 12:00", "quarterly", "2026-Q1"),
        ("2026-04-01 00:00", "quarterly", "2026-Q2"),
        ("2026-12-31 23:59", "quarterly", "2026-Q4"),
        ("2026-12-31 23:59", "yearly", "2026"),
    ],
)
def test_named_period_keys(moment, reset, key):
    assert named_key(datetime.fromisoformat(moment), reset) == key


@pytest.mark.parametrize(
    "day, start, key",
    [
        ("2027-03-31", 4, "FY2026"),  # April 2026 to March 2027 is labelled by the year it starts in
        ("2027-04-01", 4, "FY2027"),
        ("2026-09-30", 10, "FY2025"),
        ("2026-10-01", 10, "FY2026"),
        ("2026-12-31", 12, "FY2026"),
        ("2027-11-30", 12, "FY2026"),
        ("2027-01-01", 1, "2027"),  # a fiscal year from January is the calendar year
    ],
)
def test_fiscal_years_are_labelled_by_the_year_they_start_in(day, start, key):
    moment = datetime.combine(date.fromisoformat(day), datetime.min.time())
    assert named_key(moment, "yearly", start) == key
    assert Reset("yearly", start).key(moment) == key


def test_named_keys_fit_the_period_column():
    moment = datetime(2026, 12, 31, 23, 59)
    assert all(len(named_key(moment, reset, 7)) <= KEY_MAX_LENGTH for reset in NAMED)


@pytest.mark.parametrize(
    "key, problem",
    [
        ("2026-11-22", None),
        ("A", None),
        ("", "empty"),
        ("   ", "empty"),
        ("2026-11-22A", "at most 10"),
        ("26@11", "'@'"),
        (202611, "must be a str"),
        (None, "must be a str"),
    ],
)
def test_period_key_problems(key, problem):
    found = key_problem(key)
    assert found is None if problem is None else problem in found


def test_callable_reset_keys_are_checked_when_taken():
    moment = datetime(2026, 11, 22, 17, 0)
    assert Reset(shift_period).key(moment) == "20261122C"
    with pytest.raises(ValueError, match=r"at most 10 characters.*'2026-11-22T17'"):
        Reset(lambda m: m.strftime("%Y-%m-%dT%H")).key(moment)
    with pytest.raises(ValueError, match="'@'"):
        Reset(lambda m: "a@b").key(moment)
    with pytest.raises(ValueError, match="must be a str, not int"):
        Reset(lambda m: m.year).key(moment)


def test_reset_rule_words_and_kinds():
    assert (Reset("weekly").word, Reset("yearly", 4).word, Reset("yearly", 1).word) == ("week", "fiscal year", "year")
    assert Reset(shift_period).word == "period" and Reset(shift_period).is_callable
    assert Reset("hourly").key(datetime(2026, 1, 1)) is None and Reset(None).key(datetime(2026, 1, 1)) is None


def test_only_importable_callables_can_be_written_to_migrations():
    assert Reset(shift_period).import_problem() is None
    assert "lambda" in Reset(lambda m: "x").import_problem()

    def nested(moment):
        return "x"

    assert Reset(nested).import_problem()
    assert Reset("daily").import_problem() is None
