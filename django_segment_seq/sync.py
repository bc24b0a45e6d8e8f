"""Move sequence rows past the highest numbers stored in a column, after data numbered elsewhere was imported or numbers
were made in code: the row of each period and scope the stored numbers belong to."""

from __future__ import annotations

import dataclasses
import re
import string
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from django.core.exceptions import ValidationError
from django.db import models, router
from django.db.models import Max, Q

from django_segment_seq.api import clear_cache
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import DERIVED_MARK, row_name, validate_sequence_name
from django_segment_seq.db.table import Sequence
from django_segment_seq.exceptions import SequenceScopeError
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.fields.sequence import FormattedSequenceField
from django_segment_seq.flow.derived import ensure_row
from django_segment_seq.flow.formats import FlowFormat
from django_segment_seq.flow.parsing import DATE_DIRECTIVES, FormatParser, TextNumbers
from django_segment_seq.flow.resets import key_problem
from django_segment_seq.flow.rules import NumberRule
from django_segment_seq.flow.scopes import scope_key
from django_segment_seq.flow.texts import TextReader
from django_segment_seq.numbered import (
    MissingScope,
    NumberedColumn,
    find_rule,
    numbered_column,
    rules_of_sequence,
    scope_fields,
    stored_column,
)

if TYPE_CHECKING:
    from django_segment_seq.flow.resets import Reset

# Rows read per round trip while scanning a formatted column for its highest number.
SCAN_CHUNK = 5000

# The Sequence row a field takes a number from: its encoded scope and its period, each None when it has none.
Target = tuple[str | None, str | None]

# strftime directives finer than a day: named periods are whole days, so these never tell two periods apart.
_TIME_DIRECTIVES = frozenset("HIMSf")
# A named period is at most a year (366 days); walking further from one of its days would find no end.
_LONGEST_PERIOD = 400


@dataclass(frozen=True)
class SyncResult:
    """What sync_sequence() found and did; `before`/`after` are the row's value (None: no row)."""

    row_name: str
    highest: int | None
    before: int | None
    after: int | None
    unreadable: int = 0  # texts of the column the format could not read back (other shapes), ignored
    # Of a column seeded from (not a SequenceField): how many stored numbers lie at or below `before`, where the
    # ranges processes cached before the move lie; None when not counted (the row was missing, or moved meanwhile).
    at_or_below: int | None = None
    created: bool = False  # the row was missing and made now: no process held a range of it

    @property
    def safe_for_running_processes(self) -> bool:
        """Whether no process running now can hand out a stored number of this row from a range it took before."""
        return self.created or self.at_or_below == 0

    @property
    def moved(self) -> bool:
        return self.before != self.after


def empty_values(field: models.Field[Any, Any]) -> Q:
    """Rows whose value the field would still fill: NULL, and for a formatted field also ''."""
    empty = Q(**{f"{field.name}__isnull": True})
    if isinstance(field, FormattedSequenceField):
        empty |= Q(**{field.name: ""})
    return empty


def row_target(field: SequenceFieldBase, instance: Any) -> tuple[Target, datetime | None]:
    """The scope and period whose row numbers `instance`, picked as the field's own numbering picks them, and the
    instant that picked the period (None without one). `instance` needs only the scope fields and reset_on."""

    scope = scope_key(field, instance)
    if not isinstance(field, FormattedSequenceField):
        return (scope, None), None  # an integer field counts without periods
    moment = field.instant(instance)
    period = field.reset_rule.key(moment, instance)
    return (scope, period), (moment if period is not None else None)


