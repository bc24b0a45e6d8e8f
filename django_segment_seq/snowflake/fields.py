"""SnowflakeField: a BigIntegerField filled with a Snowflake id when its row is first inserted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.core import checks
from django.db import models
from django.utils.translation import gettext_lazy as _

from django_segment_seq.db.columns import deconstruct_fill_at_save, fill_at_save
from django_segment_seq.snowflake.generator import next_snowflake
from django_segment_seq.snowflake.layouts import LAYOUTS

if TYPE_CHECKING:
    from django.db.models.expressions import Combinable

    # The stubs' value types, plus None: an empty field is filled at save.
    _IntegerBase = models.BigIntegerField[float | int | str | Combinable | None, int]
else:
    _IntegerBase = models.BigIntegerField


class SnowflakeField(_IntegerBase):
    """Time-ordered ids from this process's leased worker id; a caller's own value is kept; updates never change it."""

    description = _("Time-ordered Snowflake id")

    def __init__(self, *args: Any, layout: str = "classic", **kwargs: Any) -> None:
        self.layout = layout
        fill_at_save(kwargs)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[str, str, Sequence[Any], dict[str, Any]]:
        name, _path, args, kwargs = super().deconstruct()
        deconstruct_fill_at_save(kwargs)
        if self.layout != "classic":
            kwargs["layout"] = self.layout
        return name, "django_segment_seq.snowflake.fields.SnowflakeField", args, kwargs

    def get_pk_value_on_save(self, instance: models.Model) -> int:
        """Give a new primary key its id before Django decides between INSERT and UPDATE, and before bulk_create."""
        return next_snowflake(layout=self.layout)

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = getattr(model_instance, self.attname)
        if add and value is None:
            value = next_snowflake(layout=self.layout)
            setattr(model_instance, self.attname, value)
        return value

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        errors = super().check(**kwargs)
        if not isinstance(self.layout, str) or self.layout not in LAYOUTS:
            errors.append(
                checks.Error(
                    f"SnowflakeField layout={self.layout!r} is unknown.",
                    hint=f"Use one of {', '.join(repr(name) for name in sorted(LAYOUTS))}.",
                    obj=self,
                    id="django_segment_seq.E030",
                )
            )
        return errors
