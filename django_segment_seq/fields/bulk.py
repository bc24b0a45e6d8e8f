"""Bulk numbering: every empty SequenceField of a list of new objects filled with one allocation per sequence.

Django's bulk_create asks a field for one value per object and never shows it the whole list, so
the list is numbered before Django sees it: by `SequenceQuerySet.bulk_create` (or a manager built
from it) or by calling `fill_sequences(objs)` yourself.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence as SequenceOf
from operator import attrgetter
from typing import Any, TypeVar

from django.db import models

from django_segment_seq.api import next_values
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.flow.scopes import bulk_groups

_M = TypeVar("_M", bound=models.Model)


def fill_sequences(objs: SequenceOf[models.Model]) -> int:
    """Number the empty SequenceFields of `objs` in place, one next_values() call per sequence; returns how many.

    As in SequenceField.pre_save at INSERT, a field is empty when its value is None.
    """
    wanted: dict[str, list[tuple[list[models.Model], str]]] = {}
    for model, group in _by_model(objs):
        for field in sequence_fields(model):
            attname = field.attname
            # Plain attribute access, never obj.__dict__: on Python 3.11+ that builds a dict per object,
            # and Django's own pass over the objects then runs measurably slower.
            value_of = attrgetter(attname)
            empty = [obj for obj in group if value_of(obj) is None]
            if empty:
                for name, part in bulk_groups(field, empty):  # one row per scope; the sequence's own row otherwise
                    wanted.setdefault(name, []).append((part, attname))
    filled = 0
    for name, parts in wanted.items():
        numbers = iter(next_values(name, sum(len(empty) for empty, _ in parts)))
        for empty, attname in parts:
            for obj, number in zip(empty, numbers, strict=False):  # numbers is shared by all parts
                setattr(obj, attname, number)
            filled += len(empty)
    return filled


def _by_model(objs: SequenceOf[models.Model]) -> Iterable[tuple[type[models.Model], list[models.Model]]]:
    if not objs:
        return []
    first = type(objs[0])
    if len(set(map(type, objs))) == 1:
        return [(first, list(objs))]
    groups: dict[type[models.Model], list[models.Model]] = {}
    for obj in objs:
        groups.setdefault(type(obj), []).append(obj)
    return list(groups.items())


def sequence_fields(model: type[models.Model]) -> list[Any]:
    """The fields of `model` that fill_sequences() numbers: integer SequenceFields that are not gapless."""
    # Gapless fields are left to pre_save: their numbers are locked one at a time in the caller's transaction.
    return [
        f
        for f in model._meta.concrete_fields
        if isinstance(f, SequenceFieldBase) and f.numbers_in_bulk and not f.gapless
    ]


class SequenceQuerySet(models.QuerySet[_M]):
    """A QuerySet whose bulk_create takes all numbers of a call with one allocation per sequence."""

    def bulk_create(self, objs: Iterable[_M], *args: Any, **kwargs: Any) -> list[_M]:
        objs = list(objs)
        fill_sequences(objs)
        return super().bulk_create(objs, *args, **kwargs)


class SequenceManager(models.Manager.from_queryset(SequenceQuerySet)):  # type: ignore[misc]
    """A manager whose bulk_create numbers each call in one allocation; models' plain managers become one."""
