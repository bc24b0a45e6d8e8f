"""The checks of a periodic reset: `reset` itself, the model's date it reads (`reset_on`) and the fiscal year start."""

from __future__ import annotations

from django.core import checks
from django.core.exceptions import FieldDoesNotExist
from django.db import models

from django_segment_seq.db.rownames import DERIVED_MARK, NAME_MAX_LENGTH, PERIOD_SUFFIX_LENGTH, can_carry_period
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.flow.resets import NAMED, Reset


def reset_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """`reset` names a known period or an importable function, has a format to show it in, and room in the name."""
    for check in (reset_known_errors, reset_importable_errors, reset_shown_errors, reset_room_errors):
        errors = check(field)
        if errors:
            return errors  # one problem at a time: each later check assumes the earlier ones passed
    return []


def reset_known_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """A `reset` neither a named period nor a function would be refused at the first save."""
    if field.reset is None or field.reset_rule.is_named or field.reset_rule.is_callable:
        return []
    return [
        checks.Error(
            f"SequenceField reset={field.reset!r} is unknown.",
            hint=f"Use reset=None, {', '.join(repr(name) for name in NAMED)}, "
            "or a function (aware datetime) -> period key.",
            obj=field,
            id="django_segment_seq.E013",
        )
    ]


def reset_importable_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """A reset function is written to migrations by its import path, so it must have one."""
    import_problem = field.reset_rule.import_problem()
    if not import_problem:
        return []
    return [
        checks.Error(
            f"SequenceField reset={field.reset!r} cannot be written to migrations: {import_problem}",
            hint="Use a function defined at module level, which migrations import by its path.",
            obj=field,
            id="django_segment_seq.E028",
        )
    ]


def reset_shown_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """An integer field has no text to show a period in, so its periods would repeat numbers."""
    if field.reset is None or field.flow is not None:
        return []
    return [
        checks.Error(
            f"SequenceField reset={field.reset!r} needs a format: an integer field cannot show the period, "
            "so every period would repeat the numbers of the one before.",
            hint='Add a format with the date, e.g. format="{date:%Y%m%d}{value:06d}", or drop reset.',
            obj=field,
            id="django_segment_seq.E014",
        )
    ]


def reset_room_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """Per-period rows need room for the period in the row name."""
    name = field.sequence_name
    if field.reset is None or not isinstance(name, str) or can_carry_period(name):
        return []
    return [
        checks.Error(
            f"SequenceField sequence_name {name!r} cannot carry a period: per-period rows "
            f"are named '<sequence_name>{DERIVED_MARK}<period>', which must stay within {NAME_MAX_LENGTH} "
            "characters.",
            hint=f"With reset, use a name of at most {NAME_MAX_LENGTH - PERIOD_SUFFIX_LENGTH} characters "
            f"without {DERIVED_MARK!r}.",
            obj=field,
            id="django_segment_seq.E018",
        )
    ]


def reset_on_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """reset_on must name a date or datetime field of the model, and only makes sense with reset."""
    if field.reset_on is None:
        return []
    if field.reset is None:
        return [
            checks.Error(
                f"SequenceField reset_on={field.reset_on!r} has no reset to choose the period of.",
                hint='Add reset, e.g. reset="monthly", or drop reset_on.',
                obj=field,
                id="django_segment_seq.E021",
            )
        ]
    if not hasattr(field, "model"):
        return []
    try:
        target = field.model._meta.get_field(field.reset_on) if isinstance(field.reset_on, str) else None
    except FieldDoesNotExist:
        target = None
    if isinstance(target, models.DateField) and target.concrete:  # DateTimeField is a DateField
        return []
    what = "has no such field" if target is None else f"has it as a {type(target).__name__}"
    return [
        checks.Error(
            f"SequenceField reset_on={field.reset_on!r} must name a DateField or DateTimeField of "
            f"{field.model._meta.label}, which {what}.",
            hint='Name the model\'s own date of the record, e.g. reset_on="issued_on".',
            obj=field,
            id="django_segment_seq.E020",
        )
    ]


def fiscal_year_start_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """A fiscal year starts in a month of the year, and only yearly resets have one."""
    start = field.fiscal_year_start
    if start is None:
        return []
    head = start.split(".", 1)[0] if isinstance(start, str) else None
    if field.reset_rule.start_problem:
        problem = f"{field.reset_rule.start_problem}."
    elif field.reset != "yearly":
        problem = f'fiscal_year_start={start!r} needs reset="yearly", not reset={field.reset!r}.'
    elif head is not None and not _has_attribute(field.model, head):
        problem = f"fiscal_year_start={start!r} starts with {head!r}, which {field.model._meta.label} does not have."
    elif field.reset_rule.from_record and head is None and Reset(start).import_problem():  # a function, as reset=
        problem = f"fiscal_year_start={start!r} cannot be imported by migrations: {Reset(start).import_problem()}"
    else:
        return []
    return [
        checks.Error(
            f"SequenceField {problem}",
            hint='Use reset="yearly" with fiscal_year_start=1..12 (4 for a year from April), a path to the record\'s '
            'month ("entity.fy_start_month") or a module-level function of the record, or drop it.',
            obj=field,
            id="django_segment_seq.E022",
        )
    ]


def _has_attribute(model: type[models.Model], name: str) -> bool:
    """Whether the model's records have `name`: a field (by name or attname) or an attribute of the class."""
    try:
        model._meta.get_field(name)
    except FieldDoesNotExist:
        return hasattr(model, name)
    return True
