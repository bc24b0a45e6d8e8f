"""The Sequence table: one row per named sequence, holding the highest number handed to any process."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .ranges import BIGINT_MAX, BIGINT_MIN

NAME_MAX_LENGTH = 100


def validate_sequence_name(name: object) -> None:
    """Names are keys shared by every process, so refuse ones that could not be stored as given."""
    if not isinstance(name, str):
        raise ValidationError(
            _("A sequence name must be a string, not %(type)s."), code="invalid", params={"type": type(name).__name__}
        )
    if not name.strip():
        raise ValidationError(_("A sequence name must not be empty."), code="blank")
    if len(name) > NAME_MAX_LENGTH:
        raise ValidationError(
            _("Sequence name %(name)r is %(length)d characters long; the limit is %(limit)d."),
            code="max_length",
            params={"name": name[:20] + "…", "length": len(name), "limit": NAME_MAX_LENGTH},
        )


def require_valid_name(name: object) -> None:
    """validate_sequence_name() for callers of the functions, who expect ValueError rather than a form error."""
    try:
        validate_sequence_name(name)
    except ValidationError as exc:
        raise ValueError(" ".join(exc.messages)) from None


class CounterValueField(models.BigIntegerField):
    """The `value` column: left empty on insert, it starts just below `min_value`.

    Filling it in the field rather than in Sequence.save() covers bulk_create() and the historical
    models of data migrations, which never run the model's own save().
    """

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = getattr(model_instance, self.attname)
        if add and value is None:
            min_value = getattr(model_instance, "min_value", None)
            value = (1 if min_value is None else min_value) - 1
            setattr(model_instance, self.attname, value)
        return value


class Sequence(models.Model):
    """A named counter; processes move `value` forward a range at a time with compare-and-set."""

    name = models.CharField(_("name"), max_length=NAME_MAX_LENGTH, unique=True, validators=[validate_sequence_name])
    value = CounterValueField(
        _("value"),
        blank=True,
        default=None,
        help_text=_(
            "The highest number already handed to any process. It only moves forward; "
            "leave it empty on a new sequence to start at the minimum."
        ),
    )
    step = models.PositiveIntegerField(
        _("step"), default=1000, help_text=_("How many numbers a process takes per database round trip.")
    )
    min_value = models.BigIntegerField(_("minimum"), default=1)
    max_value = models.BigIntegerField(_("maximum"), default=BIGINT_MAX)
    cycle = models.BooleanField(
        _("cycle"),
        default=False,
        help_text=_("Start again at the minimum after the maximum. Cycling repeats numbers by design."),
    )
    base_name = models.CharField(
        _("base sequence"),
        max_length=NAME_MAX_LENGTH,
        null=True,
        blank=True,
        editable=False,
        db_index=True,
        help_text=_("For a per-period row of a sequence that restarts daily, monthly or yearly: that sequence."),
    )
    period = models.CharField(
        _("period"),
        max_length=10,
        null=True,
        blank=True,
        editable=False,
        help_text=_("The day (YYYY-MM-DD), month (YYYY-MM) or year (YYYY) this row counts."),
    )
    version = models.BigIntegerField(
        _("version"),
        default=0,
        editable=False,
        help_text=_("Moved by every write to the row, so a compare-and-set never succeeds on a row that changed."),
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)
    modified = models.DateTimeField(_("modified"), auto_now=True)

    class Meta:
        verbose_name = _("sequence")
        verbose_name_plural = _("sequences")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any, **kwargs: Any) -> Sequence:
        # **kwargs: Django 6.1 passes fetch_mode= and deprecates overrides that cannot take it.
        instance = super().from_db(db, field_names, values, **kwargs)
        instance._loaded_value = instance.__dict__.get("value")
        return instance

    def stored_value(self) -> int | None:
        """The value in the database now (not when this instance was loaded); None for a new row."""
        if self.pk is None:
            return None
        return type(self)._base_manager.using(self._state.db).filter(pk=self.pk).values_list("value", flat=True).first()

    def clean(self) -> None:
        errors: dict[str, list[ValidationError]] = {}

        def refuse(field: str, message: str, **params: Any) -> None:
            errors.setdefault(field, []).append(ValidationError(message, params=params))

        if self.min_value is not None and self.min_value <= BIGINT_MIN:
            refuse("min_value", _("The minimum must be greater than %(limit)d."), limit=BIGINT_MIN)
        if self.step is not None and self.step < 1:
            refuse("step", _("The step must be at least 1."))
        if self.min_value is not None and self.max_value is not None:
            if self.min_value >= self.max_value:
                refuse("max_value", _("The maximum must be greater than the minimum."))
            elif self.step is not None and self.step > self.max_value - self.min_value + 1:
                refuse(
                    "step",
                    _("The step must not exceed the numbers between minimum and maximum (%(span)d)."),
                    span=self.max_value - self.min_value + 1,
                )
        stored = self.stored_value()
        if self.value is not None:
            unchanged = self.value == getattr(self, "_loaded_value", None)  # save() will not write it
            if stored is not None and self.value < stored and not unchanged:
                refuse(
                    "value",
                    _("The value can only move forward: numbers up to %(stored)d were already handed out."),
                    stored=stored,
                )
            if self.max_value is not None and self.value > self.max_value:
                refuse("value", _("The value must not exceed the maximum."))
        current = max((v for v in (self.value, stored) if v is not None), default=None)
        if current is not None and self.max_value is not None and self.max_value < current:
            refuse(
                "max_value",
                _("The maximum must not be below the value: numbers up to %(value)d were already handed out."),
                value=current,
            )
        if errors:
            raise ValidationError(errors)

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save without ever rewinding `value`: a stale copy (an admin form open during load) keeps its hands off it.

        An existing row's value is written only when it was changed on this instance, and then only
        forward, by a conditional UPDATE; moving it backwards raises ValidationError.
        """
        if self._state.adding:
            if self.value is None:
                self.value = self.min_value - 1
            super().save(*args, **kwargs)
            self._loaded_value = self.value
            return
        update_fields = kwargs.pop("update_fields", None)
        names = (
            {f.name for f in self._meta.concrete_fields if not f.primary_key}
            if update_fields is None
            else set(update_fields)
        )
        wants_value = "value" in names and self.value != getattr(self, "_loaded_value", None)
        names.discard("value")
        if names:
            super().save(*args, update_fields=sorted(names | {"modified"}), **kwargs)
        if wants_value:
            self._advance_value(kwargs.get("using"))

    def _advance_value(self, using: str | None) -> None:
        target = self.value
        manager = type(self)._base_manager.db_manager(using or self._state.db)
        moved = manager.filter(pk=self.pk, value__lt=target).update(value=target, modified=timezone.now())
        stored = manager.filter(pk=self.pk).values_list("value", flat=True).get()
        loaded = getattr(self, "_loaded_value", None)
        if not moved and loaded is not None and target < loaded:
            message = _("The value can only move forward: numbers up to %(stored)d were already handed out.")
            raise ValidationError({"value": ValidationError(message, params={"stored": stored})})
        self.value = self._loaded_value = stored
