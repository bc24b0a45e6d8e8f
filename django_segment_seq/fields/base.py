"""What the integer and the formatted SequenceField share: the sequence name and the flow options, kept for checks
and written to migrations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

from django_segment_seq.db.columns import deconstruct_fill_at_save, fill_at_save
from django_segment_seq.flow.formats import FlowFormat
from django_segment_seq.flow.resets import Reset
from django_segment_seq.flow.rules import NumberRule

if TYPE_CHECKING:
    FieldBase = models.Field[Any, Any]
else:
    FieldBase = object  # only ever combined with a Field


class SequenceFieldBase(FieldBase):
    """The options every sequence field takes; `flow` is the format of a formatted field, None for an integer one."""

    sequence_name: str
    reset: Any
    reset_on: Any
    fiscal_year_start: Any
    gapless: Any
    scope: Any
    check_digits: Any = None
    conceal: Any = False
    reset_rule: Reset
    # The options above as the rule numbers are made by, shared with numbers made in code (next_text).
    rule: NumberRule
    flow: FlowFormat | None = None
    # Numbered by fill_sequences() in one allocation per sequence; formatted texts are rendered one by one at save.
    numbers_in_bulk = False

    def setup_sequence(
        self,
        sequence_name: str,
        reset: Any,
        gapless: Any,
        kwargs: dict[str, Any],
        reset_on: Any = None,
        fiscal_year_start: Any = None,
        scope: Any = None,
        format: Any = None,
    ) -> None:
        """Keep the options, build the rule numbers are made by, and set the keyword defaults of a field filled at
        save."""
        self.sequence_name = sequence_name
        self.scope = scope
        self.reset = reset
        self.reset_on = reset_on
        self.fiscal_year_start = fiscal_year_start
        self.gapless = gapless
        self.rule = NumberRule(
            sequence_name,
            format=format,
            reset=reset,
            fiscal_year_start=fiscal_year_start,
            scope=scope,
            check_digits=self.check_digits,
            conceal=self.conceal,
            gapless=gapless,
        )
        self.reset_rule = self.rule.reset_rule
        if format is not None:
            self.flow = self.rule.flow
        fill_at_save(kwargs)
        # Like AutoField, out of forms unless asked for: a number typed in a form collides with a later one.
        kwargs.setdefault("editable", False)

    def share_rule(self, rule: NumberRule) -> None:
        """Make numbers by `rule` itself (from_rule), so code holding the rule and this field are one rule."""
        self.rule = rule
        self.reset_rule = rule.reset_rule
        if rule.flow is not None:
            self.flow = rule.flow

    def contribute_to_class(self, cls: type[models.Model], name: str, *args: Any, **kwargs: Any) -> None:
        """Tell the rule which model it belongs to: its scope names resolve to that model's fields."""
        super().contribute_to_class(cls, name, *args, **kwargs)
        if not cls._meta.abstract:
            self.rule.bind(self)

    def deconstruct_sequence(self, kwargs: dict[str, Any]) -> None:
        """Write the options that differ from their defaults, and leave out the defaults setup_sequence() set."""
        deconstruct_fill_at_save(kwargs)
        # editable=False is this field's default, so migrations written before it was stay unchanged.
        if kwargs.pop("editable", True):
            kwargs["editable"] = True
        kwargs["sequence_name"] = self.sequence_name
        if self.reset is not None:
            kwargs["reset"] = self.reset  # a callable is written to migrations by its import path
        if self.reset_on is not None:
            kwargs["reset_on"] = self.reset_on
        if self.fiscal_year_start is not None:
            kwargs["fiscal_year_start"] = self.fiscal_year_start
        if self.gapless is not False:
            kwargs["gapless"] = self.gapless
        if self.scope is not None:
            kwargs["scope"] = self.scope
        if self.check_digits is not None:
            kwargs["check_digits"] = self.check_digits
        if self.conceal is not False:
            kwargs["conceal"] = self.conceal

    def save_form_data(self, instance: models.Model, data: Any) -> None:
        """On a change form, an emptied field keeps its stored number: only an explicit new value is written."""
        stored = getattr(instance, self.attname)
        if data in self.empty_values and not instance._state.adding and stored not in self.empty_values:
            return
        super().save_form_data(instance, data)
