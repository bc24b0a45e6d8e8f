"""Number the rows whose SequenceField is still empty, in short batches, so it runs safely beside a live site."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from django.db import connections, models, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q

from django_segment_seq.api import next_values
from django_segment_seq.db.columns import column_of, concrete_field, in_composite_key
from django_segment_seq.db.statements import fill_if_empty
from django_segment_seq.exceptions import SequenceScopeError
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.fields.code_numbers import next_text
from django_segment_seq.fields.labels import UnknownFieldLabel, sequence_field
from django_segment_seq.fields.sequence import FormattedSequenceField
from django_segment_seq.flow.parsing import UnparseableFormat
from django_segment_seq.flow.rules import NumberRule
from django_segment_seq.flow.scopes import bulk_groups
from django_segment_seq.numbered import NumberedColumn, numbered_column, scope_fields
from django_segment_seq.sync import (
    SCAN_CHUNK,
    SyncResult,
    Target,
    empty_values,
    row_target,
    sync_rows,
    sync_sequence,
)

DEFAULT_BATCH_SIZE = 1000

# Called after each batch with (rows picked, rows filled); rows filled by someone else meanwhile are the difference.
Progress = Callable[[int, int], object]  # what it returns is ignored


@dataclass
class FillResult:
    """What fill_empty() did, for the command's summary and for tests."""

    filled: int = 0
    skipped: int = 0  # picked as empty, but filled by someone else before this batch's UPDATE: a gap each
    batches: int = 0
    synced: list[SyncResult] = dataclass_field(default_factory=list)  # rows moved past the values stored, or not


def fillable_field(model: type[models.Model], field_name: str) -> SequenceFieldBase:
    """The SequenceField to fill; ValueError for other fields and for a primary key or part of one, never empty."""
    try:
        field = sequence_field(model, field_name)
    except UnknownFieldLabel as exc:
        if "not a SequenceField" not in str(exc):
            raise
        raise UnknownFieldLabel(
            f"{exc} Give the rule its numbers are made by (--rule module.RULE, or a field's label it is shared with)."
        ) from None
    if field.primary_key:
        raise ValueError(f"{model._meta.label}.{field.name} is the primary key, which is never empty.")
    key = model._meta.pk
    if isinstance(key, models.CompositePrimaryKey) and in_composite_key(model, field):
        # An empty text in a key is a row's own key, not a number still to give: changing it would re-key the row.
        raise ValueError(
            f"{model._meta.label}.{field.name} is part of the primary key ({', '.join(key.field_names)}), "
            "which is never empty: every row was numbered when it was inserted."
        )
    return field


def count_empty(
    model: type[models.Model],
    field_name: str,
    *,
    using: str | None = None,
    rule: NumberRule | str | None = None,
    scope_from: Mapping[str, str] | None = None,
) -> int:
    """How many rows fill_empty() would number."""
    if rule is not None:
        column = plain_column(model, field_name, rule, scope_from)
        return _empty_rows(column, using or router.db_for_write(model)).count()
    field = fillable_field(model, field_name)
    return model._base_manager.db_manager(using or router.db_for_write(model)).filter(empty_values(field)).count()


def plain_column(
    model: type[models.Model], field_name: str, rule: NumberRule | str, scope_from: Mapping[str, str] | None
) -> NumberedColumn:
    """A column no SequenceField fills and the rule that numbers it; ValueError when they do not fit."""
    column = numbered_column(model, field_name, rule, scope_from=scope_from)
    if column.column.primary_key:
        raise ValueError(f"{column.label} is the primary key, which is never empty.")
    if not column.is_text and column.flow is not None:
        raise ValueError(f"{column.label} holds integers, and the rule {column.rule_label} makes texts by its format.")
    return column


def _empty_rows(column: NumberedColumn, alias: str) -> models.QuerySet[Any]:
    empty = Q(**{f"{column.name}__isnull": True})
    if column.is_text:
        empty |= Q(**{column.name: ""})
    return column.model._base_manager.db_manager(alias).filter(empty)


