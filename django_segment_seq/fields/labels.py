"""A SequenceField found from its label "app_label.Model.field", the one way the gap register, sync, the
`segment_seq` command and the ID service name a field, so each refuses a bad label in the same words."""

from __future__ import annotations

from collections.abc import Iterator

from django.apps import apps
from django.core.exceptions import FieldDoesNotExist
from django.db import models

from django_segment_seq.fields.base import SequenceFieldBase

__all__ = [
    "UnknownFieldLabel",
    "field_of",
    "label_of",
    "model_and_name",
    "sequence_field",
    "sequence_field_labels",
    "sequence_fields",
]


class UnknownFieldLabel(ValueError):
    """The label names no installed model, no field of it, or a field that is not a SequenceField; the message
    says which. A caller maps it to its own error (a CommandError, a 404) or has a subclass raised (UnknownField)."""


def model_and_name(label: str, error: type[UnknownFieldLabel] = UnknownFieldLabel) -> tuple[type[models.Model], str]:
    """The model `label` names and the field name it gives; `error` (UnknownFieldLabel or a subclass of the
    caller's) saying what is wrong with the label."""
    parts = label.split(".")
    if len(parts) != 3:
        raise error(f"{label!r}: give the field as APP_LABEL.Model.field, e.g. shop.Order.order_no.")
    app_label, model_name, field_name = parts
    try:
        return apps.get_model(app_label, model_name), field_name
    except LookupError as exc:
        raise error(f"{label!r}: {exc}") from None


def sequence_field(
    model: type[models.Model], field_name: str, error: type[UnknownFieldLabel] = UnknownFieldLabel
) -> SequenceFieldBase:
    """The SequenceField `field_name` of `model`; `error` naming the model when it is missing or not one."""
    try:
        field = model._meta.get_field(field_name)
    except FieldDoesNotExist:
        raise error(f"{model._meta.label} has no field {field_name!r}.") from None
    if not isinstance(field, SequenceFieldBase):
        raise error(f"{model._meta.label}.{field_name} is a {type(field).__name__}, not a SequenceField.")
    return field


def field_of(
    label: str, error: type[UnknownFieldLabel] = UnknownFieldLabel
) -> tuple[type[models.Model], SequenceFieldBase]:
    """The model and SequenceField `label` names; `error` (UnknownFieldLabel or a subclass of the caller's, as the
    gap register's UnknownField) saying what is wrong with the label."""
    model, field_name = model_and_name(label, error)
    return model, sequence_field(model, field_name, error)


def label_of(model: type[models.Model], field: SequenceFieldBase) -> str:
    """The label a field is known by: "shop.Invoice.number"."""
    return f"{model._meta.label}.{field.name}"


def sequence_fields() -> Iterator[tuple[type[models.Model], SequenceFieldBase]]:
    """Every SequenceField declared on an installed model (its own fields, not those it inherits), with its model."""
    for model in apps.get_models():
        for field in model._meta.local_fields:
            if isinstance(field, SequenceFieldBase):
                yield model, field


def sequence_field_labels() -> list[str]:
    """The label of every SequenceField of an installed model, sorted: the choices of the register's add form."""
    return sorted(label_of(model, field) for model, field in sequence_fields())