class _StoredTexts:
    """Reads a formatted field's stored texts back: each one's number, and which of the wanted periods it is of.

    The period comes from the text itself, as what its {date} and {period} show, not from the row's
    date column: the text is what a number handed out again would repeat. A named period's texts are
    those a day of it renders (the parts of {date} finer than a day may be anything); a callable
    period is shown only by {period}. A text of a shape the format cannot tell apart counts for
    every period it could be of.
    """

    def __init__(self, field: FormattedSequenceField, periods: dict[str, datetime]) -> None:
        self.parser = FormatParser(field.flow)  # UnparseableFormat when the texts cannot be read back
        flow, reset = field.flow, field.reset_rule
        self.keyed = reset.is_named or reset.is_callable
        self.date_specs = list(flow.date_specs) if reset.is_named else []
        self.period_specs = list(flow.period_specs)
        self.day_patterns = [_day_pattern(spec) for spec in self.date_specs]
        self.periods_of: dict[tuple[tuple[Any, ...], tuple[str, ...]], set[str]] = {}
        # What every wanted text starts with, to narrow the scan: the literal text, and a leading {date} as far
        # as all days of the wanted periods show the same.
        self.prefix = self.parser.prefix
        leading: list[str] = []
        for period, moment in periods.items():
            days: list[date | None] = list(_days_of(reset, period, moment)) if reset.is_named else [None]
            leading += [_leading_text(flow.source, day) for day in days if day is not None]
            shown = tuple(format(period, spec) for spec in self.period_specs)
            for day in days:
                dates: tuple[tuple[str, ...] | None, ...] = ()
                if day is not None:
                    noon = datetime.combine(day, time(12))
                    dates = tuple(self._day_part(i, format(noon, spec)) for i, spec in enumerate(self.date_specs))
                self.periods_of.setdefault((dates, shown), set()).add(period)
        if leading:
            self.prefix = _common_start(leading)

    def read(self, text: str) -> tuple[int, set[str | None]] | None:
        """The number in `text` and the wanted periods it is of (without reset: None); None for another shape."""
        parts = self.parser.parts(text)
        if parts is None:
            return None
        number, dates, shown = parts
        if not self.keyed:
            return number, {None}
        day_parts = tuple(self._day_part(i, dates[i]) for i in range(len(self.date_specs)))
        return number, set(self.periods_of.get((day_parts, shown), ()))

    def _day_part(self, index: int, text: str) -> tuple[str, ...] | None:
        found = self.day_patterns[index].fullmatch(text)
        return None if found is None else found.groups()


def _day_pattern(spec: str) -> re.Pattern[str]:
    """A {date:spec} text, with a group for each part that shows the day, month or year (not the time of day)."""
    if not spec:  # str(datetime): the date, then the time
        return re.compile(r"(\d{4}-\d{2}-\d{2}) .*", re.DOTALL)
    pattern = []
    for piece in re.split(r"(%.)", spec):
        if len(piece) == 2 and piece.startswith("%"):
            shape = DATE_DIRECTIVES[piece[1]]  # FormatParser has refused every other directive
            pattern.append(shape if piece[1] in _TIME_DIRECTIVES or piece[1] == "%" else f"({shape})")
        else:
            pattern.append(re.escape(piece))
    return re.compile("".join(pattern), re.DOTALL)


def _leading_text(source: str, day: date) -> str:
    """The start of every text `source` renders on `day`: its literal text and {date}s up to another placeholder,
    cut where the time of day shows."""
    texts = []
    for moment in (datetime.combine(day, time.min), datetime.combine(day, time.max)):
        text = ""
        for literal, placeholder, spec, _conversion in string.Formatter().parse(source):
            text += literal
            if placeholder != "date":
                break
            text += format(moment, spec or "")
        texts.append(text)
    return _common_start(texts)


def _common_start(texts: list[str]) -> str:
    """The longest text all of `texts` start with."""
    first, last = min(texts), max(texts)
    size = 0
    while size < len(first) and first[size] == last[size]:
        size += 1
    return first[:size]