def fill_empty(
    model: type[models.Model],
    field_name: str,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    using: str | None = None,
    sync: bool = True,
    progress: Progress | None = None,
    rule: NumberRule | str | None = None,
    scope_from: Mapping[str, str] | None = None,
) -> FillResult:
    """Give every row whose `field_name` is NULL (or '' for a formatted field) a number, in primary-key order.

    First moves past the values already stored (`sync`; skipped for formats that cannot be read back)
    every Sequence row it will number in: with reset, the row of each period the empty rows' dates
    fall in; with scope, each scope's row. Then works in batches of `batch_size`: a plain or scoped
    integer field takes one `next_values()` per batch and scope, a formatted or gapless field numbers
    row by row through the field itself. Each batch is one short transaction whose UPDATE only
    touches rows still empty, so re-running resumes, and rows a running site filled meanwhile are
    left as they are.

    A column that is not a SequenceField (numbers made in code) is filled by `rule`, the rule that made them (a
    NumberRule, its import path, or a SequenceField's label), each row as next_text() would number it in the scope
    its columns hold (`scope_from`, else the columns of the scopes' names) and the current period; `sync` first
    moves every row of the rule's periods and scopes past the numbers stored (sync_sequence()).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    if rule is not None:
        column = plain_column(model, field_name, rule, scope_from)
        return _fill_plain(column, batch_size, using or router.db_for_write(model), sync, progress)
    field = fillable_field(model, field_name)
    alias = using or router.db_for_write(model)
    empty = model._base_manager.db_manager(alias).filter(empty_values(field)).order_by("pk")
    in_bulk = not isinstance(field, FormattedSequenceField) and not field.gapless
    result = FillResult()
    rows_moved = _RowsMoved(model, field, alias, result.synced) if sync else None
    if rows_moved is not None:
        rows_moved.move(_targets(field, _distinct_dates(model, field, empty)))
    last_pk = None
    while True:
        batch = empty if last_pk is None else empty.filter(pk__gt=last_pk)
        batch = batch.only("pk", *(f.name for f in scope_fields(model, field))) if in_bulk else batch
        rows = list(batch[:batch_size])
        if not rows:
            return result
        if rows_moved is not None:
            # Rows a period the first pass did not see numbers in (a row without a date, after midnight).
            rows_moved.move(_targets(field, rows))
        filled = _fill_batch(field, model, rows, alias, in_bulk)
        result.filled += filled
        result.skipped += len(rows) - filled
        result.batches += 1
        last_pk = rows[-1].pk
        if progress is not None:
            progress(len(rows), filled)


class _RowsMoved:
    """The rows fill_empty() has moved past the values stored so far: each (scope, period) once."""

    def __init__(
        self, model: type[models.Model], field: SequenceFieldBase, alias: str, results: list[SyncResult]
    ) -> None:
        self.model, self.field, self.alias, self.results = model, field, alias, results
        self.seen: set[Target] = set()
        self.readable = True

    def move(self, targets: dict[Target, datetime | None]) -> None:
        new = {target: moment for target, moment in targets.items() if target not in self.seen}
        if not new or not self.readable:
            return
        try:
            moved, _unreadable = sync_rows(self.model, self.field, new, using=self.alias)
        except UnparseableFormat:
            # Numbers of a callable format cannot be read back; they are taken from where the sequence is.
            self.readable = False
            return
        self.results += moved
        self.seen.update(new)


def _distinct_dates(model: type[models.Model], field: SequenceFieldBase, empty: Any) -> Iterable[SimpleNamespace]:
    """Each distinct combination of scope values and reset_on date of the empty rows: what picks their rows."""

    names = [scope_field.attname for scope_field in scope_fields(model, field)]
    if isinstance(field, FormattedSequenceField) and field.reset_on is not None:
        names.append(concrete_field(model, field.reset_on).attname)
    if not names:  # every empty row is numbered in the same row
        yield from [SimpleNamespace()] if empty.exists() else []
        return
    for values in empty.order_by().values_list(*names).distinct().iterator(chunk_size=SCAN_CHUNK):
        yield SimpleNamespace(**dict(zip(names, values, strict=True)))


def _targets(field: SequenceFieldBase, rows: Iterable[Any]) -> dict[Target, datetime | None]:
    """The (scope, period) each of `rows` will be numbered in, with an instant of that period."""
    targets: dict[Target, datetime | None] = {}
    for row in rows:
        target, moment = row_target(field, row)
        targets.setdefault(target, moment)
    return targets


def _fill_plain(
    column: NumberedColumn, batch_size: int, alias: str, sync: bool, progress: Progress | None
) -> FillResult:
    """fill_empty() of a plain column: each empty row numbered by the rule, as code numbering it would."""
    result = FillResult()
    if sync:
        try:
            report = sync_sequence(
                column.model,
                column.name,
                rule=column.rule,
                scope_from={name: field.attname for name, field in column.scope_columns.items()},
                using=alias,
            )
            result.synced = list(report.rows)
        except UnparseableFormat:
            pass  # numbers of a callable format cannot be read back: taken from where the rows are
    empty = _empty_rows(column, alias).order_by("pk")
    connection = connections[alias]
    last_pk = None
    while True:
        batch = empty if last_pk is None else empty.filter(pk__gt=last_pk)
        rows = list(batch[:batch_size])
        if not rows:
            return result
        with transaction.atomic(using=alias):
            values = []
            for row in rows:
                number: Any = _made_in_code(column, row)
                values.append((model_key(row, connection), column.column.get_db_prep_save(number, connection)))
            filled = _update_if_empty(column.model, column.name, column.is_text, connection, values)
        result.filled += filled
        result.skipped += len(rows) - filled
        result.batches += 1
        last_pk = rows[-1].pk
        if progress is not None:
            progress(len(rows), filled)


def _made_in_code(column: NumberedColumn, row: models.Model) -> int | str:
    """The number next_text() gives `row` by the column's rule: in the scope its columns hold, the current period."""
    values = {name: getattr(row, field.attname) for name, field in column.scope_columns.items()}
    try:
        text = next_text(column.rule, scope=values or None, instance=row)
    except SequenceScopeError as exc:
        raise ValueError(f"{column.label}, row {row.pk!r}: {exc}") from None
    return text if column.is_text else int(text)


