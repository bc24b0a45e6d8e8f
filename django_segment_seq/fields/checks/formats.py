"""The checks of a format: it parses, writes each number as its own text, shows what the field's options need
({value}, the period), reads only what the model has ({instance...}), and fits in max_length."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import FieldDoesNotExist
from django.db import models

from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.flow.formats import FlowFormat

# A format that shows the whole period of each named reset, for the hint of E015.
DATE_HINTS = {
    "daily": "{date:%Y%m%d}",
    "weekly": "{period} or {date:%G-W%V}",
    "monthly": "{date:%Y%m}",
    "quarterly": "{period}",
    "yearly": "{date:%Y}",
}


def format_errors(field: SequenceFieldBase) -> list[checks.CheckMessage]:
    """A format that parses and writes each number as its own text; only then what it shows and how wide it is."""
    fmt = field.flow
    if fmt is None:
        return []
    errors = format_parse_errors(field, fmt)
    if errors:
        return errors
    return [
        *format_value_errors(field, fmt),
        *period_without_reset_errors(field, fmt),
        *period_shown_errors(field, fmt),
        *instance_paths_and_width_errors(field, fmt),
    ]


def format_parse_errors(field: SequenceFieldBase, fmt: FlowFormat) -> list[checks.CheckMessage]:
    """A format parses, and its {value} spec writes no two numbers as one text."""
    errors: list[checks.CheckMessage] = [
        checks.Error(
            f"SequenceField format is invalid: {problem}.",
            hint="Use placeholders {value[:int spec]}, {date[:strftime spec]}, {period} and "
            '{instance.<attribute>}, e.g. format="OD{date:%Y%m%d}{value:06d}", or a callable '
            "(value, instance, now) -> str.",
            obj=field,
            id="django_segment_seq.E011",
        )
        for problem in fmt.problems
    ]
    errors += [
        checks.Error(
            f"SequenceField format {fmt.source!r}: {problem}.",
            hint="Use an integer presentation padded with zeros or with a character no number contains, "
            "e.g. {value:06d}, {value:>8} or {value:_<8}.",
            obj=field,
            id="django_segment_seq.E035",
        )
        for problem in fmt.ambiguous
    ]
    return errors


def format_value_errors(field: SequenceFieldBase, fmt: FlowFormat) -> list[checks.CheckMessage]:
    """Without {value}, every row of a period would get the same text."""
    if fmt.has_value:
        return []
    return [
        checks.Error(
            f"SequenceField format {fmt.source!r} has no {{value}}, so every row would get the same text.",
            hint='Add the number, e.g. "{value:06d}".',
            obj=field,
            id="django_segment_seq.E012",
        )
    ]


def period_without_reset_errors(field: SequenceFieldBase, fmt: FlowFormat) -> list[checks.CheckMessage]:
    """{period} is the reset period, which a field without reset has none of."""
    if not fmt.period_specs or field.reset is not None:
        return []
    return [
        checks.Error(
            f"SequenceField format {fmt.source!r} shows {{period}}, but the field has no reset.",
            hint='Add reset, e.g. reset="monthly", or show the date with {date:…} instead.',
            obj=field,
            id="django_segment_seq.E027",
        )
    ]


def period_shown_errors(field: SequenceFieldBase, fmt: FlowFormat) -> list[checks.CheckMessage]:
    """With a reset, the text must tell two periods apart, or a new period repeats the last one's texts."""
    rule = field.reset_rule
    if not (rule.is_named or rule.is_callable):
        return []
    problem = fmt.period_problem(rule)
    if not problem:
        return []
    date_hint = "{period}" if rule.is_fiscal or not rule.is_named else DATE_HINTS[field.reset]
    return [
        checks.Error(
            f"SequenceField format {fmt.source!r} with reset={field.reset!r}"
            + (f", fiscal_year_start={field.fiscal_year_start}" if rule.is_fiscal else "")
            + f": {problem}.",
            hint=f"Put the whole period in the format, e.g. {date_hint}, or reset less often.",
            obj=field,
            id="django_segment_seq.E015",
        )
    ]


def instance_paths_and_width_errors(field: SequenceFieldBase, fmt: FlowFormat) -> list[checks.CheckMessage]:
    """Every {instance...} names an attribute the model has, and max_length holds the widest text."""
    instance_widths = []
    for path in fmt.instance_paths:
        problem = instance_path_problem(field, fmt, path)
        if problem is not None:
            return [problem]
        width = instance_width(field, path)
        instance_widths.append(width if isinstance(width, int) else 0)
    widest = fmt.widest(instance_widths, field.reset_rule)
    if widest is None or field.max_length is None or widest <= field.max_length:
        return []
    return [
        checks.Error(
            f"SequenceField max_length={field.max_length} is too short for format {fmt.source!r}, "
            f"whose widest text is {widest} characters.",
            hint=f"Set max_length={widest} or more, or narrow the format.",
            obj=field,
            id="django_segment_seq.E016",
        )
    ]


def instance_path_problem(field: SequenceFieldBase, fmt: FlowFormat, path: str) -> checks.CheckMessage | None:
    """{instance<path>} reads attributes the model has, through forward relations the check can follow."""
    if not path.startswith(".") or "[" in path:
        return path_error(field, fmt, path, "indexes the instance, which the check cannot follow")
    model: Any = field.model
    names = path[1:].split(".")
    for position, name in enumerate(names):
        last = position == len(names) - 1
        try:
            target = model._meta.get_field(name)
        except FieldDoesNotExist:
            if not hasattr(model, name):
                return checks.Error(
                    f"SequenceField format {fmt.source!r} refers to instance{path}, "
                    f"which {model._meta.label} does not have" + (f" ({name!r})." if position else "."),
                    hint="Use an attribute or field of the model, e.g. {instance.kind}.",
                    obj=field,
                    id="django_segment_seq.E019",
                )
            if last:
                return None
            return path_error(field, fmt, path, f"reads through {model._meta.label}.{name}, which is not a relation")
        if last:
            return None
        if not isinstance(target, models.ForeignKey):
            return path_error(field, fmt, path, f"reads through {model._meta.label}.{name}, which is not a foreign key")
        model = target.related_model
        if not isinstance(model, type):
            return None  # a lazy reference not resolved yet (isolated apps): nothing further to check
    return None  # pragma: no cover - the loop returns at the last name


def path_error(field: SequenceFieldBase, fmt: FlowFormat, path: str, why: str) -> checks.CheckMessage:
    """An {instance...} path the check cannot follow to a field (E034)."""
    return checks.Error(
        f"SequenceField format {fmt.source!r}: {{instance{path}}} {why}.",
        hint="Read a field of the model, or of a model a ForeignKey or OneToOneField leads to, "
        "e.g. {instance.kind} or {instance.company.code}.",
        obj=field,
        id="django_segment_seq.E034",
    )


def instance_width(field: SequenceFieldBase, path: str) -> object:
    """The widest text of {instance<path>} when a model field tells it; None when unknown."""
    if "." in path[1:]:
        return None
    try:
        target = field.model._meta.get_field(path[1:])
    except FieldDoesNotExist:
        return None
    if not isinstance(target, models.Field):
        return None  # a reverse relation: no column to measure
    if target.choices:
        return max((len(str(key)) for key, _label in target.flatchoices), default=0)
    if getattr(target, "max_length", None):
        return target.max_length
    return None
