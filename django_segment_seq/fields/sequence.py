"""SequenceField: a model field filled from a named sequence when its row is first inserted, as a number or as text."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence as SequenceOf
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import models
from django.utils.translation import gettext_lazy as _

from django_segment_seq.api import next_value
from django_segment_seq.db.columns import concrete_field, empty_key_part, filled_at_save
from django_segment_seq.fields.checks.field import SequenceFieldChecks
from django_segment_seq.fields.managers import number_bulk_create_in_one_allocation  # noqa: F401 - connects it to class_prepared
from django_segment_seq.flow import formats as formatting
from django_segment_seq.flow import parsing, shape_ledger
from django_segment_seq.flow.checkdigits import CheckDigitValidator
from django_segment_seq.flow.formats import FlowFormat
from django_segment_seq.flow.resets import ResetOption
from django_segment_seq.flow.rules import NumberRule
from django_segment_seq.flow.scopes import scope_key

__all__ = ["FormattedSequenceField", "SequenceField", "filled_at_save"]

if TYPE_CHECKING:
    from django.db.models.expressions import Combinable

    # The stubs' value types, plus None: an empty field is filled at save.
    _IntegerBase = models.BigIntegerField[float | int | str | Combinable | None, int]
    _TextBase = models.CharField[str | int | Combinable | None, str]
else:
    _IntegerBase = models.BigIntegerField
    _TextBase = models.CharField


class SequenceField(SequenceFieldChecks, _IntegerBase):
    """A BigIntegerField whose value, when left empty, is taken from a sequence at INSERT time.

    A value assigned by the caller is stored as given, and updates never touch it. With
    format=..., SequenceField(...) builds a FormattedSequenceField (a CharField) instead.
    """

    description = _("Number from a named sequence")
    numbers_in_bulk = True
    _shape_compared = -1  # the shape ledger's generation this field last compared its shape in

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is SequenceField and kwargs.get("format") is not None:
            return FormattedSequenceField(*args, **kwargs)
        return super().__new__(cls)

    @classmethod
    def from_rule(cls, rule: NumberRule, *args: Any, **kwargs: Any) -> Any:
        """The field that makes its numbers by `rule`, the object code passes to next_text() too; `kwargs` are the
        field's own options (unique=True, reset_on=...). Migrations get the rule's options written out."""
        options: dict[str, Any] = {
            "format": rule.format,
            "reset": rule.reset,
            "fiscal_year_start": rule.fiscal_year_start,
            "scope": rule.scope if isinstance(rule.scope, str) else (list(rule.scope_names) or None),
            "check_digits": rule.check_digits,
            "conceal": rule.conceal,
            "gapless": rule.gapless,
        }
        given = {name: value for name, value in options.items() if value not in (None, False)}
        made = SequenceField(rule.sequence_name, *args, **given, **kwargs)
        made.share_rule(rule)
        return made

    def __init__(
        self,
        sequence_name: str,
        *args: Any,
        reset: ResetOption = None,
        reset_on: str | None = None,
        fiscal_year_start: int | str | Callable[[Any], int] | None = None,
        gapless: bool = False,
        scope: str | list[str] | tuple[str, ...] | None = None,
        check_digits: str | None = None,
        conceal: bool = False,
        **kwargs: Any,
    ) -> None:
        kwargs.pop("format", None)  # None here: a format makes __new__ build a FormattedSequenceField
        self.check_digits, self.conceal = check_digits, conceal  # both need a format: check E046 says so
        self.setup_sequence(sequence_name, reset, gapless, kwargs, reset_on, fiscal_year_start, scope)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[str, str, SequenceOf[Any], dict[str, Any]]:
        name, _path, args, kwargs = super().deconstruct()
        self.deconstruct_sequence(kwargs)
        return name, "django_segment_seq.fields.SequenceField", args, kwargs

    def _take(self, instance: models.Model | None = None) -> int:
        if self.gapless or self.scope:
            scope = None if instance is None else scope_key(self, instance)
            return self.rule.number(scope=scope)
        if self._shape_compared != shape_ledger.Generation.number:  # once per process: the hot path stays a take
            self.rule.require_shape(None)
            self._shape_compared = shape_ledger.Generation.number
        return next_value(self.sequence_name)

    def get_pk_value_on_save(self, instance: models.Model) -> int:
        """Number a new primary key before Django decides between INSERT and UPDATE, and before bulk_create."""
        return self._take(instance)

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = getattr(model_instance, self.attname)
        if add and value is None:
            value = self._take(model_instance)
            setattr(model_instance, self.attname, value)
        return value


class FormattedSequenceField(SequenceFieldChecks, _TextBase):
    """A CharField holding a flow number ("OD20261122000123"): a sequence number rendered by a format.

    With reset, each day, week, month, quarter, (fiscal) year or callable-defined period counts from
    the sequence's minimum in its own row, the period of the instance's reset_on date when it has
    one; a zero-padded width caps the count; with gapless, numbers are taken under a row lock.
    """

    description = _("Formatted number from a named sequence")
    flow: FlowFormat

    def __init__(
        self,
        sequence_name: str,
        *args: Any,
        format: formatting.Format,
        reset: ResetOption = None,
        reset_on: str | None = None,
        fiscal_year_start: int | str | Callable[[Any], int] | None = None,
        gapless: bool = False,
        scope: str | list[str] | tuple[str, ...] | None = None,
        check_digits: str | None = None,
        conceal: bool = False,
        **kwargs: Any,
    ) -> None:
        self.format = format
        self.check_digits, self.conceal = check_digits, conceal
        self.setup_sequence(sequence_name, reset, gapless, kwargs, reset_on, fiscal_year_start, scope, format)
        kwargs.setdefault("max_length", self.flow.default_max_length(self.reset_rule))
        if self.flow.check_digits is not None:  # a text typed into a form is checked like one handed out
            self.default_validators = [*self.default_validators, CheckDigitValidator(self.flow.check_digits.name)]
        super().__init__(*args, **kwargs)

    def reveal(self, text: str) -> int:
        """The sequence number behind one of this field's texts, concealed or not, written exactly as the format
        writes it; ValueError for anything else, ConcealKeyChanged when the key that made it is not configured."""
        try:
            return parsing.reveal(self.flow, text)
        except ValueError as exc:
            raise ValueError(f"{self.model._meta.label}.{self.name}: {exc}") from None

    def deconstruct(self) -> tuple[str, str, SequenceOf[Any], dict[str, Any]]:
        name, _path, args, kwargs = super().deconstruct()
        self.deconstruct_sequence(kwargs)
        kwargs["format"] = self.format
        return name, "django_segment_seq.fields.SequenceField", args, kwargs

    def _take(self, instance: models.Model) -> str:
        return self.rule.text(
            moment=self.instant(instance),
            scope=scope_key(self, instance),
            instance=instance,
            max_length=self.max_length,
            owner=lambda: f"{self.model._meta.label}.{self.name}",
        )

    def instant(self, instance: models.Model) -> datetime:
        """The one instant that picks the period and fills {date}: the record's reset_on date, else now."""
        if self.reset_on is None:
            return formatting.now()
        field = concrete_field(self.model, self.reset_on)  # a DateField or DateTimeField, as E020 checks
        value = getattr(instance, field.attname)
        if value in (None, ""):
            return formatting.now()
        if isinstance(value, str):
            value = field.to_python(value)
        try:
            return formatting.instant_of(value)
        except ValueError as exc:
            raise ValueError(
                f"{self.model._meta.label}.{self.name}: reset_on={self.reset_on!r} holds {value!r}: {exc}"
            ) from None

    def get_default(self) -> Any:
        """None, not '', in a composite primary key, so Django numbers the key before it looks it up (an integer
        field's default is None already)."""
        if empty_key_part(self):
            return None
        return super().get_default()

    def get_pk_value_on_save(self, instance: models.Model) -> str:
        """Number a new primary key before Django decides between INSERT and UPDATE, and before bulk_create."""
        return self._take(instance)

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = getattr(model_instance, self.attname)
        if add and value in (None, ""):
            value = self._take(model_instance)
            setattr(model_instance, self.attname, value)
        return value
