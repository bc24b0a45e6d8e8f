"""The checks of `scope`: concrete fields of the model set before the number is taken, a name with room for them,
a key and uniqueness that hold across scopes, and the same scope in every field of the sequence."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import FieldDoesNotExist
from django.db import models

from django_segment_seq.db.columns import concrete_field, in_composite_key
from django_segment_seq.db.rownames import DERIVED_MARK, NAME_MAX_LENGTH, shortest_scoped_name
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.fields.checks.names import fields_of_same_sequence
from django_segment_seq.flow.scopes import scope_names

AUTO_FIELDS = (models.AutoField, models.BigAutoField, models.SmallAutoField)
# 1.0 and 1.00, or equal JSON written two ways, would count in two scopes.
TEXTLESS_FIELDS = (models.FloatField, models.DecimalField, models.BinaryField, models.JSONField)


def scope_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """`scope`: concrete fields of the model, a name with room for them, the same in every field of the sequence."""
    if field.scope is None:
        return shared_scope_errors(field)
    errors = scope_option_errors(field)
    if errors or not hasattr(field, "model"):
        return errors
    names = scope_names(field.scope)
    errors = [problem for name in names for problem in scope_field_errors(field, name)]
    if errors:
        return errors
    return [
        *scope_room_errors(field, names),
        *scoped_primary_key_errors(field),
        *scope_inside_key_errors(field, names),
        *key_scope_set_before_save_errors(field, names),
        *shared_scope_errors(field),
        *scoped_unique_warnings(field, names),
    ]


def scope_option_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """The option is a field name or a list of distinct ones."""
    scope = field.scope
    if not (
        isinstance(scope, str)
        or (isinstance(scope, (list, tuple)) and scope and all(isinstance(name, str) for name in scope))
    ):
        return [
            checks.Error(
                f"SequenceField scope={scope!r} must be a field name or a non-empty list of field names.",
                hint='Name the fields each counter is kept per, e.g. scope=["company"], or drop scope.',
                obj=field,
                id="django_segment_seq.E023",
            )
        ]
    names = scope_names(scope)
    if len(set(names)) != len(names):
        return [
            checks.Error(
                f"SequenceField scope={scope!r} names a field twice.",
                hint="Name each field once.",
                obj=field,
                id="django_segment_seq.E032",
            )
        ]
    return []


def scope_field_errors(field: SequenceFieldBase, name: str) -> list[checks.CheckMessage]:
    """A scope field must be a column of the row, set before the number is taken, with one text per value."""
    label = field.model._meta.label
    try:
        target = field.model._meta.get_field(name)
    except FieldDoesNotExist:
        target = None
    if target is None:
        problem = f"{label} has no field {name!r}"
    elif not getattr(target, "concrete", False) or getattr(target, "many_to_many", False):
        problem = f"{label}.{name} is a {type(target).__name__}, not a column of the row being inserted"
    elif target is field:
        problem = "a field cannot be scoped by itself"
    elif isinstance(target, AUTO_FIELDS):
        problem = f"{label}.{name} is filled by the database at INSERT, after the number is taken"
    elif isinstance(target, TEXTLESS_FIELDS):
        problem = f"{label}.{name} is a {type(target).__name__}, whose values have no single text to name a row by"
    else:
        return []
    return [
        checks.Error(
            f"SequenceField scope names {name!r}: {problem}.",
            hint="Scope by concrete fields of the model set before saving: a ForeignKey (counted by its "
            "id), an integer, text, UUID or date field.",
            obj=field,
            id="django_segment_seq.E033",
        )
    ]


def scope_room_errors(field: SequenceFieldBase, names: tuple[str, ...]) -> list[checks.CheckMessage]:
    """Scope rows are named after the sequence and each scope value, within the name column's length."""
    sequence_name = field.sequence_name
    if not isinstance(sequence_name, str):
        return []
    shortest = shortest_scoped_name(sequence_name, names, with_period=field.reset is not None)
    if DERIVED_MARK not in sequence_name and shortest <= NAME_MAX_LENGTH:
        return []
    return [
        checks.Error(
            f"SequenceField sequence_name {sequence_name!r} cannot carry scope {field.scope!r}: scope rows are "
            f"named '<sequence_name>{DERIVED_MARK}<field>=<value>,…"
            f"{'/<period>' if field.reset is not None else ''}', "
            f"which must stay within {NAME_MAX_LENGTH} characters (at least {shortest} here).",
            hint=f"Use a shorter sequence name without {DERIVED_MARK!r}, or fewer scope fields.",
            obj=field,
            id="django_segment_seq.E024",
        )
    ]


def scoped_primary_key_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """An integer primary key counted per scope would repeat across scopes."""
    if field.flow is not None or not field.primary_key:
        return []
    return [
        checks.Error(
            "SequenceField scope on an integer primary key: every scope counts from min_value, so two scopes "
            "would hand out the same key.",
            hint="Keep the primary key unscoped and give the scoped number a field of its own, or make the key "
            "composite: pk = models.CompositePrimaryKey(<the scope fields>, <this field>).",
            obj=field,
            id="django_segment_seq.E026",
        )
    ]


