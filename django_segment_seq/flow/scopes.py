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

import copy
import datetime
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Model
from django.utils import timezone

from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import row_name
from django_segment_seq.exceptions import SequenceScopeError
from django_segment_seq.flow.derived import ensure_row

_KEPT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_.~")


def scope_names(scope: Any) -> tuple[str, ...]:
    """The `scope` option as field names: None is no scope, a string is one field, a dict (or its items) names with
    their types."""
    if scope is None:
        return ()
    if isinstance(scope, str):
        return (scope,)
    if isinstance(scope, dict):
        return tuple(scope)
    return tuple(item[0] if isinstance(item, tuple) and len(item) == 2 else item for item in scope)


# The model field a scope type declared in code is read through, as a model field of that type would read it.
_DECLARED: dict[type, Callable[[], Any]] = {
    bool: lambda: models.BooleanField(),
    int: lambda: models.BigIntegerField(),
    str: lambda: models.TextField(),
    uuid.UUID: lambda: models.UUIDField(),
    datetime.date: lambda: models.DateField(),
    datetime.datetime: lambda: models.DateTimeField(),
}


def declared_field(sequence_name: str, name: str, kind: Any) -> Any:
    """A stand-in model field for a scope value of type `kind` (int, str, bool, UUID, date, datetime, or a model
    field), so a rule made in code reads "1", 1 and True as a BooleanField does; SequenceScopeError otherwise."""
    if isinstance(kind, models.Field):
        found = kind
    elif isinstance(kind, type) and issubclass(kind, Model):
        found = copy.copy(kind._meta.pk)  # a model instance counts by its primary key, read as that key reads it
        found.name = found.attname = name
    elif kind in _DECLARED:
        found = _DECLARED[kind]()
    else:
        raise SequenceScopeError(
            sequence_name,
            f"scope {name!r} is declared as {kind!r}; declare int, str, bool, uuid.UUID, date, datetime, a model "
            "class or a model field",
        )
    if not getattr(found, "name", None):
        found.name = found.attname = name
    return found


# The widest text a value of each kind of field writes in a row name.
_WIDEST_SAMPLES: tuple[tuple[type, str], ...] = (
    (models.UUIDField, "00000000-0000-0000-0000-000000000000"),
    (models.BooleanField, "false"),
    (models.DateTimeField, "2026-11-22T10:00:00.000000+00:00"),
    (models.DateField, "2026-11-22"),
    (models.TimeField, "10:00:00.000000"),
    (models.IntegerField, "-9223372036854775808"),
)


def widest_text(field: Any) -> int:
    """How many characters the widest value of `field` writes in a row name: a foreign key's target's, a text field's
    max_length, one for text of no set length."""
    target = getattr(field, "target_field", None)
    if target is not None and target is not field:
        return widest_text(target)
    for kind, sample in _WIDEST_SAMPLES:
        if isinstance(field, kind):
            return len(encode_text(sample))
    if isinstance(field, (models.AutoField, models.BigAutoField, models.SmallAutoField)):
        return 20
    return int(getattr(field, "max_length", None) or 1)


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
    """The scope part of the row name for `instance` ("company=42,kind=bug"), as the field's rule names it; None for
    an unscoped field."""
    if not field.scope:
        return None
    key: str | None = field.rule.scope_key_of(instance)
    return key


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
