"""Bulk numbering: every empty SequenceField of a list of new objects filled with one allocation per sequence.

Django's bulk_create asks a field for one value per object and never shows it the whole list, so
the list is numbered before Django sees it: by `SequenceQuerySet.bulk_create` (or a manager built
from it) or by calling `fill_sequences(objs)` yourself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence as SequenceOf
from typing import Any

from django.db import models

from .api import next_values


def fill_sequences(objs: SequenceOf[models.Model]) -> int:
    """Number the empty SequenceFields of `objs` in place, one next_values() call per sequence; returns how many."""
    from .fields import SequenceField

    wanted: dict[str, list[tuple[models.Model, str]]] = {}
    fields_by_model: dict[type[models.Model], list[SequenceField]] = {}
    for obj in objs:
        model = type(obj)
        fields = fields_by_model.get(model)
        if fields is None:
            fields = [f for f in model._meta.concrete_fields if isinstance(f, SequenceField)]
            fields_by_model[model] = fields
        if not obj._state.adding:
            continue  # a stored row keeps its numbers, as in pre_save
        for field in fields:
            if getattr(obj, field.attname) is None:
                wanted.setdefault(field.sequence_name, []).append((obj, field.attname))
    filled = 0
    for name, targets in wanted.items():
        for (obj, attname), number in zip(targets, next_values(name, len(targets))):
            setattr(obj, attname, number)
        filled += len(targets)
    return filled


class SequenceQuerySet(models.QuerySet):
    """A QuerySet whose bulk_create takes all numbers of a call with one allocation per sequence."""

    def bulk_create(self, objs: Iterable[models.Model], *args: Any, **kwargs: Any) -> list[models.Model]:
        objs = list(objs)
        fill_sequences(objs)
        return super().bulk_create(objs, *args, **kwargs)


class SequenceManager(models.Manager.from_queryset(SequenceQuerySet)):  # type: ignore[misc]
    """The default manager to give models with SequenceFields that are created with bulk_create."""