def scope_inside_key_errors(field: SequenceFieldBase, names: tuple[str, ...]) -> list[checks.CheckMessage]:
    """In a composite primary key, the number repeats in every scope, so each scope field must be in the key too."""
    model = field.model
    key = model._meta.pk
    if not isinstance(key, models.CompositePrimaryKey) or not in_composite_key(model, field):
        return []
    outside = tuple(name for name in names if not in_composite_key(model, concrete_field(model, name)))
    if not outside or format_shows_scope(field, outside):
        return []
    return [
        checks.Error(
            f"SequenceField {model._meta.label}.{field.name} is in the primary key {key.field_names!r} but "
            f"scoped by {', '.join(outside)}, which is not: each of its values counts from min_value, so two "
            "rows would get the same key.",
            hint=f"Put {', '.join(outside)} in the CompositePrimaryKey too, or drop it from scope.",
            obj=field,
            id="django_segment_seq.E040",
        )
    ]


def key_scope_set_before_save_errors(field: SequenceFieldBase, names: tuple[str, ...]) -> list[checks.CheckMessage]:
    """Django numbers a composite key before any field's pre_save, so a scope field filled there is still empty."""
    if not in_composite_key(field.model, field):
        return []
    late = [name for name in names if filled_by_pre_save(concrete_field(field.model, name))]
    if not late:
        return []
    return [
        checks.Error(
            f"SequenceField {field.model._meta.label}.{field.name} is in the primary key and scoped by "
            f"{', '.join(late)}, which is only filled at save, after Django numbers the key: every save would "
            "find the scope empty.",
            hint="Scope by fields the instance has before save(): set the date yourself (default=date.today "
            "instead of auto_now_add), or scope by another field.",
            obj=field,
            id="django_segment_seq.E041",
        )
    ]


def scoped_unique_warnings(field: SequenceFieldBase, names: tuple[str, ...]) -> list[checks.CheckMessage]:
    """unique=True on a number that restarts in every scope refuses the second scope's first number."""
    if not field.unique or format_shows_scope(field, names):
        return []
    return [
        checks.Warning(
            f"SequenceField {field.model._meta.label}.{field.name} is scoped by {', '.join(names)} and unique=True: "
            "each scope counts from min_value, so the second scope's first number is refused as a duplicate.",
            hint=f"Drop unique=True and add models.UniqueConstraint(fields={[*names, field.name]!r}, ...) "
            "to Meta.constraints (or unique_together).",
            obj=field,
            id="django_segment_seq.W002",
        )
    ]


def format_shows_scope(field: SequenceFieldBase, names: tuple[str, ...]) -> bool:
    """Whether the field's texts show every scope value ({instance.company…}), so they differ between scopes."""
    paths = field.flow.instance_paths if field.flow is not None else []
    meta = field.model._meta
    shown = set()
    for name in names:
        target = meta.get_field(name)
        for path in paths:
            head = path[1:].split(".", 1)[0].split("[", 1)[0] if path.startswith(".") else ""
            if head in (target.name, getattr(target, "attname", None)):
                shown.add(name)
    return bool(paths) and shown == set(names)


def shared_scope_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """Fields of one sequence share its scope, or one field's period rows could take another's scope names."""
    if not hasattr(field, "model"):
        return []
    names = resolved_scope(field.model, field.scope)
    for other in fields_of_same_sequence(field):
        if resolved_scope(other.model, other.scope) != names:
            return [
                checks.Error(
                    f"Sequence {field.sequence_name!r} is scoped by {', '.join(names) or 'nothing'} here and by "
                    f"{', '.join(resolved_scope(other.model, other.scope)) or 'nothing'} in "
                    f"{other.model._meta.label}.{other.name}.",
                    hint="Give every field of a sequence the same scope, or use different sequence names.",
                    obj=field,
                    id="django_segment_seq.E025",
                )
            ]
    return []


def resolved_scope(model: type[models.Model], scope: Any) -> tuple[str, ...]:
    """The field names a scope option resolves to ("company_id" is "company"); a malformed one (E023) as it is."""
    try:
        names = [str(name) for name in scope_names(scope)]
    except TypeError:
        return ()
    resolved = []
    for name in names:
        try:
            resolved.append(model._meta.get_field(name).name)
        except FieldDoesNotExist:
            resolved.append(name)
    return tuple(resolved)


def filled_by_pre_save(field: models.Field[Any, Any]) -> bool:
    """Whether `field` gets its value only in pre_save at INSERT: an auto_now(_add) date or time, or a SequenceField."""
    return bool(getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)) or isinstance(
        field, SequenceFieldBase
    )