def model_key(row: models.Model, connection: BaseDatabaseWrapper) -> Any:
    return row._meta.pk.get_db_prep_value(row.pk, connection)


def _fill_batch(
    field: SequenceFieldBase, model: type[models.Model], rows: list[models.Model], alias: str, in_bulk: bool
) -> int:
    if in_bulk:
        # Taken before the transaction opens, so on SQLite the block never waits for this batch's own write lock.
        for name, group in bulk_groups(field, rows):  # one row per scope; the sequence's own row otherwise
            for row, number in zip(group, next_values(name, len(group)), strict=True):
                setattr(row, field.attname, number)
    connection = connections[alias]
    with transaction.atomic(using=alias):
        if not in_bulk:
            for row in rows:
                field.pre_save(row, True)  # the field's own numbering: format, period, width cap, gapless lock
        key = model._meta.pk
        values = [
            (key.get_db_prep_value(row.pk, connection), field.get_db_prep_save(getattr(row, field.attname), connection))
            for row in rows
        ]
        return _update_if_empty(model, field.name, isinstance(field, FormattedSequenceField), connection, values)


def _update_if_empty(
    model: type[models.Model],
    name: str,
    text: bool,
    connection: BaseDatabaseWrapper,
    values: list[tuple[Any, Any]],
) -> int:
    """Set each row's value of the column `name` (holding texts when `text`) in one UPDATE per chunk, changing only
    rows whose value is still empty (someone else may have filled one meanwhile); returns the rows changed."""

    table, column = model._meta.db_table, column_of(model, name)
    pk = column_of(model, model._meta.pk.name)
    # Three parameters a row; SQLite caps the parameters of one statement.
    limit = connection.features.max_query_params
    chunk = len(values) if limit is None else max(1, limit // 3)
    changed = 0
    with connection.cursor() as cursor:
        for start in range(0, len(values), chunk):
            part = values[start : start + chunk]
            cursor.execute(
                fill_if_empty(connection, table, column, pk, len(part), text),
                [param for pair in part for param in pair] + [key for key, _value in part],
            )
            changed += max(cursor.rowcount, 0)
    return changed
