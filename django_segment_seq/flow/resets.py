"""Reset periods: the key of the period an instant belongs to, which names that period's Sequence row."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, cast

from django.db.migrations.serializer import serializer_factory

from django_segment_seq.db.rownames import DERIVED_MARK, KEY_MAX_LENGTH, text_problem

# Named resets and the word messages use for one of their periods.
NAMED: dict[str, str] = {
    "daily": "day",
    "weekly": "week",
    "monthly": "month",
    "quarterly": "quarter",
    "yearly": "year",
}

ResetCallable = Callable[[datetime], str]
ResetOption = str | ResetCallable | None


def named_key(moment: datetime, reset: str, fiscal_year_start: int | None = None) -> str:
    """The key of a named period: "2026-11-22", "2026-W48" (ISO week), "2026-11", "2026-Q4", "2026" or "FY2026".

    A fiscal year is labelled by the calendar year it starts in: with fiscal_year_start=4, April 2026
    to March 2027 is "FY2026".
    """
    if reset == "daily":
        return f"{moment:%Y-%m-%d}"
    if reset == "weekly":
        year, week, _weekday = moment.isocalendar()
        return f"{year:04d}-W{week:02d}"
    if reset == "monthly":
        return f"{moment:%Y-%m}"
    if reset == "quarterly":
        return f"{moment.year:04d}-Q{(moment.month - 1) // 3 + 1}"
    if reset == "yearly":
        if fiscal_year_start in (None, 1):
            return f"{moment.year:04d}"
        start_year = moment.year if moment.month >= fiscal_year_start else moment.year - 1
        return f"FY{start_year:04d}"
    raise ValueError(f"reset={reset!r} is not one of {', '.join(NAMED)}")


def fiscal_start_problem(start: object) -> str | None:
    """Why `start` is not the month a fiscal year starts in, nor a way to read it from the record (a field path such
    as "entity.fy_start_month", a function of the record), or None when it is (or is not given)."""
    if start is None or is_record_start(start):
        return None
    if isinstance(start, str):
        return f"fiscal_year_start={start!r} is not a field path such as 'entity.fy_start_month'"
    if isinstance(start, bool) or not isinstance(start, int) or not 1 <= start <= 12:
        return f"fiscal_year_start={start!r} is not a month number from 1 to 12"
    return None


def is_record_start(start: object) -> bool:
    """Whether a fiscal year's first month comes from each record: a dotted field path, or a function of the record."""
    if isinstance(start, str):
        return bool(start) and all(part.isidentifier() for part in start.split("."))
    return callable(start) and not isinstance(start, (int, type))


# The month a fiscal year read from the record is sampled with by the checks: one that makes it a fiscal year.
SAMPLE_RECORD_START = 4


def record_start(start: str | Callable[[Any], Any], record: Any) -> int:
    """The first month of the record's fiscal year, read through a field path or a function; ValueError naming what
    was read when it is not a month from 1 to 12 (or the path leads nowhere)."""
    if isinstance(start, str):
        value = record
        for part in start.split("."):
            try:
                value = value[part] if isinstance(value, dict) else getattr(value, part)
            except (AttributeError, KeyError):
                raise ValueError(
                    f"fiscal_year_start={start!r}: the record has no {part!r}; give the record (instance=) or the "
                    "scope value as a model instance"
                ) from None
    else:
        value = start(record)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 12:
        raise ValueError(f"fiscal_year_start={_name_of(start)} gave {value!r}, not a month number from 1 to 12")
    return value


def plain_year(key: str) -> str:
    """The year a period key is labelled by ("FY2024" -> "2024", "2026-11" -> "2026"): what {period:%Y} shows."""
    digits = key[2:6] if key.startswith("FY") else key[:4]
    return digits if digits.isdigit() else key


class PeriodKey(str):
    """A period key as a format shows it: {period} is the key, {period:%Y} the year it is labelled by."""

    __slots__ = ()

    def __format__(self, spec: str) -> str:
        if "%Y" in spec:
            return spec.replace("%Y", plain_year(str(self)))
        return format(str(self), spec)


