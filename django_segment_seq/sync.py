"""Move a sequence past the highest number stored in its column, after data numbered elsewhere was imported."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import models, router
from django.db.models import Max, Q

from . import formatting
from .fields import FormattedSequenceField, _SequenceFieldMixin
from .parsing import FormatParser

# Rows read per round trip while scanning a formatted column for its highest number.
SCAN_CHUNK = 5000


@dataclass(frozen=True)
class SyncResult:
    """What sync_sequence() found and did; `before`/`after` are the row's value (None: no row)."""

    row_name: str
    highest: int | None
    before: int | None
    after: int | None
    unreadable: int = 0  # texts of the column the format could not read back (other shapes), ignored

    @property
    def moved(self) -> bool:
        return self.before != self.after


def sequence_field(model: type[models.Model], field_name: str) -> _SequenceFieldMixin:
    """The SequenceField `field_name` of `model`; ValueError naming the model when it is missing or another kind."""
    try:
        field = model._meta.get_field(field_name)
    except Exception:  # noqa: BLE001 - FieldDoesNotExist, reported with the model's name
        raise ValueError(f"{model._meta.label} has no field {field_name!r}.") from None
    if not isinstance(field, _SequenceFieldMixin):
        raise ValueError(f"{model._meta.label}.{field_name} is a {type(field).__name__}, not a SequenceField.")
    return field


def unscoped_field(model: type[models.Model], field_name: str) -> _SequenceFieldMixin:
    """sequence_field() for sync and backfill, which read one highest number per column, not one per scope."""
    from .scopes import scope_names

    field = sequence_field(model, field_name)
    names = scope_names(field.scope)
    if names:
        raise ValueError(
            f"{model._meta.label}.{field_name} is scoped by {', '.join(names)}: sync and backfill keep one "
            "counter per column and do not handle scopes. Move a scope's row past its stored numbers in the "
            "admin (its value), and fill empty values by saving the rows."
        )
    return field


def empty_values(field: models.Field[Any, Any]) -> Q:
    """Rows whose value the field would still fill: NULL, and for a formatted field also ''."""
    empty = Q(**{f"{field.name}__isnull": True})
    if isinstance(field, FormattedSequenceField):
        empty |= Q(**{field.name: ""})
    return empty


def current_row_name(field: _SequenceFieldMixin) -> tuple[str, str | None]:
    """The Sequence row the field takes its next number from now, and that row's period (None without reset)."""
    period = formatting.period_key(formatting.now(), field.reset, getattr(field, "fiscal_year_start", None))
    return formatting.period_row_name(field.sequence_name, period), period


def highest_stored(
    model: type[models.Model], field: _SequenceFieldMixin, *, using: str | None = None
) -> tuple[int | None, int]:
    """The highest number in the column (for a reset field: in the current period's texts) and how many were unreadable.

    A formatted field's texts are read back through its format; UnparseableFormat when that cannot be done.
    """
    alias = using or router.db_for_read(model)
    manager = model._base_manager.db_manager(alias)
    if not isinstance(field, FormattedSequenceField):
        return manager.aggregate(highest=Max(field.name))["highest"], 0
    moment = formatting.now() if field.reset is not None else None
    parser = FormatParser(field.flow, moment)
    rows = manager.exclude(empty_values(field))
    if parser.prefix:
        rows = rows.filter(**{f"{field.name}__startswith": parser.prefix})
    highest: int | None = None
    unreadable = 0
    for text in rows.values_list(field.name, flat=True).iterator(chunk_size=SCAN_CHUNK):
        number = parser.number(text)
        if number is None:
            unreadable += 1
        elif highest is None or number > highest:
            highest = number
    return highest, unreadable


def sync_sequence(model: type[models.Model], field_name: str, *, using: str | None = None) -> SyncResult:
    """Move the field's sequence row (its current period's, with reset) past the highest value stored; never backwards.

    Creates the row when missing, then forgets this process's cached ranges, so its next number is
    above every stored one. Other running processes keep their cached ranges until they use them up.
    ValueError when the highest value is above the row's maximum; UnparseableFormat for formats that
    cannot be read back.
    """
    from .api import clear_cache
    from .models import Sequence
    from .periods import ensure_row
    from .routing import sequence_database

    field = unscoped_field(model, field_name)
    highest, unreadable = highest_stored(model, field, using=using)
    name, period = current_row_name(field)
    alias = sequence_database()
    row = Sequence._base_manager.using(alias).filter(name=name).first()
    if highest is None:
        value = row.value if row is not None else None
        return SyncResult(name, None, value, value, unreadable)
    if row is None:
        cap = field.flow.cap if isinstance(field, FormattedSequenceField) else None
        ensure_row(alias, name, base_name=field.sequence_name if period else None, period=period, cap=cap)
        row = Sequence._base_manager.using(alias).get(name=name)
    before = row.value
    if highest > row.max_value:
        raise ValueError(
            f"Sequence {name!r}: the highest value stored in {model._meta.label}.{field.name} is {highest}, "
            f"above the row's maximum {row.max_value}. Raise the maximum first."
        )
    if highest > row.value:
        row.value = highest
        row.save(update_fields=["value"])  # a conditional, forward-only UPDATE
    clear_cache()
    return SyncResult(name, highest, before, row.value, unreadable)