def _days_of(reset: Reset, period: str, moment: datetime) -> list[date]:
    """Every day of the named `period` that `moment` falls in."""

    def inside(day: date) -> bool:
        return reset.key(datetime.combine(day, time(12))) == period

    day = moment.date()
    first, last = day, day
    while (day - first).days < _LONGEST_PERIOD and inside(first - timedelta(days=1)):
        first -= timedelta(days=1)
    while (last - day).days < _LONGEST_PERIOD and inside(last + timedelta(days=1)):
        last += timedelta(days=1)
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def highest_per_row(
    model: type[models.Model],
    field: SequenceFieldBase,
    targets: dict[Target, datetime | None],
    *,
    using: str | None = None,
) -> tuple[dict[Target, int], int]:
    """The highest number stored for each of `targets` that has one, and how many texts were unreadable.

    `targets` maps each (scope, period) to an instant in that period (None without period). A row's
    scope is read from its scope fields; a formatted text's period from the text (_StoredTexts).
    UnparseableFormat for formats that cannot be read back.
    """

    alias = using or router.db_for_read(model)
    rows = model._base_manager.db_manager(alias).exclude(empty_values(field))
    by_scope = scope_fields(model, field)
    attnames = [scope_field.attname for scope_field in by_scope]
    scopes: dict[tuple[Any, ...], list[str | None]] = {}

    def scopes_of(values: tuple[Any, ...]) -> list[str | None]:
        """The scope of a row with these scope values: one, or none when the values have no counter (empty)."""
        if values not in scopes:
            instance = SimpleNamespace(**dict(zip(attnames, values, strict=True)))
            try:
                scopes[values] = [scope_key(field, cast(models.Model, instance))]
            except SequenceScopeError:
                scopes[values] = []
        return scopes[values]

    highest: dict[Target, int] = {}

    def keep(target: Target, number: int | None) -> None:
        if number is not None and target in targets and (target not in highest or number > highest[target]):
            highest[target] = number

    if not isinstance(field, FormattedSequenceField):
        if not attnames:
            keep((None, None), rows.aggregate(highest=Max(field.name))["highest"])
            return highest, 0
        grouped = rows.order_by().values(*attnames).annotate(highest=Max(field.name))
        for *values, number in grouped.values_list(*attnames, "highest"):
            for scope in scopes_of(tuple(values)):
                keep((scope, None), number)
        return highest, 0
    texts = _StoredTexts(field, {period: moment for (_, period), moment in targets.items() if period and moment})
    if texts.prefix:
        rows = rows.filter(**{f"{field.name}__startswith": texts.prefix})
    unreadable = 0
    for *values, text in rows.values_list(*attnames, field.name).iterator(chunk_size=SCAN_CHUNK):
        read = texts.read(text)
        if read is None:
            unreadable += 1
            continue
        number, periods = read
        for scope in scopes_of(tuple(values)):
            for period in periods:
                keep((scope, period), number)
    return highest, unreadable


def move_past(
    sequence_name: str, target: Target, highest: int, *, stored_in: str, cap: int | None = None
) -> SyncResult:
    """Move the row of `target` (scope, period) of the sequence up to `highest`, creating it when missing (capped at
    a format's `cap`); never backwards.

    ValueError when `highest` is above the row's maximum. The caller clears this process's cached ranges.
    """

    scope, period = target
    name = row_name(sequence_name, scope, period)
    alias = sequence_database()
    row = Sequence._base_manager.using(alias).filter(name=name).first()
    created = row is None
    if row is None:
        derived = period is not None or scope is not None
        ensure_row(alias, name, base_name=sequence_name if derived else None, period=period, cap=cap)
        row = Sequence._base_manager.using(alias).get(name=name)
        created = row.value < row.min_value  # not already used by a process that made it meanwhile
    before = row.value
    if highest > row.max_value:
        raise ValueError(
            f"Sequence {name!r}: the highest value stored in {stored_in} is {highest}, "
            f"above the row's maximum {row.max_value}. Raise the maximum first."
        )
    if highest > row.value:
        row.value = highest
        row.save(update_fields=["value"])  # a conditional, forward-only UPDATE
    return SyncResult(name, highest, before, row.value, created=created)


def sync_rows(
    model: type[models.Model],
    field: SequenceFieldBase,
    targets: dict[Target, datetime | None],
    *,
    using: str | None = None,
) -> tuple[list[SyncResult], int]:
    """Move the row of each of `targets` (scope, period) that has numbers stored past the highest of them.

    `targets` maps each to an instant in its period (None without period), as row_target() gives
    them. Returns what was done for each row with numbers stored, and how many texts were unreadable;
    then forgets this process's cached ranges. ValueError when a highest value is above its row's
    maximum (rows moved before it stay moved); UnparseableFormat for formats that cannot be read back.
    """

    highest, unreadable = highest_per_row(model, field, targets, using=using)
    stored_in = f"{model._meta.label}.{field.name}"
    in_order = sorted(highest, key=lambda target: (target[0] or "", target[1] or ""))
    cap = field.flow.cap if isinstance(field, FormattedSequenceField) else None
    try:
        return [
            move_past(field.sequence_name, target, highest[target], stored_in=stored_in, cap=cap) for target in in_order
        ], unreadable
    finally:
        clear_cache()


