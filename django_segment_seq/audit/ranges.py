"""Runs of numbers: missing numbers kept and shown as ranges ("1041" to "1043" joined by an en dash), split into
voided and unexplained."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise

# Between the ends of a range, as typeset ranges are written.
EN_DASH = "\u2013"


@dataclass(frozen=True)
class Span:
    """The numbers first to last, both included."""

    first: int
    last: int

    @property
    def count(self) -> int:
        return self.last - self.first + 1

    def __str__(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}{EN_DASH}{self.last}"


@dataclass(frozen=True)
class VoidedSpan:
    """Voided numbers in a row that share one reason."""

    span: Span
    reason: str


def runs(numbers: Iterable[int]) -> list[Span]:
    """Sorted numbers as the runs of consecutive ones they make."""
    found: list[Span] = []
    for number in numbers:
        if found and number == found[-1].last + 1:
            found[-1] = Span(found[-1].first, number)
        elif not found or number > found[-1].last:
            found.append(Span(number, number))
    return found


def missing_between(numbers: list[int]) -> list[Span]:
    """The runs missing between sorted stored numbers (repeats allowed)."""
    return [Span(low + 1, high - 1) for low, high in pairwise(numbers) if high - low > 1]


def split(gaps: list[Span], voided: Mapping[int, str]) -> tuple[list[VoidedSpan], list[Span]]:
    """The gaps' numbers in the register (runs of one reason) and the rest, the unexplained ones."""
    known = sorted(voided)
    explained: list[VoidedSpan] = []
    unexplained: list[Span] = []
    for gap in gaps:
        start = gap.first
        for number in known[bisect_left(known, gap.first) : bisect_right(known, gap.last)]:
            if number > start:
                unexplained.append(Span(start, number - 1))
            last = explained[-1] if explained else None
            if last is not None and last.span.last == number - 1 and last.reason == voided[number]:
                explained[-1] = VoidedSpan(Span(last.span.first, number), last.reason)
            else:
                explained.append(VoidedSpan(Span(number, number), voided[number]))
            start = number + 1
        if start <= gap.last:
            unexplained.append(Span(start, gap.last))
    return explained, unexplained
