"""Flow-number formats: parse and check a template, find its instant, period, cap and widest output, and render it."""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from datetime import date, datetime, time
from typing import Any

from django.conf import settings
from django.utils import timezone

from django_segment_seq.db.columns import BIGINT_MAX
from django_segment_seq.flow.checkdigits import Algorithm, algorithm_named
from django_segment_seq.flow.concealing import MAX_WIDTH, MIN_WIDTH, Concealment
from django_segment_seq.flow.resets import PeriodKey, Reset
from django_segment_seq.flow.samples import dated_samples

# The longest suffix a period adds to a sequence name ("@2026-11-22").

# max_length of a formatted field when none is given: the widest output, at least this.
MIN_DEFAULT_MAX_LENGTH = 32
# Width assumed for one {instance.…} placeholder when choosing a default max_length.
ASSUMED_INSTANCE_WIDTH = 20
# max_length of a field with a callable format when none is given.
CALLABLE_DEFAULT_MAX_LENGTH = 64

FormatCallable = Callable[[int, Any, datetime], str]
Format = str | FormatCallable

# Python's format-spec mini-language, for the parts that decide a zero-padded width.
SPEC = re.compile(
    r"^(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<z>z)?(?P<alt>#)?(?P<zero>0)?(?P<width>\d+)?"
    r"(?P<grouping>[,_])?(?:\.(?P<precision>\d+))?(?P<type>[bcdeEfFgGnosxX%])?$"
)
# A {value} spec that writes a plain, zero-padded, fixed-width decimal number: what a concealed number needs.
PLAIN_WIDTH = re.compile(r"^0(?P<width>\d+)d?$")


def now() -> datetime:
    """The instant that fills {date} and picks the period; tests replace this function to move the clock."""
    current = timezone.now()
    if settings.USE_TZ:
        return timezone.localtime(current, timezone.get_default_timezone())
    return current


def instant_of(value: Any) -> datetime:
    """The instant a record's date or datetime stands for, read like now(): a date is its midnight.

    Midnight is taken in the project's time zone, the one periods are cut in, so a date always falls
    in its own day's period; an aware datetime is converted to that zone. None falls back to now().
    """
    if value is None:
        return now()
    if not isinstance(value, datetime):
        if not isinstance(value, date):
            raise TypeError(f"expected a date or datetime, not {type(value).__name__}")
        value = datetime.combine(value, time())
    if not settings.USE_TZ:
        return timezone.make_naive(value) if timezone.is_aware(value) else value
    zone = timezone.get_default_timezone()
    if timezone.is_naive(value):
        return timezone.make_aware(value, zone)
    try:
        return timezone.localtime(value, zone)
    except OverflowError:
        raise ValueError(
            f"{value.isoformat()} lies at the edge of the calendar: in the time zone {zone} periods are cut in it "
            "falls outside the years 1 to 9999"
        ) from None


# The digits each integer presentation writes; no presentation ("") and "n" write decimal digits.
INTEGER_DIGITS = {
    "": "0123456789",
    "d": "0123456789",
    "n": "0123456789",
    "b": "01",
    "o": "01234567",
    "x": "0123456789abcdef",
    "X": "0123456789ABCDEF",
}


def ambiguous_fills(digits: str, align: str) -> str:
    """The fill characters that padding on `align`'s side can confuse with a number's own first or last characters.

    Padding before the number ('>', '=') collides with a leading digit (never 0) or a minus sign; padding
    after it ('<') with any last digit; centring ('^') with both.
    """
    before, after = digits[1:] + "-", digits
    return {">": before, "=": before, "<": after, "^": before + after}[align]


def value_spec_problem(spec: str) -> str | None:
    """Why {value:spec} could write two numbers as one text, or fail on one, shown with an example; None if it
    writes every number as a text of its own (an integer presentation, padded only where it cannot be misread)."""
    match = SPEC.match(spec)
    if match is None:  # pragma: no cover - format() accepted it, and the pattern covers the mini-language
        return f"{{value:{spec}}} is a spec this check cannot read"
    kind = match["type"] or ""
    if kind in INTEGER_DIGITS:
        fill, align = match["fill"] or " ", match["align"]
        if align is None or fill not in ambiguous_fills(INTEGER_DIGITS[kind], align):
            return None
        example = _counterexample(spec)
        if example is None:
            return None  # the width is too narrow for any padding: nothing is ever padded
        why = f"its fill {fill!r} pads on the side where a number's own {fill!r} stands"
    else:
        why = f"{kind!r} is not an integer presentation (use d, x, X, o, b or n)"
        example = _counterexample(spec) or "large numbers lose digits"
    return f"{{value:{spec}}} does not give every number a text of its own: {why}; {example}"


