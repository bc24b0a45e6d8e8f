"""A SequenceField found from its label "app_label.Model.field", the name the register and the command use."""

from __future__ import annotations

from django.apps import apps
from django.db import models

from django_segment_seq.audit.exceptions import UnknownField
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.sync import sequence_field


def model_and_name(label: str) -> tuple[type[models.Model], str]:
    """The model `label` names and the field name it gives; UnknownField saying what is wrong with the label."""
    parts = label.split(".")
    if len(parts) != 3:
        raise UnknownField(f"{label!r}: give the field as APP_LABEL.Model.field, e.g. shop.Order.order_no.")
    app_label, model_name, field_name = parts
    try:
        return apps.get_model(app_label, model_name), field_name
    except LookupError as exc:
        raise UnknownField(f"{label!r}: {exc}") from None


def field_of(label: str) -> tuple[type[models.Model], SequenceFieldBase]:
    """The model and SequenceField `label` names; UnknownField saying what is wrong with the label."""
    model, field_name = model_and_name(label)
    try:
        return model, sequence_field(model, field_name)
    except ValueError as exc:
        raise UnknownField(str(exc)) from None


def label_of(model: type[models.Model], field: SequenceFieldBase) -> str:
    """The label a field is registered under: "shop.Invoice.number"."""
    return f"{model._meta.label}.{field.name}"


def sequence_field_labels() -> list[str]:
    """The label of every SequenceField of an installed model, sorted: the choices of the register's add form."""
    return sorted(
        label_of(model, field)
        for model in apps.get_models()
        for field in model._meta.local_fields
        if isinstance(field, SequenceFieldBase)
    )