@dataclass(frozen=True)
class SyncReport:
    """What sync_sequence() found and did: each row that numbers stored belong to, in name order, and the texts it
    could not place in one (another shape, a period it cannot tell, an empty scope value)."""

    label: str
    sequence_name: str
    rows: tuple[SyncResult, ...]
    unreadable: int = 0
    empty_scope: int = 0  # rows whose scope value is empty: no counter holds their number
    seeded: bool = False  # from a column no SequenceField fills: numbers made in code, or before the app came
    read_by: str = ""  # how the stored values were read, for the report ("the rule tests.rules.INVOICE")

    @property
    def highest(self) -> int | None:
        """The highest number read over every row; None when the column holds none."""
        return max((row.highest for row in self.rows if row.highest is not None), default=None)

    @property
    def moved(self) -> list[SyncResult]:
        return [row for row in self.rows if row.moved]

    def row(self, name: str) -> SyncResult:
        """The result of the row named `name`; KeyError when no number stored belongs to it."""
        for result in self.rows:
            if result.row_name == name:
                return result
        raise KeyError(name)


def sync_sequence(
    model: type[models.Model],
    field_name: str,
    *,
    sequence: str | None = None,
    pattern: str | None = None,
    format: str | None = None,
    rule: NumberRule | str | None = None,
    scope_from: Mapping[str, str] | None = None,
    using: str | None = None,
) -> SyncReport:
    """Move every sequence row the stored numbers of a column belong to past the highest of them, creating the rows
    that are missing; never backwards. Then forgets this process's cached ranges.

    Each stored value is read into its number, its period and its scope: a SequenceField by its own rule (the
    period its text shows, the scope its scope fields hold); a column no SequenceField fills (numbers made in code,
    or by another system) by the rule it was numbered by (`rule`: a NumberRule, its import path or the label of a
    SequenceField it is shared with; else the rule of the SequenceFields declared with `sequence`), read through the
    rule's format, `format`, or `pattern` (a regular expression whose group `value`, or only group, is the number,
    `period` the period's key, and a group named after a scope name that scope's value). A scope the texts do not
    show is read from the column `scope_from` names for it, else the model's column of the scope's name. Without a
    rule the sequence's own row is moved, and a sequence that shows it counts per period or scope is refused.

    ValueError for a column, option or rule that cannot be read (MissingScope naming the rows and the command that
    seeds them), and when a highest value is above its row's maximum (rows moved before it stay moved);
    UnparseableFormat for formats that cannot be read back.
    """
    plan = _plan(model, field_name, sequence=sequence, pattern=pattern, format=format, rule=rule, scope_from=scope_from)
    alias = using or router.db_for_read(model)
    return plan.run(alias)


# One stored value read back: its number, the scope values its text shows by scope name, and its period key.
Reading = tuple[int, dict[str, str], str | None]


