"""SequenceField: a model field filled from a named sequence when its row is first inserted."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _


def filled_at_save() -> None:
    """The default of a primary-key SequenceField: nothing until save() takes a number."""
    return None


class SequenceField(models.BigIntegerField):
    """A BigIntegerField whose value, when left empty, is taken from a sequence at INSERT time.

    A value assigned by the caller is stored as given, and updates never touch it.
    """

    description = _("Number from a named sequence")

    def __init__(self, sequence_name: str, *args: Any, **kwargs: Any) -> None:
        self.sequence_name = sequence_name
        kwargs.setdefault("blank", True)
        if kwargs.get("primary_key") and "default" not in kwargs:
            # A primary key with a default makes save() INSERT at once instead of trying an UPDATE first.
            kwargs["default"] = filled_at_save
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[str, str, list[Any], dict[str, Any]]:
        name, _path, args, kwargs = super().deconstruct()
        if kwargs.get("blank") is True:
            del kwargs["blank"]
        else:
            kwargs["blank"] = False
        if kwargs.get("default") is filled_at_save:
            del kwargs["default"]
        kwargs["sequence_name"] = self.sequence_name
        return name, "django_segment_seq.fields.SequenceField", args, kwargs

    def get_pk_value_on_save(self, instance: models.Model) -> int:
        """Number a new primary key before Django decides between INSERT and UPDATE, and before bulk_create."""
        from .api import next_value

        return next_value(self.sequence_name)

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = getattr(model_instance, self.attname)
        if add and value is None:
            from .api import next_value

            value = next_value(self.sequence_name)
            setattr(model_instance, self.attname, value)
        return value

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        return [*super().check(**kwargs), *self._check_sequence_name()]

    def _check_sequence_name(self) -> list[checks.CheckMessage]:
        from .models import validate_sequence_name

        try:
            validate_sequence_name(self.sequence_name)
        except ValidationError as exc:
            return [
                checks.Error(
                    f"SequenceField sequence_name {self.sequence_name!r} is invalid: {' '.join(exc.messages)}",
                    hint="Pass a non-empty string of at most 100 characters as the first argument.",
                    obj=self,
                    id="django_segment_seq.E010",
                )
            ]
        return []
