"""The gap report of one field: per scope and period, the numbers missing between the first and the highest stored,
split into voided (with their reasons) and unexplained.

An integer field's gaps are found by the database (LEAD over each scope's rows in number order), so only the
gaps reach Python; a formatted field's texts are streamed and read back with the field's own format.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connections, router
from django.db.models import Count, F, Max, Min, Q, Window
from django.db.models.functions import Lead

from django_segment_seq.audit.exceptions import UnknownField
from django_segment_seq.audit.models import VoidedNumber
from django_segment_seq.audit.ranges import Span, VoidedSpan, missing_between, split
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import shown
from django_segment_seq.exceptions import SequenceScopeError
from django_segment_seq.flow.rules import NumberRule
from django_segment_seq.flow.texts import TextReader
from django_segment_seq.numbered import NumberedColumn, column_of_label, text_reading
from django_segment_seq.sync import model_rows

# Rows read per round trip: texts are short, and fewer round trips matter on a million of them.
SCAN_CHUNK = 20_000

# One series: (scope key, period), each None when the field has none.
SeriesKey = tuple[str | None, str | None]


@dataclass
class Series:
    """One scope and period of a field: its first and highest stored number and what is missing between them."""

    scope: str | None
    period: str | None
    first: int
    highest: int
    stored: int
    voided: list[VoidedSpan] = field(default_factory=list)
    unexplained: list[Span] = field(default_factory=list)
    # Rows holding a number another row of the series holds too: stored counts them, the numbers do not.
    repeated: int = 0

    @property
    def voided_count(self) -> int:
        return sum(run.span.count for run in self.voided)

    @property
    def unexplained_count(self) -> int:
        return sum(span.count for span in self.unexplained)


@dataclass
class GapReport:
    """Every series of a field that has numbers stored, and how many texts could not be read back: not made by the
    format (another prefix, a format changed since), or concealed under a key no longer configured."""

    label: str
    series: list[Series]
    unreadable: int = 0
    # Why some concealed texts could not be read (ConcealKeyChanged's message), or "".
    key_missing: str = ""

    @property
    def repeated(self) -> int:
        return sum(one.repeated for one in self.series)

    @property
    def voided_count(self) -> int:
        return sum(one.voided_count for one in self.series)

    @property
    def unexplained_count(self) -> int:
        return sum(one.unexplained_count for one in self.series)


class _Scopes:
    """Scope keys of rows, from their scope columns' values; None for a row whose empty scope has no counter."""

    def __init__(self, column: NumberedColumn) -> None:
        self.column = column
        self.attnames = column.scope_attnames
        self.known: dict[tuple[Any, ...], str | None] = {}

    def key(self, values: tuple[Any, ...]) -> str | None:
        if not self.attnames:
            return None
        if values not in self.known:
            try:
                self.known[values] = self.column.scope_of(self.column.row_values(values))
            except SequenceScopeError:
                self.known[values] = None
        return self.known[values]


def gap_report(
    field_label: str,
    *,
    period: str | None = None,
    scope: str | None = None,
    using: str | None = None,
    rule: NumberRule | str | None = None,
    scope_from: Mapping[str, str] | None = None,
) -> GapReport:
    """The gaps of the field `field_label`, narrowed to one period and one scope (its key or as shown) if given.

    A column that is not a SequenceField (numbers made in code by next_text) is read by `rule`, the rule that
    made them (a NumberRule, its import path, or the label of a SequenceField it is shared with); each scope
    value from the column `scope_from` names for it, else the column of the scope's name.

    UnknownField for a bad label or a column without a rule; UnparseableFormat when a formatted field's texts
    cannot be read back; ValueError for a period of a field without reset, a scope of an unscoped one, a period
    or scope that names no series with numbers stored, or an unknown database alias.
    """
    column = column_of_label(field_label, rule, scope_from=scope_from, error=UnknownField)
    model, label = column.model, column.label
    if using is not None and using not in connections:
        raise ValueError(f"{label}: using={using!r} is not a database of DATABASES.")
    alias = using or router.db_for_read(model)
    rows = model_rows(column, alias)
    scopes = _Scopes(column)
    if period is not None and not column.periodic:
        raise ValueError(f"{label} counts without periods (it has no reset); give no period.")
    if scope is not None and not scopes.attnames:
        raise ValueError(f"{label} is not scoped; give no scope.")

    def wanted(key: SeriesKey) -> bool:
        return (period is None or key[1] == period) and (scope is None or scope in (key[0], shown(key[0])))

    key_missing = ""
    if column.is_text:
        found, unreadable, key_missing = _text_gaps(rows, column, scopes, wanted)
    else:
        found, unreadable = _integer_gaps(rows, column, scopes, wanted), 0
    if not found and (period is not None or scope is not None):
        raise ValueError(_names_no_series(label, period, scope))
    voided = _register(label, found)
    series = []
    for key, (first, highest, stored, distinct, gaps) in sorted(
        found.items(), key=lambda item: (item[0][1] or "", item[0][0] or "")
    ):
        explained, unexplained = split(gaps, voided.get(key, {}))
        series.append(Series(key[0], key[1], first, highest, stored, explained, unexplained, stored - distinct))
    return GapReport(label, series, unreadable, key_missing)


