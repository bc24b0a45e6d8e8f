"""Flow-number formats: parse and check a template, find its period, width cap and widest output, and render it."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Any, Union

from django.conf import settings
from django.utils import timezone

from .ranges import BIGINT_MAX

# reset → the strftime pattern of its period key; the key is also the suffix of the period row's name.
RESETS: dict[str, str] = {"daily": "%Y-%m-%d", "monthly": "%Y-%m", "yearly": "%Y"}
# The longest suffix a period adds to a sequence name ("@2026-11-22").
PERIOD_SUFFIX_LENGTH = 11

# max_length of a formatted field when none is given: the widest output, at least this.
MIN_DEFAULT_MAX_LENGTH = 32
# Width assumed for one {instance.…} placeholder when choosing a default max_length.
ASSUMED_INSTANCE_WIDTH = 20
# max_length of a field with a callable format when none is given.
CALLABLE_DEFAULT_MAX_LENGTH = 64

FormatCallable = Callable[[int, Any, datetime], str]
Format = Union[str, FormatCallable]

# Python's format-spec mini-language, for the parts that decide a zero-padded width.
_SPEC = re.compile(
    r"^(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<z>z)?(?P<alt>#)?(?P<zero>0)?(?P<width>\d+)?"
    r"(?P<grouping>[,_])?(?:\.(?P<precision>\d+))?(?P<type>[bcdeEfFgGnosxX%])?$"
)


def now() -> datetime:
    """The instant that fills {date} and picks the period; tests replace this function to move the clock."""
    current = timezone.now()
    if settings.USE_TZ:
        return timezone.localtime(current, timezone.get_default_timezone())
    return current


def period_key(moment: datetime, reset: str | None) -> str | None:
    """The period `moment` falls in ("2026-11-22", "2026-11", "2026"), or None without reset."""
    if reset is None:
        return None
    return moment.strftime(RESETS[reset])


def period_row_name(sequence_name: str, period: str | None) -> str:
    """The name of the row that counts one period of a sequence: "order@2026-11-22"."""
    return sequence_name if period is None else f"{sequence_name}@{period}"


def width_cap(spec: str) -> int | None:
    """The largest number a zero-padded spec ("04d") renders without growing wider; None when it is not zero-padded."""
    match = _SPEC.match(spec)
    if match is None or not match["width"]:
        return None
    zero_padded = match["zero"] or (match["fill"] == "0" and match["align"] in ("=", ">"))
    if not zero_padded:
        return None
    width = int(match["width"])
    if len(format(0, spec)) > width:
        return -1  # even 0 is wider than the width: nothing fits
    low, high = 0, BIGINT_MAX
    while low < high:
        middle = (low + high + 1) // 2
        if len(format(middle, spec)) <= width:
            low = middle
        else:
            high = middle - 1
    return low


def _sample_instants() -> list[datetime]:
    """Noon of every day over fourteen months spanning a year end, in the project's time zone."""
    zone = timezone.get_default_timezone() if settings.USE_TZ else dt_timezone.utc
    start = datetime(2023, 12, 1, 12, 0, 0, 123456)
    instants = []
    for day in range(428):
        naive = start + timedelta(days=day)
        instants.append(timezone.make_aware(naive, zone) if settings.USE_TZ else naive)
    return instants


