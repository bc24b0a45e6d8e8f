"""System checks of the SEGMENT_SEQ setting, so a typo fails at `manage.py check`, not under load."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from django.conf import settings
from django.core import checks

from django_segment_seq.conf import DEFAULTS, SETTING_NAME

_TYPES: dict[str, tuple[type, ...]] = {
    "DATABASE": (str, type(None)),
    "DEFAULT_STEP": (int,),
    "MAX_RETRIES": (int,),
    "CONNECTION_RETRIES": (int,),
    "MAX_BACKOFF": (int, float),
    "LOCK_TIMEOUT": (int, float),
    "CONNECTION_MAX_IDLE": (int, float),
    "CREATE_ON_FIRST_USE": (bool,),
    "PREFETCH": (bool,),
    "PREFETCH_AT": (int, float),
    "ADAPTIVE_STEP": (bool,),
    "MAX_STEP": (int,),
    "STEP_TARGET_SECONDS": (int, float),
    "METRICS": (bool,),
    "LOG_RETRIES_AT": (int, type(None)),
    "LOG_USED_SHARE_AT": (int, float, type(None)),
    "GIVE_BACK_UNUSED": (bool,),
    "SNOWFLAKE_EPOCH_MS": (int,),
    "SNOWFLAKE_LEASE_SECONDS": (int, float),
    "SNOWFLAKE_CLOCK_TOLERANCE": (int, float),
    "SNOWFLAKE_MAX_WORKERS": (int, type(None)),
}
# Smallest and largest accepted values of numeric keys (others: not negative).
_BOUNDS: dict[str, tuple[float, float | None]] = {
    "DEFAULT_STEP": (1, None),
    "MAX_STEP": (1, None),
    "PREFETCH_AT": (0, 1),
    "STEP_TARGET_SECONDS": (0.001, None),
    "LOCK_TIMEOUT": (0.001, None),
    "LOG_RETRIES_AT": (1, None),
    "LOG_USED_SHARE_AT": (0.01, 1),
    "SNOWFLAKE_LEASE_SECONDS": (1, None),
    "SNOWFLAKE_CLOCK_TOLERANCE": (0, 10),
    "SNOWFLAKE_MAX_WORKERS": (1, 1024),
}


@checks.register()
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    configured = getattr(settings, SETTING_NAME, None)
    if configured is None:
        return []
    if not isinstance(configured, dict):
        return [
            checks.Error(
                f"{SETTING_NAME} must be a dict, not {type(configured).__name__}.",
                id="django_segment_seq.E001",
            )
        ]
    errors: list[checks.CheckMessage] = []
    for key in sorted(set(configured) - set(DEFAULTS)):
        errors.append(
            checks.Error(
                f"{SETTING_NAME} has an unknown key {key!r}.",
                hint=f"Known keys: {', '.join(sorted(DEFAULTS))}.",
                id="django_segment_seq.E002",
            )
        )
    for key, kinds in _TYPES.items():
        if key not in configured:
            continue
        value = configured[key]
        wrong_type = not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
        low, high = _BOUNDS.get(key, (0, None))
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        out_of_bounds = numeric and (value < low or (high is not None and value > high))
        if wrong_type or out_of_bounds:
            if kinds == (bool,):
                bounds = "."
            elif high is not None:
                bounds = f", from {low} to {high}."
            else:
                bounds = ", not negative." if low == 0 else f", at least {low}."
            errors.append(
                checks.Error(
                    f"{SETTING_NAME}[{key!r}] is {value!r}.",
                    hint=f"Expected {' or '.join(k.__name__ for k in kinds)}{bounds}",
                    id="django_segment_seq.E003",
                )
            )
    alias = configured.get("DATABASE")
    if isinstance(alias, str) and alias not in settings.DATABASES:
        errors.append(
            checks.Error(
                f"{SETTING_NAME}['DATABASE'] names {alias!r}, which is not in DATABASES.",
                id="django_segment_seq.E004",
            )
        )
    elif isinstance(alias, str):
        errors += _check_router_agrees(alias)
    if configured.get("METRICS") is True:
        errors += _check_metrics()
    return errors


def _check_router_agrees(alias: str) -> list[checks.CheckMessage]:
    """Numbers come from `alias`; the admin and migrations must see the same table, or edits miss it."""
    from django.db import router

    from django_segment_seq.models import Sequence

    routed = router.db_for_write(Sequence)
    if routed == alias:
        return []
    return [
        checks.Error(
            f"{SETTING_NAME}['DATABASE'] is {alias!r}, but the database routers send the Sequence model to "
            f"{routed!r}: the admin and migrations would use another table than the one numbers come from.",
            hint="Add 'django_segment_seq.routers.SequenceRouter' to DATABASE_ROUTERS.",
            id="django_segment_seq.E005",
        )
    ]


def _check_metrics() -> list[checks.CheckMessage]:
    """METRICS needs prometheus_client, and its multiprocess mode an existing directory to write to."""
    if importlib.util.find_spec("prometheus_client") is None:
        return [
            checks.Error(
                f"{SETTING_NAME}['METRICS'] is on, but prometheus_client is not installed: no metrics are exported.",
                hint="pip install django-segment-seq[prometheus]",
                id="django_segment_seq.E006",
            )
        ]
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory is not None and not os.path.isdir(directory):
        return [
            checks.Error(
                f"PROMETHEUS_MULTIPROC_DIR is {directory!r}, which is not a directory: every metric update would fail.",
                hint="Create it (empty) before the server starts its workers, or unset it for a single process.",
                id="django_segment_seq.E007",
            )
        ]
    return []


@checks.register()
def check_sqlite_single_writer(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A shared SQLite file whose transactions take the write lock at BEGIN leaves no room for an independent commit."""
    from django_segment_seq.db import sqlite
    from django_segment_seq.db.routing import sequence_database

    alias = sequence_database()
    if alias not in settings.DATABASES or not sqlite.shares_file(alias) or not sqlite.immediate_transactions(alias):
        return []
    return [
        checks.Warning(
            f"Database {alias!r} is SQLite with transaction_mode "
            f"{settings.DATABASES[alias]['OPTIONS']['transaction_mode']!r} and also holds the Sequence table: every "
            "transaction holds the file's write lock from its first statement, so numbers taken inside a transaction "
            "are taken there too and come back if it rolls back.",
            hint="Keep the Sequence table in a SQLite file of its own: SEGMENT_SEQ['DATABASE'] naming a second "
            "database and 'django_segment_seq.routers.SequenceRouter' in DATABASE_ROUTERS.",
            id="django_segment_seq.W001",
        )
    ]