def _names_no_series(label: str, period: str | None, scope: str | None) -> str:
    """Why a narrowed report is refused: a mistyped period or scope would otherwise read as "nothing missing"."""
    named = " and ".join([f"period {period!r}"] * (period is not None) + [f"scope {scope!r}"] * (scope is not None))
    return (
        f"{label}: {named} names no series with numbers stored. Give a period as its key (2026, 2026-11, "
        "2026-W47, ...) and a scope as the sequence list shows it (company=42); run without them to see every series"
    )


# Per series: first, highest, how many stored, how many distinct, and the runs missing between first and highest.
Found = dict[SeriesKey, tuple[int, int, int, int, list[Span]]]


def _integer_gaps(rows: Any, column: NumberedColumn, scopes: _Scopes, wanted: Any) -> Found:
    """Asks the database for each scope's bounds and for the rows followed by a gap, nothing else."""
    name, attnames = column.name, scopes.attnames
    bounds: dict[SeriesKey, list[int]] = {}
    totals = {"first": Min(name), "highest": Max(name), "stored": Count(name), "distinct": Count(name, distinct=True)}
    if attnames:
        listed = rows.values(*attnames).annotate(**totals).values_list(*attnames, *totals)
    else:
        whole = rows.aggregate(**totals)
        listed = [] if whole["stored"] == 0 else [tuple(whole[total] for total in totals)]
    for *values, first, highest, stored, distinct in listed:
        key = (scopes.key(tuple(values)), None)
        if (attnames and key[0] is None) or not wanted(key):
            continue
        if key in bounds:  # two spellings of one scope value: one counter
            before = bounds[key]
            first, highest = min(first, before[0]), max(highest, before[1])
            stored, distinct = stored + before[2], distinct + before[3]
        bounds[key] = [first, highest, stored, distinct]
    following = Window(Lead(name), partition_by=[F(a) for a in attnames] or None, order_by=F(name).asc())
    gaps: dict[SeriesKey, list[Span]] = defaultdict(list)
    after_gaps = rows.annotate(following=following).filter(following__gt=F(name) + 1)
    for *values, number, next_number in after_gaps.values_list(*attnames, name, "following").iterator(SCAN_CHUNK):
        key = (scopes.key(tuple(values)), None)
        if key in bounds:
            gaps[key].append(Span(number + 1, next_number - 1))
    return {
        key: (first, highest, stored, distinct, sorted(gaps[key], key=lambda s: s.first))
        for key, (first, highest, stored, distinct) in bounds.items()
    }


def _text_gaps(rows: Any, column: NumberedColumn, scopes: _Scopes, wanted: Any) -> tuple[Found, int, str]:
    """Streams the texts, reads each back into its number and period, and finds the gaps of each series; texts no
    format of the field reads (another prefix included) are counted as unreadable."""
    reader = TextReader(text_reading(column))  # UnparseableFormat when the format cannot be read back
    unreadable = 0
    if len(reader.parsers) == 1 and reader.parser.prefix:
        prefixed = Q(**{f"{column.name}__startswith": reader.parser.prefix})
        unreadable = rows.exclude(prefixed).count()  # counted by the database, not read
        rows = rows.filter(prefixed)
    numbers: dict[SeriesKey, list[int]] = defaultdict(list)
    for values, text in _texts(rows, scopes.attnames, column.name):
        reading = reader.read(text)
        if reading is None:
            unreadable += 1
            continue
        key = (scopes.key(values), reading[1])
        if (scopes.attnames and key[0] is None) or not wanted(key):
            continue
        numbers[key].append(reading[0])
    found: Found = {}
    for key, stored in numbers.items():
        stored.sort()
        found[key] = (stored[0], stored[-1], len(stored), len(set(stored)), missing_between(stored))
    return found, unreadable, "" if reader.locked is None else str(reader.locked)


def _texts(rows: Any, attnames: list[str], name: str) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Each row's scope values and text, streamed; an unscoped field's column alone, read flat."""
    if not attnames:
        for text in rows.values_list(name, flat=True).iterator(chunk_size=SCAN_CHUNK):
            yield (), text
        return
    for *values, text in rows.values_list(*attnames, name).iterator(chunk_size=SCAN_CHUNK):
        yield tuple(values), text


def _register(label: str, found: Found) -> dict[SeriesKey, dict[int, str]]:
    """The voided numbers of the series found, by series: number -> reason."""
    register = VoidedNumber._default_manager.using(sequence_database()).filter(label=label)
    periods = {key[1] or "" for key in found}
    if len(periods) == 1:
        register = register.filter(period=periods.pop())
    voided: dict[SeriesKey, dict[int, str]] = defaultdict(dict)
    for scope, period, number, reason in register.values_list("scope", "period", "number", "reason").iterator():
        key = (scope or None, period or None)
        if key in found:
            voided[key][number] = reason
    return voided
