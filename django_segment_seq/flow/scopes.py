"""Scopes: a counter per tenant (company, project, ...), each a Sequence row named after the instance's scope values.

A scoped field's rows are derived from its base row like period rows: `base_name` is the sequence,
`period` the period (None without reset), and the name carries the scope:

    invoice@company=42            scope=["company"], no reset
    invoice@company=42/2026       scope=["company"], reset="yearly"
    ticket@company=42,kind=bug    scope=["company", "kind"]

Values are written so that two different values never give names a case- or accent-insensitive
collation (MariaDB's and MySQL's defaults) takes for one: lowercase ASCII letters, digits and `-_.~`
stay as they are, everything else is percent-encoded (UTF-8, uppercase hex digits).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Model
from django.utils import timezone

from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import PAIR_SEPARATOR, row_name
from django_segment_seq.exceptions import SequenceScopeError
from django_segment_seq.flow.derived import ensure_row

if TYPE_CHECKING:
    from django.db import models

_KEPT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.~")


def scope_names(scope: Any) -> tuple[str, ...]:
    """The `scope` option as field names: None is no scope, a string is one field."""
    if scope is None:
        return ()
    if isinstance(scope, str):
        return (scope,)
    return tuple(scope)


def encode_text(text: str) -> str:
    """`text` in the characters a row name keeps under any collation; percent-encoding for the rest."""
    return "".join(char if char in _KEPT else "".join(f"%{byte:02X}" for byte in char.encode()) for char in text)


def value_text(sequence_name: str, field: models.Field[Any, Any], value: Any) -> str:
    """The encoded text of one scope value; SequenceScopeError for a value that has no stable text."""
    if value is None:
        raise SequenceScopeError(
            sequence_name,
            f"scope field {field.name!r} is empty, and an empty scope has no counter of its own. "
            "Set it before saving, or make the field required.",
        )
    try:
        value = field.to_python(value)  # "42" typed into a form and 42 count in one scope
    except ValidationError as exc:
        raise SequenceScopeError(
            sequence_name, f"scope field {field.name!r} holds {value!r}: {' '.join(exc.messages)}"
        ) from None
    return typed_text(sequence_name, field.name, value)


def typed_text(sequence_name: str, name: str, value: Any) -> str:
    """The encoded text of one scope value of a Python type (a model instance counts by its primary key), as a field
    writes it after reading the value through its own type; SequenceScopeError for a value with no stable text."""
    if isinstance(value, Model):
        value = value.pk  # a model instance given in code: its row, as a foreign key's id names it
    if value is None:
        raise SequenceScopeError(
            sequence_name, f"scope value {name!r} is empty, and an empty scope has no counter of its own."
        )
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        return str(value)  # digits and "-" only: nothing to encode
    elif isinstance(value, (str, uuid.UUID)):
        text = str(value)
    elif isinstance(value, datetime.datetime):
        text = stored_instant(value).isoformat()
    elif isinstance(value, (datetime.date, datetime.time)):
        text = value.isoformat()
    else:
        raise SequenceScopeError(
            sequence_name,
            f"scope field {name!r} holds a {type(value).__name__} ({value!r}), which has no single text "
            "to name a counter by. Scope by an integer, text, UUID or date field (a foreign key counts by its id).",
        )
    return encode_text(text)


def stored_instant(value: datetime.datetime) -> datetime.datetime:
    """A datetime as the database stores it, so one stored instant names one counter however it was assigned.

    With USE_TZ, in UTC (a naive one read in the project's time zone, as Django saves it); without,
    naive in the project's time zone (an aware one converted, as Django reads it back).
    """
    if settings.USE_TZ:
        if timezone.is_naive(value):
            value = timezone.make_aware(value, timezone.get_default_timezone())
        return value.astimezone(datetime.UTC)
    return timezone.make_naive(value) if timezone.is_aware(value) else value


def scope_key(field: Any, instance: models.Model) -> str | None:
    """The scope part of the row name for `instance` ("company=42,kind=bug"); None for an unscoped field."""
    if not field.scope:
        return None
    pairs = []
    for scope_field in _scope_fields(field):
        value = getattr(instance, scope_field.attname)
        pairs.append(f"{scope_field.name}={value_text(field.sequence_name, scope_field, value)}")
    return PAIR_SEPARATOR.join(pairs)


def _scope_fields(field: Any) -> list[Any]:
    """The model fields a field is scoped by, looked up once per field."""
    key = (field.model, field.scope)
    cached: tuple[Any, list[Any]] | None = getattr(field, "_scope_fields", None)
    if cached is None or cached[0] != key:  # a copy made for a subclass has a model of its own
        cached = (key, [field.model._meta.get_field(name) for name in scope_names(field.scope)])
        field._scope_fields = cached
    return cached[1]


def bulk_groups(field: Any, objs: list[models.Model]) -> Iterable[tuple[str, list[models.Model]]]:
    """`objs` grouped by the row each takes its number from, those rows created, for one allocation per scope."""
    if not scope_names(getattr(field, "scope", None)):
        return [(field.sequence_name, objs)]
    groups: dict[str, list[models.Model]] = {}
    for obj in objs:
        groups.setdefault(row_name(field.sequence_name, scope_key(field, obj), None), []).append(obj)
    alias = sequence_database()
    for name in groups:
        ensure_row(alias, name, base_name=field.sequence_name, period=None, cap=None)
    return list(groups.items())