def check_scope(field: Any) -> list[checks.CheckMessage]:
    """A SequenceField's `scope`: concrete fields of its model, a name with room for them, the same in every field.

    Called from the field's own check(), like the other flow-option checks (E023-E026, W002).
    """
    from django.core.exceptions import FieldDoesNotExist

    from django_segment_seq.flow.formats import PERIOD_SUFFIX_LENGTH
    from django_segment_seq.flow.scopes import PAIR_SEPARATOR, SCOPE_MARK, scope_names
    from django_segment_seq.models import NAME_MAX_LENGTH

    scope = field.scope
    if scope is None:
        return _check_shared_scope(field)
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
                id="django_segment_seq.E023",
            )
        ]
    if not hasattr(field, "model"):
        return []
    errors: list[checks.CheckMessage] = []
    label = field.model._meta.label
    for name in names:
        try:
            target = field.model._meta.get_field(name)
        except FieldDoesNotExist:
            target = None
        problem = None
        if target is None:
            problem = f"{label} has no field {name!r}"
        elif not getattr(target, "concrete", False) or getattr(target, "many_to_many", False):
            problem = f"{label}.{name} is a {type(target).__name__}, not a column of the row being inserted"
        elif target is field:
            problem = "a field cannot be scoped by itself"
        elif isinstance(target, _AUTO_FIELDS):
            problem = f"{label}.{name} is filled by the database at INSERT, after the number is taken"
        elif isinstance(target, _TEXTLESS_FIELDS):
            problem = f"{label}.{name} is a {type(target).__name__}, whose values have no single text to name a row by"
        if problem:
            errors.append(
                checks.Error(
                    f"SequenceField scope names {name!r}: {problem}.",
                    hint="Scope by concrete fields of the model set before saving: a ForeignKey (counted by its "
                    "id), an integer, text, UUID or date field.",
                    obj=field,
                    id="django_segment_seq.E023",
                )
            )
    if errors:
        return errors
    sequence_name = field.sequence_name
    if isinstance(sequence_name, str):
        # The shortest name a scope row can have: one character per value.
        shortest = len(sequence_name) + len(SCOPE_MARK) + sum(len(name) + 2 for name in names)
        shortest += len(PAIR_SEPARATOR) * (len(names) - 1)
        if field.reset is not None:
            shortest += PERIOD_SUFFIX_LENGTH
        if SCOPE_MARK in sequence_name or shortest > NAME_MAX_LENGTH:
            errors.append(
                checks.Error(
                    f"SequenceField sequence_name {sequence_name!r} cannot carry scope {scope!r}: scope rows are "
                    f"named '<sequence_name>@<field>=<value>,…{'/<period>' if field.reset is not None else ''}', "
                    f"which must stay within {NAME_MAX_LENGTH} characters (at least {shortest} here).",
                    hint="Use a shorter sequence name without '@', or fewer scope fields.",
                    obj=field,
                    id="django_segment_seq.E024",
                )
            )
    if not getattr(field, "format", None) and field.primary_key:
        errors.append(
            checks.Error(
                "SequenceField scope on an integer primary key: every scope counts from min_value, so two scopes "
                "would hand out the same key.",
                hint="Keep the primary key unscoped and give the scoped number a field of its own.",
                obj=field,
                id="django_segment_seq.E026",
            )
        )
    errors += _check_shared_scope(field)
    if field.unique and not _format_shows_scope(field, names):
        errors.append(
            checks.Warning(
                f"SequenceField {label}.{field.name} is scoped by {', '.join(names)} and unique=True: each scope "
                "counts from min_value, so the second scope's first number is refused as a duplicate.",
                hint=f"Drop unique=True and add models.UniqueConstraint(fields={[*names, field.name]!r}, ...) "
                "to Meta.constraints (or unique_together).",
                obj=field,
                id="django_segment_seq.W002",
            )
        )
    return errors