@dataclass
class _Plan:
    """How one column's stored values are read into rows of one sequence (see sync_sequence())."""

    column: NumberedColumn
    read: Callable[[Any], Reading | None]
    prefix: str = ""
    seeded: bool = False
    read_by: str = ""
    reads_period: bool = False
    # The format's width caps the rows made, as the rule's first use caps them; a format given alone caps nothing.
    capped: bool = True

    def run(self, alias: str) -> SyncReport:
        """Read every stored value of the column on `alias`, then move each row the values belong to past its
        highest; the report says what moved and what could not be read."""
        column = self.column
        scan = _Scan(self, self._values_before())
        rows = model_rows(column, alias)
        if self.prefix:
            prefixed = Q(**{f"{column.name}__startswith": self.prefix})
            scan.unreadable = rows.exclude(prefixed).count()  # counted by the database, not read
            rows = rows.filter(prefixed)
        for *values, stored in self._stream(rows, scan.before):
            scan.add(tuple(values), stored)
        results = self._move(scan)
        return SyncReport(
            column.label,
            column.sequence_name,
            tuple(results),
            scan.unreadable,
            scan.empty_scope,
            self.seeded,
            self.read_by,
        )

    def _values_before(self) -> dict[str, Any]:
        """The value of the sequence's own row and of each row derived from it, by name, read before the scan: the
        ranges processes cached before the move lie at or below them."""
        name = self.column.sequence_name
        return dict(
            Sequence._base_manager.using(sequence_database())
            .filter(Q(name=name) | Q(base_name=name))
            .values_list("name", "value")
        )

    def _stream(self, rows: models.QuerySet[Any], before: dict[str, Any]) -> Iterator[tuple[Any, ...]]:
        """Each row's scope values and stored value, read in chunks; an integer column of one counter is asked of
        the database instead (_aggregated), since only its highest and a count matter."""
        column = self.column
        if not column.rule.scope_names and not self.reads_period and not column.is_text:
            return _aggregated(rows, column.name, before.get(column.sequence_name))
        return rows.values_list(*column.scope_attnames, column.name).iterator(chunk_size=SCAN_CHUNK)

    def _move(self, scan: _Scan) -> list[SyncResult]:
        """Move each row the scan found numbers of past the highest, in name order, then forget this process's
        cached ranges. A row counts its numbers at or below where it was only if nothing moved it meanwhile."""
        column = self.column
        cap = column.flow.cap if column.flow is not None and self.capped else None
        results = []
        try:
            for target in sorted(scan.highest, key=lambda target: scan.names[target]):
                moved = move_past(column.sequence_name, target, scan.highest[target], stored_in=column.label, cap=cap)
                counted = scan.before.get(moved.row_name)
                at_or_below = scan.below.get(target, 0) if counted is not None and counted == moved.before else None
                results.append(dataclasses.replace(moved, at_or_below=at_or_below))
        finally:
            clear_cache()
        return results


@dataclass
class _Scan:
    """What the stored values of one column read so far show (see _Plan.run()): the highest number of each row, how
    many lie at or below the row's value before, and the values that belong to no row."""

    plan: _Plan
    before: dict[str, Any]  # each row's value before the scan, by name
    highest: dict[Target, int] = dataclasses.field(default_factory=dict)
    below: dict[Target, int] = dataclasses.field(default_factory=dict)
    names: dict[Target, str] = dataclasses.field(default_factory=dict)
    keys: dict[tuple[Any, ...], str | None] = dataclasses.field(default_factory=dict)  # scope values -> scope key
    unreadable: int = 0
    empty_scope: int = 0

    def add(self, values: tuple[Any, ...], stored: Any) -> None:
        """Count one stored value with the row's scope `values`: in its row's highest and count at or below, else as
        unreadable (no number or no period) or of an empty scope."""
        plan = self.plan
        reading = plan.read(stored)
        if reading is None or (plan.reads_period and reading[2] is None):
            self.unreadable += 1
            return
        number, shown, period = reading
        scope: str | None = None
        if plan.column.rule.scope_names:
            scope = self._scope(shown, values)
            if scope is None:
                self.empty_scope += 1
                return
        target = (scope, period)
        if target not in self.names:
            try:
                self.names[target] = row_name(plan.column.sequence_name, scope, period)
            except SequenceScopeError as exc:
                raise ValueError(str(exc)) from None
        count = 1
        if isinstance(number, tuple):  # (highest, how many at or below the row's value) from the database
            number, count = number
        if target not in self.highest or number > self.highest[target]:
            self.highest[target] = number
        value = self.before.get(self.names[target])
        if value is not None and (count > 1 or number <= value):
            self.below[target] = self.below.get(target, 0) + count

    def _scope(self, shown: dict[str, str], values: tuple[Any, ...]) -> str | None:
        """The scope key of the values the text shows and the row's scope columns hold, None for an empty one;
        worked out once per distinct set of values, as few sets recur over many rows."""
        column = self.plan.column
        given = {**shown, **column.row_values(values)}
        cache_key = tuple(sorted(given.items(), key=lambda item: item[0]))
        if cache_key not in self.keys:
            try:
                self.keys[cache_key] = column.scope_of(given)
            except SequenceScopeError:
                self.keys[cache_key] = None
        return self.keys[cache_key]