def _counterexample(spec: str) -> str | None:
    """Two numbers the spec writes alike, or one it cannot write; None if the numbers tried show neither."""
    seen: dict[str, int] = {}
    for number in _probes():
        try:
            text = format(number, spec)
        except (ValueError, OverflowError) as exc:
            return f"{number} cannot be written ({exc})"
        if text in seen:
            return f"{seen[text]} and {number} are both written {text!r}"
        seen[text] = number
    return None


def _probes() -> list[int]:
    """Numbers that expose a spec that is not one-to-one: small ones, repeated digits and powers of each base."""
    found = set(range(-1000, 10_001))
    for base, digits in ((10, "0123456789"), (16, "0123456789abcdef"), (8, "01234567"), (2, "01")):
        for length in range(1, 64):
            numbers = [int(digit * length, base) for digit in digits[1:]] + [base**length]
            found.update(n + shift for n in numbers for shift in (-1, 0, 1) if n + shift <= BIGINT_MAX)
    found.update({2**53, 2**53 + 1, 0x110000, BIGINT_MAX})
    return sorted(found, key=lambda number: (abs(number), number < 0))  # small numbers first, positive first


def width_cap(spec: str) -> int | None:
    """The largest number a zero-padded spec ("04d") renders without growing wider; None when it is not zero-padded.

    The width kept is that of 0's text, which grouping makes wider than the spec's own ("08,d" writes 0,000,000).
    """
    match = SPEC.match(spec)
    if match is None or not match["width"]:
        return None
    zero_padded = match["zero"] or (match["fill"] == "0" and match["align"] in ("=", ">"))
    if not zero_padded:
        return None
    width = max(int(match["width"]), len(format(0, spec)))
    low, high = 0, BIGINT_MAX
    while low < high:
        middle = (low + high + 1) // 2
        if len(format(middle, spec)) <= width:
            low = middle
        else:
            high = middle - 1
    return low