def _format_shows_scope(field: Any, names: tuple[str, ...]) -> bool:
    """Whether the field's texts show every scope value ({instance.company…}), so they differ between scopes."""
    paths = getattr(getattr(field, "flow", None), "instance_paths", [])
    meta = field.model._meta
    shown = set()
    for name in names:
        target = meta.get_field(name)
        for path in paths:
            head = path[1:].split(".", 1)[0].split("[", 1)[0] if path.startswith(".") else ""
            if head in (target.name, target.attname):
                shown.add(name)
    return bool(paths) and shown == set(names)


def _check_shared_scope(field: Any) -> list[checks.CheckMessage]:
    """Fields sharing a sequence must share its scope, or one field's period rows could take another's scope names."""
    from django_segment_seq.fields.sequence import _SequenceFieldMixin

    if not hasattr(field, "model"):
        return []
    names = _names(field.model, field.scope)
    for model in field.model._meta.apps.get_models():
        for other in model._meta.local_fields:
            where = f"{model._meta.label}.{other.name}"
            if (
                isinstance(other, _SequenceFieldMixin)
                and other is not field
                and other.sequence_name == field.sequence_name
                and _names(model, other.scope) != names
            ):
                return [
                    checks.Error(
                        f"Sequence {field.sequence_name!r} is scoped by {', '.join(names) or 'nothing'} here and by "
                        f"{', '.join(_names(model, other.scope)) or 'nothing'} in {where}.",
                        hint="Give every field of a sequence the same scope, or use different sequence names.",
                        obj=field,
                        id="django_segment_seq.E025",
                    )
                ]
    return []


def _names(model: Any, scope: Any) -> tuple[str, ...]:
    """The field names a scope option resolves to ("company_id" is "company"); a malformed one (E023) as it is."""
    from django.core.exceptions import FieldDoesNotExist

    from django_segment_seq.flow.scopes import scope_names

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


def _field_classes(*names: str) -> tuple[type, ...]:
    from django.db import models

    return tuple(getattr(models, name) for name in names)


_AUTO_FIELDS = _field_classes("AutoField", "BigAutoField", "SmallAutoField")
# 1.0 and 1.00, or equal JSON written two ways, would count in two scopes.
_TEXTLESS_FIELDS = _field_classes("FloatField", "DecimalField", "BinaryField", "JSONField")