def _aggregated(rows: models.QuerySet[Any], name: str, before: int | None) -> Iterator[tuple[Any, ...]]:
    """The one counter of an integer column as the scan's single row: (highest, how many lie at or below `before`),
    computed by the database."""
    highest = rows.aggregate(highest=Max(name))["highest"]
    if highest is None:
        return
    count = 0 if before is None else rows.filter(**{f"{name}__lte": before}).count()
    yield ((highest, count),)


def model_rows(column: NumberedColumn, alias: str) -> models.QuerySet[Any]:
    """The rows of the column's model that hold a value: not NULL, and for a text column not ''."""
    rows = column.model._base_manager.db_manager(alias).exclude(**{f"{column.name}__isnull": True})
    if column.is_text:
        rows = rows.exclude(**{column.name: ""})
    return rows.order_by()


def _plan(
    model: type[models.Model],
    field_name: str,
    *,
    sequence: str | None,
    pattern: str | None,
    format: str | None,
    rule: NumberRule | str | None,
    scope_from: Mapping[str, str] | None,
) -> _Plan:
    """The column, its rule and its reader, or ValueError saying which option is wrong or missing."""
    label = f"{model._meta.label}.{field_name}"
    column = stored_column(model, field_name)
    if pattern is not None and format is not None:
        raise ValueError("give a pattern or a format, not both")
    if isinstance(column, SequenceFieldBase):
        if (sequence, pattern, format, rule) != (None, None, None, None) or scope_from:
            raise ValueError(
                f"{label} is a SequenceField, read by its own sequence and format: "
                "leave out the sequence, pattern, format, rule and scope columns."
            )
        numbered = numbered_column(model, field_name)
        return _reader_plan(numbered, None, None, seeded=False, read_by="")
    if not isinstance(column, (models.IntegerField, models.CharField, models.TextField)):
        raise ValueError(f"{label} is a {type(column).__name__}: seeding reads an integer or a text column.")
    if isinstance(column, models.IntegerField) and (pattern, format) != (None, None):
        raise ValueError(f"{label} holds integers: a pattern or a format reads texts.")
    if rule is None:
        if sequence is None:
            raise ValueError(
                f"{label} is a {type(column).__name__}, not a SequenceField: name the sequence whose rows to move "
                "past its numbers (--sequence NAME), or the rule its numbers were made by (--rule)."
            )
        rule = _declared_rule(label, sequence)
    else:
        numbers = find_rule(rule)[0].sequence_name
        if sequence is not None and sequence != numbers:
            raise ValueError(f"the rule numbers sequence {numbers!r}, not {sequence!r}: leave out --sequence.")
    if rule is not None:
        integers = isinstance(column, models.IntegerField)
        return _rule_plan(model, field_name, rule, pattern, format, scope_from, integers=integers)
    assert sequence is not None
    if scope_from:
        raise ValueError("--scope-from reads a scope of a rule: name the rule (--rule).")
    _refuse_base_only(label, sequence, pattern, format)
    numbered = NumberedColumn(model, column, NumberRule(sequence))
    return _reader_plan(numbered, pattern, format, seeded=True, read_by="")


def _declared_rule(label: str, sequence: str) -> str | None:
    """How the one rule known to number `sequence` is named (rules_of_sequence()), or None when none is: the column's
    numbers are then read by that rule. ValueError for a name that is no sequence's, or a sequence of several rules,
    since the column's own rule cannot be told."""
    _check_sequence_name(sequence)
    declared = rules_of_sequence(sequence)
    if len(set(declared.values())) > 1:
        raise ValueError(
            f"sequence {sequence!r} is numbered by several rules ({', '.join(sorted(declared))}): name the one "
            f"{label}'s numbers were made by (--rule)."
        )
    return next(iter(sorted(declared))) if declared else None