class FlowFormat:
    """A parsed format: a template string with {value}, {date} and {instance.attr}, or a callable.

    Problems found while parsing are kept in `problems` for the system checks rather than raised,
    so one bad field does not stop Django from loading the others.
    """

    def __init__(self, source: Any) -> None:
        self.source = source
        self.is_callable = callable(source) and not isinstance(source, str)
        self.problems: list[str] = []
        self.has_value = False
        self.value_specs: list[str] = []
        self.date_specs: list[str] = []
        self.instance_paths: list[str] = []
        self.literal_length = 0
        self.cap: int | None = None
        if self.is_callable:
            self.has_value = True  # cannot be known; the callable is trusted to use it
        elif isinstance(source, str):
            self._parse(source)
        else:
            self.problems.append(f"format must be a string or a callable, not {type(source).__name__}")

    def _parse(self, template: str) -> None:
        try:
            parts = list(string.Formatter().parse(template))
        except ValueError as exc:
            self.problems.append(f"format {template!r} is not a valid format string: {exc}")
            return
        for literal, field, spec, conversion in parts:
            self.literal_length += len(literal)
            if field is None:
                continue
            if "{" in (spec or ""):
                self.problems.append(f"placeholder {{{field}:{spec}}} has a nested placeholder in its spec")
                continue
            if field == "value":
                self._add_value(spec or "", conversion)
            elif field == "date":
                self._add_date(spec or "", conversion)
            elif field.startswith(("instance.", "instance[")):
                self.instance_paths.append(field[len("instance") :])
            else:
                self.problems.append(
                    f"placeholder {{{field}}} is unknown; use {{value}}, {{date}} or {{instance.<attribute>}}"
                )

    def _add_value(self, spec: str, conversion: str | None) -> None:
        self.has_value = True
        if conversion:
            self.problems.append("{value} takes no conversion (!r, !s, !a); give an int format spec such as {value:06d}")
            return
        try:
            format(1, spec)
        except ValueError as exc:
            self.problems.append(f"{{value:{spec}}} is not a valid int format spec: {exc}")
            return
        self.value_specs.append(spec)
        cap = width_cap(spec)
        if cap is not None:
            self.cap = cap if self.cap is None else min(self.cap, cap)

    def _add_date(self, spec: str, conversion: str | None) -> None:
        if conversion:
            self.problems.append("{date} takes no conversion (!r, !s, !a); give a strftime spec such as {date:%Y%m%d}")
            return
        self.date_specs.append(spec)

    def widest(self, instance_widths: list[int] | None = None) -> int | None:
        """The longest text this format renders for numbers up to its cap; None for a callable.

        `instance_widths` gives the width of each {instance.…} placeholder; missing ones count as
        ASSUMED_INSTANCE_WIDTH.
        """
        if self.is_callable or self.problems:
            return None
        top = self.cap if self.cap is not None else BIGINT_MAX
        total = self.literal_length + sum(len(format(max(top, 0), spec)) for spec in self.value_specs)
        if self.date_specs:
            total += max(
                sum(len(format(moment, spec)) for spec in self.date_specs) for moment in _sample_instants()
            )
        widths = list(instance_widths or [])
        widths += [ASSUMED_INSTANCE_WIDTH] * (len(self.instance_paths) - len(widths))
        return total + sum(widths[: len(self.instance_paths)])

    def default_max_length(self) -> int:
        if self.is_callable:
            return CALLABLE_DEFAULT_MAX_LENGTH
        widest = self.widest()
        return max(MIN_DEFAULT_MAX_LENGTH, widest or 0)

    def period_problem(self, reset: str) -> str | None:
        """Why this format's date part cannot tell two periods of `reset` apart, or None when it can."""
        if self.is_callable or self.problems:
            return None
        if not self.date_specs:
            return f'it has no {{date}}, so every {_PERIOD_WORD[reset]} repeats the same texts'
        seen: dict[tuple[str, ...], str] = {}
        for moment in _sample_instants():
            text = tuple(format(moment, spec) for spec in self.date_specs)
            key = moment.strftime(RESETS[reset])
            if seen.setdefault(text, key) != key:
                shown = "".join(text)
                return (
                    f"its date part renders {shown!r} both in {seen[text]} and in {key}, "
                    f"so two {_PERIOD_WORD[reset]}s would hand out the same texts"
                )
        return None

    def render(self, value: int, instance: Any, moment: datetime) -> str:
        """The text for one number; a callable format gets (value, instance, moment)."""
        if self.is_callable:
            text = self.source(value, instance, moment)
            if not isinstance(text, str):
                raise TypeError(f"format callable {self.source!r} returned {type(text).__name__}, not str")
            return text
        return self.source.format(value=value, date=moment, instance=instance)


_PERIOD_WORD = {"daily": "day", "monthly": "month", "yearly": "year"}
