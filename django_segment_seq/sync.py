"""Move a sequence past the highest number stored in its column, after data numbered elsewhere was imported."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models, router
from django.db.models import Max, Q

from django_segment_seq.api import clear_cache
from django_segment_seq.db.columns import concrete_field
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import DERIVED_MARK, row_name, validate_sequence_name
from django_segment_seq.db.table import Sequence
from django_segment_seq.exceptions import SequenceScopeError
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.fields.labels import sequence_field
from django_segment_seq.fields.sequence import FormattedSequenceField
from django_segment_seq.flow import formats as formatting
from django_segment_seq.flow.derived import ensure_row
from django_segment_seq.flow.parsing import DATE_DIRECTIVES, FormatParser, TextNumbers
from django_segment_seq.flow.scopes import scope_key, scope_names

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
    # ranges processes cached before the move lie; None when the row was missing (no process held a range of it).
    at_or_below: int | None = None

    @property
    def moved(self) -> bool:
        return self.before != self.after


def unscoped_field(model: type[models.Model], field_name: str) -> SequenceFieldBase:
    """fields.labels.sequence_field() for sync, which moves one row per column, not one per scope."""

    field = sequence_field(model, field_name)
    names = scope_names(field.scope)
    if names:
        raise ValueError(
            f"{model._meta.label}.{field_name} is scoped by {', '.join(names)}: sync moves one counter per column "
            "and does not handle scopes. Move a scope's row past its stored numbers in the admin (its value); "
            "backfill moves the rows of every scope it numbers in past their stored numbers itself."
        )
    return field


def empty_values(field: models.Field[Any, Any]) -> Q:
    """Rows whose value the field would still fill: NULL, and for a formatted field also ''."""
    empty = Q(**{f"{field.name}__isnull": True})
    if isinstance(field, FormattedSequenceField):
        empty |= Q(**{field.name: ""})
    return empty


def current_target(field: SequenceFieldBase) -> tuple[Target, datetime | None]:
    """The row of an unscoped field that a row without a reset_on date takes its number from now, and now."""
    moment = formatting.now()
    if not isinstance(field, FormattedSequenceField):
        return (None, None), None
    period = field.reset_rule.key(moment)
    return (None, period), (moment if period is not None else None)


def scope_fields(model: type[models.Model], field: SequenceFieldBase) -> list[models.Field[Any, Any]]:
    """The model fields `field` is scoped by, in the order that names its rows."""

    return [concrete_field(model, name) for name in scope_names(field.scope)]


def row_target(field: SequenceFieldBase, instance: Any) -> tuple[Target, datetime | None]:
    """The scope and period whose row numbers `instance`, picked as the field's own numbering picks them, and the
    instant that picked the period (None without one). `instance` needs only the scope fields and reset_on."""

    scope = scope_key(field, instance)
    if not isinstance(field, FormattedSequenceField):
        return (scope, None), None  # an integer field counts without periods
    moment = field.instant(instance)
    period = field.reset_rule.key(moment)
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


def highest_stored(
    model: type[models.Model], field: SequenceFieldBase, *, using: str | None = None
) -> tuple[int | None, int]:
    """The highest number in the column (for a reset field: in the current period's texts) and how many were unreadable.

    A formatted field's texts are read back through its format; UnparseableFormat when that cannot be done.
    """
    target, moment = current_target(field)
    highest, unreadable = highest_per_row(model, field, {target: moment}, using=using)
    return highest.get(target), unreadable


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
    if row is None:
        derived = period is not None or scope is not None
        ensure_row(alias, name, base_name=sequence_name if derived else None, period=period, cap=cap)
        row = Sequence._base_manager.using(alias).get(name=name)
    before = row.value
    if highest > row.max_value:
        raise ValueError(
            f"Sequence {name!r}: the highest value stored in {stored_in} is {highest}, "
            f"above the row's maximum {row.max_value}. Raise the maximum first."
        )
    if highest > row.value:
        row.value = highest
        row.save(update_fields=["value"])  # a conditional, forward-only UPDATE
    return SyncResult(name, highest, before, row.value)


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


def sync_sequence(
    model: type[models.Model],
    field_name: str,
    *,
    sequence: str | None = None,
    pattern: str | None = None,
    format: str | None = None,
    using: str | None = None,
) -> SyncResult:
    """Move the field's sequence row (its current period's, with reset) past the highest value stored; never backwards.

    A column that is not a SequenceField (numbers made in code, or by another system) seeds the row of `sequence`:
    an integer column as stored, a text column read by `format` (a SequenceField format), by `pattern` (a regular
    expression whose group `value`, or only group, is the number) or, without either, as a whole decimal number
    (flow/parsing.py's TextNumbers). Creates the row when missing, then forgets this process's cached ranges, so its
    next number is above every stored one. Other running processes keep their cached ranges until they use them up: see
    SyncResult.at_or_below. ValueError for a column or option that cannot be read, and when the highest value is
    above the row's maximum; UnparseableFormat for formats that cannot be read back.
    """

    column = stored_column(model, field_name)
    if not isinstance(column, SequenceFieldBase):
        return seed_from_column(model, column, sequence, pattern=pattern, format=format, using=using)
    if (sequence, pattern, format) != (None, None, None):
        raise ValueError(
            f"{model._meta.label}.{field_name} is a SequenceField, read by its own sequence and format: "
            "leave out the sequence, pattern and format."
        )
    field = unscoped_field(model, field_name)
    target, moment = current_target(field)
    results, unreadable = sync_rows(model, field, {target: moment}, using=using)
    if results:
        result = results[0]
        return SyncResult(result.row_name, result.highest, result.before, result.after, unreadable)
    name = row_name(field.sequence_name, *target)
    row = Sequence._base_manager.using(sequence_database()).filter(name=name).first()
    value = row.value if row is not None else None
    return SyncResult(name, None, value, value, unreadable)


def stored_column(model: type[models.Model], field_name: str) -> models.Field[Any, Any]:
    """The concrete column `field_name` of `model`; ValueError naming the model when it has none."""
    try:
        column = model._meta.get_field(field_name)
    except FieldDoesNotExist:
        raise ValueError(f"{model._meta.label} has no field {field_name!r}.") from None
    if not isinstance(column, models.Field) or not column.concrete:
        raise ValueError(f"{model._meta.label}.{field_name} is not a column of the table.")
    return column


def seed_from_column(
    model: type[models.Model],
    column: models.Field[Any, Any],
    sequence: str | None,
    *,
    pattern: str | None = None,
    format: str | None = None,
    using: str | None = None,
) -> SyncResult:
    """Move the row of `sequence` past the highest number stored in a column no SequenceField fills, creating it
    when missing; then forget this process's cached ranges. See sync_sequence()."""
    label = f"{model._meta.label}.{column.name}"
    if sequence is None:
        raise ValueError(
            f"{label} is a {type(column).__name__}, not a SequenceField: name the sequence whose row to move "
            "past its numbers (--sequence NAME)."
        )
    try:
        validate_sequence_name(sequence)
    except ValidationError as exc:
        raise ValueError(f"sequence {sequence!r}: {' '.join(exc.messages)}") from None
    if DERIVED_MARK in sequence:
        raise ValueError(
            f"sequence {sequence!r} names a period or scope row; seed the sequence's own row, whose minimum its "
            "new periods and scopes start from (segment_seq set NAME --min)."
        )
    row = Sequence._base_manager.using(sequence_database()).filter(name=sequence).first()
    before = None if row is None else row.value
    rows = model._base_manager.db_manager(using or router.db_for_read(model)).exclude(
        **{f"{column.name}__isnull": True}
    )
    if isinstance(column, models.IntegerField):
        if (pattern, format) != (None, None):
            raise ValueError(f"{label} holds integers: a pattern or a format reads texts.")
        highest = rows.aggregate(highest=Max(column.name))["highest"]
        at_or_below = None if before is None else rows.filter(**{f"{column.name}__lte": before}).count()
        unreadable = 0
    elif isinstance(column, (models.CharField, models.TextField)):
        highest, at_or_below, unreadable = _highest_text(
            rows, column.name, TextNumbers(pattern=pattern, format=format), before
        )
    else:
        raise ValueError(f"{label} is a {type(column).__name__}: seeding reads an integer or a text column.")
    if highest is None:
        return SyncResult(sequence, None, before, before, unreadable, at_or_below)
    try:
        moved = move_past(sequence, (None, None), highest, stored_in=label)
    finally:
        clear_cache()
    return SyncResult(moved.row_name, highest, before, moved.after, unreadable, at_or_below)


def _highest_text(
    rows: models.QuerySet[Any], name: str, reader: TextNumbers, before: int | None
) -> tuple[int | None, int | None, int]:
    """The highest number the texts of column `name` show, how many lie at or below `before` (None without a row),
    and how many texts could not be read."""
    if reader.prefix:
        rows = rows.filter(**{f"{name}__startswith": reader.prefix})
    highest: int | None = None
    at_or_below = 0
    unreadable = 0
    for text in rows.exclude(**{name: ""}).values_list(name, flat=True).iterator(chunk_size=SCAN_CHUNK):
        number = reader.number(text)
        if number is None:
            unreadable += 1
            continue
        highest = number if highest is None else max(highest, number)
        at_or_below += before is not None and number <= before
    return highest, (None if before is None else at_or_below), unreadable