def _rule_plan(
    model: type[models.Model],
    field_name: str,
    rule: NumberRule | str,
    pattern: str | None,
    format: str | None,
    scope_from: Mapping[str, str] | None,
    *,
    integers: bool,
) -> _Plan:
    """A plan that reads a plain column (of integers: `integers`) by `rule`, the rule its numbers were made by, so
    each stored number lands in its period's and scope's row. ValueError for a format other than the rule's own;
    MissingScope, with the commands that seed such rows, for a scope nothing holds."""
    label = f"{model._meta.label}.{field_name}"
    found, _owner = find_rule(rule)
    if format is not None and found.flow is not None and format != found.flow.source:
        raise ValueError(
            f"the rule {rule} makes its texts by its own format {found.flow.source!r}, not {format!r}: leave "
            "out --format (or read texts of another shape with --pattern)."
        )
    if format is not None and found.flow is not None:
        format = None  # the rule's own, read with its reset
    read_by = f"the rule {rule}" if isinstance(rule, str) else f"the rule of sequence {found.sequence_name!r}"
    shown = _shown_names(found, pattern, integers)
    try:
        numbered = numbered_column(model, field_name, rule, scope_from=scope_from, shown=shown)
    except MissingScope as exc:
        raise MissingScope(exc.label, exc.rule, exc.names, _seed_hint(label, rule, exc.rule, exc.names)) from None
    return _reader_plan(numbered, pattern, format, seeded=True, read_by=read_by)


def _check_sequence_name(sequence: str) -> None:
    try:
        validate_sequence_name(sequence)
    except ValidationError as exc:
        raise ValueError(f"sequence {sequence!r}: {' '.join(exc.messages)}") from None
    if DERIVED_MARK in sequence:
        raise ValueError(
            f"sequence {sequence!r} names a period or scope row; seed the sequence (--sequence NAME, or --rule), "
            "whose rows of each period and scope the stored numbers name are moved."
        )


def _refuse_base_only(label: str, sequence: str, pattern: str | None, format: str | None) -> None:
    """ValueError when the sequence shows it counts per period or scope, which its own row alone does not seed."""
    rule_hint = (
        f"name the rule {label}'s numbers were made by, so each period's and scope's row is moved: "
        f"segment_seq sync {label} --rule module.RULE (a NumberRule, or the label of a SequenceField it is "
        "shared with)"
    )
    derived = list(
        Sequence._base_manager.using(sequence_database())
        .filter(base_name=sequence)
        .order_by("name")
        .values_list("name", flat=True)[:4]
    )
    if derived:
        shown = ", ".join(derived[:3]) + (", ..." if len(derived) > 3 else "")
        raise ValueError(
            f"sequence {sequence!r} counts in rows per period or scope ({shown}), which seeding its own row would "
            f"not move: {rule_hint}."
        )
    if format is not None:
        flow = FlowFormat(format)
        FormatParser(flow)  # UnparseableFormat first: a format that cannot be read back seeds nothing at all
        if flow.date_specs or flow.period_specs:
            raise ValueError(
                f"the format {format!r} shows a {'period' if flow.period_specs else 'date'}: a sequence that resets "
                "counts each period in a row of its own, which seeding its own row would not move. "
                f"{rule_hint[0].upper()}{rule_hint[1:]}; a rule without reset moves the sequence's own row."
            )
    if pattern is not None:
        try:
            groups = set(re.compile(pattern).groupindex) - {"value"}
        except re.error:
            groups = set()  # TextNumbers says what is wrong with it
        if groups:
            raise ValueError(
                f"the pattern names {', '.join(sorted(groups))}: a period or scope counts in a row of its own, which "
                f"only the rule names: {rule_hint}."
            )


def _seed_hint(label: str, reference: NumberRule | str, rule: NumberRule, names: list[str]) -> str:
    """The commands that seed the rows of a scope no text or column shows: by a column, or row by row."""
    named = reference if isinstance(reference, str) else "module.RULE"
    scope = " ".join(f"--scope {name}=VALUE" for name in rule.scope_names)
    period = " --period KEY" if rule.reset_rule.is_named or rule.reset_rule.is_callable else ""
    columns = " ".join(f"--scope-from {name}=COLUMN" for name in names)
    groups = ", ".join(f"(?P<{name}>…)" for name in names)
    return (
        f"Name the column that holds each: segment_seq sync {label} --rule {named} {columns} (or, for a value "
        f"the texts show, a --pattern group {groups}); or seed each row by itself: segment_seq set "
        f"{rule.sequence_name} {scope}{period} --min N (N: one above the highest number stored in that row)."
    )


