"""What the app's columns share: the bounds of a signed 64-bit integer, being filled at INSERT by the app rather
than the database (the keywords SequenceField and SnowflakeField both handle), and the server history column."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.translation import gettext_lazy as _

from django_segment_seq.db.history import server_history

if TYPE_CHECKING:
    from collections.abc import Sequence as SequenceOf

    from django_stubs_ext import StrOrPromise

# The Sequence table's value, limits and the fields' columns are BIGINT (bigint on PostgreSQL, BIGINT on MariaDB).
BIGINT_MIN = -(2**63)
BIGINT_MAX = 2**63 - 1


if TYPE_CHECKING:
    _CharBase = models.CharField[str, str]
else:
    _CharBase = models.CharField


class FilledHistoryField(_CharBase):
    """A server history column that a save leaving it empty fills with the saving session's history.

    A row made by the ORM (the admin, create(), bulk_create()) then carries the history it was made on, so a
    failover that loses its first ranges is still seen by the fence. Migrations see a plain CharField.
    """

    def get_db_prep_save(self, value: Any, connection: BaseDatabaseWrapper) -> Any:
        if not value:
            value = server_history(connection)
        return super().get_db_prep_save(value, connection)

    def deconstruct(self) -> tuple[str, str, SequenceOf[Any], dict[str, Any]]:
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.CharField", args, kwargs


def server_history_field(help_text: StrOrPromise, *, filled: bool = False) -> models.CharField[str, str]:
    """The column a row's writes record their database server history in (db/history.py), for the failover fences;
    `filled`: a FilledHistoryField."""
    kind = FilledHistoryField if filled else models.CharField
    return kind(
        _("server history"), max_length=64, default="", db_default="", blank=True, editable=False, help_text=help_text
    )


def filled_at_save() -> None:
    """The default of a primary key filled at save: nothing until save() takes a number or an id."""
    return None


def fill_at_save(kwargs: dict[str, Any]) -> None:
    """Blank by default, and a primary key gets a default so save() INSERTs at once instead of trying an UPDATE."""
    kwargs.setdefault("blank", True)
    if kwargs.get("primary_key") and "default" not in kwargs:
        kwargs["default"] = filled_at_save


def empty_key_part(field: models.Field[Any, Any]) -> bool:
    """Whether `field` is part of a composite primary key with no default of its own, so a new instance holds None.

    Django numbers a key part that is None before it looks the key up; a text field's usual '' would instead make
    save() UPDATE the row whose text is empty and never take a number.
    """
    model = getattr(field, "model", None)
    return model is not None and in_composite_key(model, field) and not field.has_default()


def in_composite_key(model: type[models.Model], field: models.Field[Any, Any]) -> bool:
    """Whether `field` is one of the fields of `model`'s CompositePrimaryKey, which may name it by name or attname."""
    key = model._meta.pk
    if not isinstance(key, models.CompositePrimaryKey):
        return False
    return field.name in key.field_names or field.attname in key.field_names


def deconstruct_fill_at_save(kwargs: dict[str, Any]) -> None:
    """Leave the defaults fill_at_save() set out of migrations, so they stay as short as Django writes them."""
    if kwargs.get("blank") is True:
        del kwargs["blank"]
    else:
        kwargs["blank"] = False
    if kwargs.get("default") is filled_at_save:
        del kwargs["default"]


def concrete_field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    """The field `name` of `model` itself: get_field() also returns reverse relations, which have no column."""
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field):
        raise TypeError(f"{model._meta.label}.{name} is a reverse relation, not a field of the model")
    return field


def column_of(model: type[models.Model], name: str) -> str:
    """The column of `model`'s field `name`, for raw SQL."""
    column = concrete_field(model, name).column
    if column is None:
        raise TypeError(f"{model._meta.label}.{name} has no column of its own")
    return column