class FlowFormat:
    """A parsed format: a template string with {value}, {date} and {instance.attr}, or a callable.

    Problems found while parsing are kept in `problems` for the system checks rather than raised,
    so one bad field does not stop Django from loading the others. `check_digits` names an algorithm whose
    check characters end every text; `conceal_as`, a sequence name, shows each number through its permutation.
    """

    def __init__(self, source: Any, *, check_digits: str | None = None, conceal_as: str | None = None) -> None:
        self.source = source
        self.check_digits: Algorithm | None = None
        self.check_digits_problem: str | None = None
        if check_digits is not None:
            try:
                self.check_digits = algorithm_named(check_digits)
            except ValueError as exc:
                self.check_digits_problem = str(exc)
        self.conceal_as = conceal_as
        self.concealment: Concealment | None = None
        self.conceal_problem: str | None = None
        self.is_callable = callable(source) and not isinstance(source, str)
        self.problems: list[str] = []
        # {value} specs that may write two numbers alike: a check of their own (E035), not a parse error.
        self.ambiguous: list[str] = []
        self.has_value = False
        self.value_specs: list[str] = []
        self.date_specs: list[str] = []
        self.period_specs: list[str] = []
        self.instance_paths: list[str] = []
        self.literal_length = 0
        self.cap: int | None = None
        if self.is_callable:
            self.has_value = True  # cannot be known; the callable is trusted to use it
        elif isinstance(source, str):
            self._parse(source)
        else:
            self.problems.append(f"format must be a string or a callable, not {type(source).__name__}")
        if conceal_as is not None and isinstance(source, str) and not self.problems:
            self._set_concealment(conceal_as)

    @property
    def check_width(self) -> int:
        """How many characters the check digits add to every text."""
        return self.check_digits.width if self.check_digits is not None else 0

    def _set_concealment(self, sequence_name: str) -> None:
        plain = [PLAIN_WIDTH.match(spec) for spec in self.value_specs]
        widths = {found["width"] for found in plain if found}
        if not plain or not all(plain) or len(widths) != 1:
            self.conceal_problem = (
                "a concealed number is shown in a fixed number of decimal digits: write every {value} as "
                "{value:0Nd} with one width N"
            )
            return
        width = int(widths.pop())
        if not MIN_WIDTH <= width <= MAX_WIDTH:
            self.conceal_problem = (
                f"{{value:0{width}d}} gives {width} digits; concealing needs {MIN_WIDTH} to {MAX_WIDTH} "
                f"(fewer than a million numbers are too few to hide volume, NIST SP 800-38G)"
            )
            return
        self.concealment = Concealment(sequence_name, width)

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
            elif field == "period":
                self._add_period(spec or "", conversion)
            elif field.startswith(("instance.", "instance[")):
                self.instance_paths.append(field[len("instance") :])
            else:
                self.problems.append(
                    f"placeholder {{{field}}} is unknown; "
                    "use {value}, {date}, {period} or {instance.<attribute>}"
                )

    def _add_value(self, spec: str, conversion: str | None) -> None:
        self.has_value = True
        if conversion:
            self.problems.append(
                "{value} takes no conversion (!r, !s, !a); give an int format spec such as {value:06d}"
            )
            return
        try:
            format(1, spec)
        except ValueError as exc:
            self.problems.append(f"{{value:{spec}}} is not a valid int format spec: {exc}")
            return
        ambiguous = value_spec_problem(spec)
        if ambiguous is not None:
            self.ambiguous.append(ambiguous)
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

    def _add_period(self, spec: str, conversion: str | None) -> None:
        if conversion:
            self.problems.append("{period} takes no conversion (!r, !s, !a); it is already text")
            return
        try:
            format(PeriodKey("2026-11"), spec)
        except ValueError as exc:
            self.problems.append(f"{{period:{spec}}} is not a valid str format spec: {exc}")
            return
        self.period_specs.append(spec)

    def widest(self, instance_widths: list[int] | None = None, reset: Reset | None = None) -> int | None:
        """The longest text this format renders for numbers up to its cap; None for a callable.

        `instance_widths` gives the width of each {instance.…} placeholder; missing ones count as
        ASSUMED_INSTANCE_WIDTH. A {period} of a callable reset counts as KEY_MAX_LENGTH.
        """
        if self.is_callable or self.problems or self.ambiguous:
            return None
        top = self.cap if self.cap is not None else BIGINT_MAX
        total = (
            self.literal_length + self.check_width + sum(len(format(max(top, 0), spec)) for spec in self.value_specs)
        )
        if self.date_specs or self.period_specs:
            samples = dated_samples(self.date_specs, self.period_specs, reset)
            total += max(sum(len(text) for text in texts) for texts, _key in samples)
        widths = list(instance_widths or [])
        widths += [ASSUMED_INSTANCE_WIDTH] * (len(self.instance_paths) - len(widths))
        return total + sum(widths[: len(self.instance_paths)])

    def default_max_length(self, reset: Reset | None = None) -> int:
        if self.is_callable:
            return CALLABLE_DEFAULT_MAX_LENGTH
        widest = self.widest(reset=reset)
        return max(MIN_DEFAULT_MAX_LENGTH, widest or 0)

    def period_problem(self, reset: Reset | str) -> str | None:
        """Why this format cannot tell two periods of `reset` apart, or None when it can.

        Named periods are tried on every day of fourteen months; the period of a callable can only be
        shown whole by {period}.
        """
        if isinstance(reset, str):
            reset = Reset(reset)
        if self.is_callable or self.problems or not (reset.is_named or reset.is_callable):
            return None
        if reset.is_callable:
            sample = "0123456789"  # KEY_MAX_LENGTH characters no fill or padding makes up
            if any(sample in format(sample, spec) for spec in self.period_specs):
                return None
            return "the period of a reset callable is shown only by a {period} that is not cut short"
        if not self.date_specs and not self.period_specs:
            return f"it has neither {{date}} nor {{period}}, so every {reset.word} repeats the same texts"
        seen: dict[tuple[str, ...], str] = {}
        for text, key in dated_samples(self.date_specs, self.period_specs, reset):
            if seen.setdefault(text, key) != key:
                shown = "".join(text)
                parts = (
                    "date and period parts render"
                    if self.date_specs and self.period_specs
                    else ("date part renders" if self.date_specs else "period part renders")
                )
                return (
                    f"its {parts} {shown!r} both in {seen[text]} and in {key}, "
                    f"so two {reset.word}s would hand out the same texts"
                )
        return None

    def render(self, value: int, instance: Any, moment: datetime, period: str | None = None) -> str:
        """The text for one number; a callable format gets (value, instance, moment)."""
        if self.is_callable:
            text = self.source(value, instance, moment)
            if not isinstance(text, str):
                raise TypeError(f"format callable {self.source!r} returned {type(text).__name__}, not str")
            return text
        template: str = self.source
        shown = value if self.concealment is None else self.concealment.conceal(value)
        text = template.format(value=shown, date=moment, period=PeriodKey(period or ""), instance=instance)
        if self.check_digits is not None:
            text += self.check_digits.digits_for(text)
        return text
