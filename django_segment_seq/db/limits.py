"""The rules a Sequence row's limits obey when a person edits them (Sequence.clean()): each rule a small
validator that refuses on the field that was edited, so the admin shows the error where it was typed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from django_segment_seq.db.columns import BIGINT_MIN

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


@dataclass
class Limits:
    """A row's limits as submitted, the value stored now (None for a new row), and the fields that were edited."""

    value: int | None
    step: int | None
    min_value: int | None
    max_value: int | None
    stored: int | None
    changed: set[str]
    errors: dict[str, list[ValidationError]] = field(default_factory=dict)

    def refusals(self) -> dict[str, list[ValidationError]]:
        """Every rule's refusals by field, the rules checked in this order (a later one may defer to an earlier)."""
        for rule in (
            self.minimum_fits,
            self.step_positive,
            self.value_forward,
            self.maximum_above_value,
            self.minimum_below_maximum,
            self.step_within_span,
        ):
            rule()
        return self.errors

    def refuse(self, name: str, message: StrOrPromise, **params: Any) -> None:
        self.errors.setdefault(name, []).append(ValidationError(message, params=params))

    def edited(self, *names: str) -> str:
        """Of the fields a rule involves, the first one edited (the first one if none was)."""
        return next((name for name in names if name in self.changed), names[0])

    def minimum_fits(self) -> None:
        """The minimum leaves room below it for the value a new row starts at (min_value - 1)."""
        if self.min_value is not None and self.min_value <= BIGINT_MIN:
            self.refuse("min_value", _("The minimum must be greater than %(limit)d."), limit=BIGINT_MIN)

    def step_positive(self) -> None:
        if self.step is not None and self.step < 1:
            self.refuse("step", _("The step must be at least 1."))

    def value_forward(self) -> None:
        """An edited value never moves back over numbers already handed out."""
        if self.value is None or "value" not in self.changed or self.stored is None or self.value >= self.stored:
            return
        self.refuse(
            "value",
            _("The value can only move forward: numbers up to %(stored)d were already handed out."),
            stored=self.stored,
        )

    def maximum_above_value(self) -> None:
        """The maximum stays at or above the numbers handed out, and the value at or below the maximum."""
        if self.max_value is None:
            return
        if self.stored is not None and self.max_value < self.stored:
            self.refuse(
                "max_value",
                _("The maximum must not be below the value: numbers up to %(value)d were already handed out."),
                value=self.stored,
            )
        elif self.value is not None and self.max_value < self.value:
            if self.edited("value", "max_value") == "value":
                self.refuse("value", _("The value must not exceed the maximum (%(max)d)."), max=self.max_value)
            else:
                self.refuse(
                    "max_value",
                    _("The maximum must not be below the value: numbers up to %(value)d were already handed out."),
                    value=self.value,
                )

    def minimum_below_maximum(self) -> None:
        if self.min_value is None or self.max_value is None or self.min_value < self.max_value:
            return
        if self.edited("max_value", "min_value") == "max_value":
            self.refuse("max_value", _("The maximum must be greater than the minimum."))
        else:
            self.refuse("min_value", _("The minimum must be less than the maximum."))

    def step_within_span(self) -> None:
        """One step fits between minimum and maximum (when they are in order: minimum_below_maximum says otherwise)."""
        if self.min_value is None or self.max_value is None or self.min_value >= self.max_value:
            return
        span = self.max_value - self.min_value + 1
        if self.step is None or self.step <= span:
            return
        # One error per field here: an error already on it (numbers handed out) says more.
        name = self.edited("step", "max_value", "min_value")
        if name == "step":
            self.refuse(
                "step", _("The step must not exceed the numbers between minimum and maximum (%(span)d)."), span=span
            )
        elif name not in self.errors:
            self.refuse(
                name,
                _("Minimum and maximum must leave at least as many numbers as the step (%(step)d), not %(span)d."),
                step=self.step,
                span=span,
            )