def key_problem(key: object) -> str | None:
    """Why `key` cannot name a period row, or None when it can."""
    if not isinstance(key, str):
        return f"a period key must be a str, not {type(key).__name__}"
    if not key.strip():
        return "a period key must not be empty"
    if len(key) > KEY_MAX_LENGTH:
        return f"a period key must be at most {KEY_MAX_LENGTH} characters long, and {key!r} has {len(key)}"
    if DERIVED_MARK in key:
        return (
            f"a period key must not contain {DERIVED_MARK!r}, which separates sequence name and period, as {key!r} does"
        )
    problem = text_problem(key)
    if problem is not None:
        return f"a period key names a row, and {key!r} cannot: {problem}"
    return None


class Reset:
    """A field's reset options (reset, fiscal_year_start) as one rule: which period an instant falls in."""

    def __init__(self, reset: ResetOption, fiscal_year_start: Any = None) -> None:
        self.reset = reset
        self.fiscal_year_start = fiscal_year_start
        self.start_problem = fiscal_start_problem(fiscal_year_start)
        self.from_record = self.start_problem is None and is_record_start(fiscal_year_start)
        fixed = None if self.start_problem or self.from_record else fiscal_year_start
        self._start: int | None = SAMPLE_RECORD_START if self.from_record else fixed

    @property
    def is_callable(self) -> bool:
        return callable(self.reset) and not isinstance(self.reset, str)

    @property
    def is_named(self) -> bool:
        return isinstance(self.reset, str) and self.reset in NAMED

    @property
    def is_fiscal(self) -> bool:
        return self.reset == "yearly" and self._start not in (None, 1)

    @property
    def sample_start(self) -> int | None:
        """The fiscal year's first month the checks' samples use: None when unset or refused."""
        return self._start

    @property
    def word(self) -> str:
        """What one period is called in messages: "day", "fiscal year", "period"."""
        if self.is_fiscal:
            return "fiscal year"
        return NAMED[cast(str, self.reset)] if self.is_named else "period"

    def key(self, moment: datetime, record: Any = None) -> str | None:
        """The period `moment` falls in; None without a (known) reset. A callable's key is checked here; a fiscal year
        whose start the record gives is the record's (a field's instance, or the scope values given in code)."""
        if self.is_callable:
            key = cast(ResetCallable, self.reset)(moment)
            problem = key_problem(key)
            if problem:
                raise ValueError(f"reset callable {_name_of(self.reset)} returned {key!r} for {moment}: {problem}.")
            return key
        if self.is_named:
            if self.reset == "yearly" and self.start_problem:
                raise ValueError(f'reset="yearly" with {self.start_problem}.')
            if self.reset == "yearly" and self.from_record:
                return named_key(moment, "yearly", record_start(self.fiscal_year_start, record))
            return self.sample_key(moment)
        return None

    def sample_key(self, moment: datetime) -> str:
        """The key of a named period, never raising: what the system checks sample formats against."""
        return named_key(moment, self.reset, self._start)  # type: ignore[arg-type]

    def spelled(self) -> str:
        """The reset as a recorded shape spells it: "", "daily", "yearly from month 4", or a callable's import path."""
        if self.reset is None:
            return ""
        if self.is_callable:
            return _name_of(self.reset)
        if self.from_record:
            start = self.fiscal_year_start
            return f"{self.reset} from month {start if isinstance(start, str) else _name_of(start)}"
        if self.is_fiscal:
            return f"{self.reset} from month {self._start}"
        return str(self.reset)

    def key_shown(self, shown: str, spec: str) -> str:
        """The period key a text's {period:spec} shows: the key itself, or for {period:%Y} the yearly key of the year
        shown ("2024" is "FY2024" for a fiscal year), as the row that counted it is named."""
        if "%Y" not in spec:
            return shown
        year = next((run for run in re.findall(r"[0-9]{4}", shown)), None)
        if year is None or self.reset != "yearly":
            return shown
        return f"FY{year}" if self.is_fiscal or self.from_record else year

    def import_problem(self) -> str | None:
        """Why migrations could not refer to a callable reset (a lambda, a nested function), or None."""
        if not self.is_callable:
            return None

        try:
            serializer_factory(self.reset).serialize()
        except ValueError as exc:
            return str(exc).strip()
        return None


def _name_of(func: Any) -> str:
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"