def _shown_names(rule: NumberRule, pattern: str | None, integers: bool) -> frozenset[str]:
    """The scope names the stored texts show: a pattern's groups named so, else the format's plain {instance.NAME}."""
    names = set(rule.scope_names)
    if integers:
        return frozenset()
    if pattern is not None:
        try:
            return frozenset(set(re.compile(pattern).groupindex) & names)
        except re.error:
            return frozenset()
    if rule.flow is None or rule.flow.is_callable:
        return frozenset()
    shown = set()
    for _literal, placeholder, spec, conversion in string.Formatter().parse(rule.flow.source):
        if placeholder and placeholder.startswith("instance.") and not spec and conversion is None:
            shown.add(placeholder.removeprefix("instance."))
    return frozenset(shown & names)


def _reader_plan(
    column: NumberedColumn, pattern: str | None, format: str | None, *, seeded: bool, read_by: str
) -> _Plan:
    """A plan that reads the column's values by `pattern`, else by the rule's format, else as whole numbers."""
    rule = column.rule
    periodic = column.periodic
    if not column.is_text:
        if periodic:
            raise ValueError(
                f"{column.label} holds integers, and sequence {rule.sequence_name!r} resets per period: its periods "
                "are told by texts."
            )
        return _Plan(column, _integer, "", seeded, read_by, False)
    if pattern is not None:
        reader = _PatternReader(pattern, rule)
        if periodic and not reader.has_period:
            raise ValueError(
                f"sequence {rule.sequence_name!r} resets per period, and the pattern names no group 'period': add "
                "one holding the period's key (2026, 2026-11, ...), or read the texts by the rule's format (leave "
                "out --pattern)."
            )
        return _Plan(column, reader.read, "", seeded, read_by, periodic)
    capped = True
    if format is not None and rule.flow is None:
        column = dataclasses.replace(column, rule=NumberRule(rule.sequence_name, format=format, scope=rule.scope))
        rule, capped = column.rule, False
    if rule.flow is None:
        numbers = TextNumbers()
        return _Plan(column, lambda stored: _whole(numbers, stored), "", seeded, read_by, False)
    texts = TextReader(column)  # UnparseableFormat when the format cannot be read back
    shown = set(rule.scope_names) - set(column.scope_columns)

    def read(stored: Any) -> Reading | None:
        reading = texts.read(stored)
        if reading is None:
            return None
        values = texts.instance_texts(stored) if shown else {}
        return reading[0], {name: values[name] for name in shown if name in values}, reading[1]

    prefix = texts.parser.prefix if len(texts.parsers) == 1 else ""
    return _Plan(column, read, prefix, seeded, read_by, periodic, capped)


def _integer(stored: Any) -> Reading:
    """An integer column's value; the fast path's (highest, count at or below) passes through as it is."""
    return (stored if isinstance(stored, tuple) else int(stored)), {}, None  # type: ignore[return-value]


def _whole(numbers: TextNumbers, stored: Any) -> Reading | None:
    number = numbers.number(stored)
    return None if number is None else (number, {}, None)


class _PatternReader:
    """Reads texts by a regular expression that matches a whole text: its group `value` (or only group) the number,
    `period` the period's key, and each group named after a scope name that scope's value."""

    def __init__(self, pattern: str, rule: NumberRule) -> None:
        self.numbers = TextNumbers(pattern=pattern)  # ValueError for a pattern that is not one, or unclear groups
        self.regex = re.compile(pattern)
        groups = set(self.regex.groupindex)
        self.scopes = sorted(groups & set(rule.scope_names))
        self.has_period = "period" in groups
        unknown = groups - {"value", "period", *rule.scope_names}
        if unknown:
            names = ", ".join(rule.scope_names) or "none"
            raise ValueError(
                f"the pattern names the groups {', '.join(sorted(unknown))}, which are neither 'value', 'period' nor "
                f"a scope of sequence {rule.sequence_name!r} (its scope: {names})."
            )

    def read(self, stored: Any) -> Reading | None:
        number = self.numbers.number(stored)
        if number is None:
            return None
        found = self.regex.fullmatch(stored)
        assert found is not None
        period = found["period"] if self.has_period else None
        if period is not None and key_problem(period) is not None:
            return None
        shown = {name: found[name] for name in self.scopes if found[name]}
        if len(shown) != len(self.scopes):
            return None  # a scope group that matched nothing: no counter to put the number in
        return number, shown, period
