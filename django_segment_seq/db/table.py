"""The Sequence table: one row per named sequence, holding the highest number handed to any process.

Django finds it through `django_segment_seq.models`, the path migrations name it by."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.db.models.lookups import LessThanOrEqual
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from django_segment_seq.db.columns import BIGINT_MAX, concrete_field, server_history_field
from django_segment_seq.db.limits import Limits
from django_segment_seq.db.rownames import NAME_MAX_LENGTH, validate_sequence_name

if TYPE_CHECKING:
    from collections.abc import Collection
    from collections.abc import Sequence as SequenceOf

    from django.db.models.expressions import Combinable

    # The stubs' value types, plus None: an empty value is filled at save.
    _IntegerBase = models.BigIntegerField[float | int | str | Combinable | None, int]
else:
    _IntegerBase = models.BigIntegerField


class CounterValueField(_IntegerBase):
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

    def deconstruct(self) -> tuple[str, str, SequenceOf[Any], dict[str, Any]]:
        name, _path, args, kwargs = super().deconstruct()
        return name, "django_segment_seq.models.CounterValueField", args, kwargs  # the path migration 0003 holds


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
    base_name = models.CharField(  # noqa: DJ001 - NULL: not a per-period row; changing it needs a migration
        _("base sequence"),
        max_length=NAME_MAX_LENGTH,
        null=True,
        blank=True,
        editable=False,
        db_index=True,
        help_text=_("For a per-period row of a sequence that restarts daily, monthly or yearly: that sequence."),
    )
    period = models.CharField(  # noqa: DJ001 - NULL: not a per-period row; changing it needs a migration
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
        db_default=0,  # rows inserted with raw SQL (an import from another system) start at 0 too
        editable=False,
        help_text=_("Moved by every write to the row, so a compare-and-set never succeeds on a row that changed."),
    )
    history = server_history_field(
        _(
            "The database server history (PostgreSQL system and timeline, MariaDB server or Galera cluster) of "
            "the last range taken: a range taken on another history follows a failover and skips FAILOVER_SKIP."
        ),
        filled=True,  # a row made by the ORM carries the history it was made on, before its first range
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)
    modified = models.DateTimeField(_("modified"), auto_now=True)
    # Set by the admin's change form: the row as it was loaded, before submitted values were written onto it.
    _as_loaded: Sequence

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

    def changed_fields(self) -> set[str]:
        """The editable fields that differ from the stored row (all on a new row), so errors name what was edited.

        `value` counts as changed only when it differs from the value this instance was loaded with:
        a row moved on by other processes since then has not been edited by whoever holds this copy.
        """
        editable = ["value", "step", "min_value", "max_value", "cycle"]
        stored = None
        if self.pk is not None:
            stored = type(self)._base_manager.using(self._state.db).filter(pk=self.pk).values(*editable).first()
        if stored is None:
            return set(editable)
        changed = {name for name in editable[1:] if getattr(self, name) != stored[name]}
        if self.value != getattr(self, "_loaded_value", stored["value"]):
            changed.add("value")
        return changed

    def clean(self) -> None:
        """Refuse limits that contradict each other or the numbers handed out, each on the field that was edited."""
        changed = self.changed_fields()
        limits = Limits(self.value, self.step, self.min_value, self.max_value, self.stored_value(), changed)
        errors = limits.refusals()
        if errors:
            raise ValidationError(errors)

    def refresh_from_db(self, *args: Any, **kwargs: Any) -> None:
        fields = kwargs.get("fields", args[1] if len(args) > 1 else None)
        super().refresh_from_db(*args, **kwargs)
        if fields is None or "value" in fields:
            self._loaded_value = self.__dict__.get("value")

    def save(self, *args: Any, **kwargs: Any) -> None:  # noqa: DJ012 - kept beside refresh_from_db, whose _loaded_value it reads
        """Save without ever rewinding `value` or stranding it above `max_value`, and move `version`.

        A stale copy (an admin form open while processes take ranges) keeps its hands off the value:
        an existing row's value is written only when it was changed on this instance, and then only
        forward. The other columns are written by one conditional UPDATE that also refuses a maximum
        below the value stored at that moment; either refusal is a ValidationError and writes nothing.
        Every write moves `version`, so a compare-and-set that read the row before it fails and
        reads the new limits.
        """
        if self._state.adding:
            # An INSERT, or, for an instance given an existing row's pk, an UPDATE that _do_update() keeps forward.
            super().save(*args, **kwargs)
            self._loaded_value = self.value
            return
        update_fields = kwargs.pop("update_fields", None)
        names = (
            {f.name for f in self._meta.concrete_fields if not f.primary_key}
            if update_fields is None
            else set(update_fields)
        )
        target, loaded = self.value, getattr(self, "_loaded_value", None)
        wants_value = "value" in names and target != loaded
        names -= {"value", "version", "created", "modified"}
        using = kwargs.get("using") or self._state.db
        with transaction.atomic(using=using):  # a refusal of either write leaves both undone
            if names:
                self._update_columns(names, using)
            if wants_value:
                self._advance_value(target, loaded, using)

    def _update_columns(self, names: set[str], using: str | None) -> None:
        manager = type(self)._base_manager.db_manager(using)
        changes: dict[str, Any] = {name: getattr(self, concrete_field(type(self), name).attname) for name in names}
        self.modified = changes["modified"] = timezone.now()
        changes["version"] = F("version") + 1
        rows = manager.filter(pk=self.pk)
        # The write comes first: on SQLite a read would take a shared lock that must then be upgraded,
        # which SQLite refuses at once while another connection commits.
        if not rows.filter(value__lte=self.max_value).update(**changes):
            stored = rows.values_list("value", flat=True).first()
            if stored is None:
                raise self.DoesNotExist(f"Sequence {self.name!r} was deleted since it was loaded.")
            message = _(
                "The maximum must not be below the value: numbers up to %(value)d were handed out "
                "since this page was loaded."
            )
            raise ValidationError({"max_value": ValidationError(message, params={"value": stored})})
        # The instance now shows the row as stored: processes may have moved the value since it was loaded.
        self.value, self.version = rows.values_list("value", "version").get()
        self._loaded_value = self.value

    def _advance_value(self, target: int, loaded: int | None, using: str | None) -> None:
        manager = type(self)._base_manager.db_manager(using)
        moved = manager.filter(pk=self.pk, value__lt=target, max_value__gte=target).update(
            value=target, version=F("version") + 1, modified=timezone.now()
        )
        stored, max_value, version = manager.filter(pk=self.pk).values_list("value", "max_value", "version").get()
        if not moved and target > max_value:
            message = _("The value must not exceed the maximum.")
            raise ValidationError({"value": ValidationError(message)})
        if not moved and loaded is not None and target < loaded:
            message = _("The value can only move forward: numbers up to %(stored)d were already handed out.")
            raise ValidationError({"value": ValidationError(message, params={"stored": stored})})
        self.value = self._loaded_value = stored
        self.version = version

    def _do_update(
        self,
        base_qs: models.QuerySet[Any],
        using: str | None,
        pk_val: Any,
        values: Collection[tuple[models.Field[Any, Any], type[models.Model] | None, Any]],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        """Keep every UPDATE that Django's save machinery sends for a row forward-only.

        Two kinds of write reach the row here rather than through the checks of save(): an instance
        that never read the row (a new instance given an existing pk, with or without force_update
        or update_fields), and raw saves (fixtures, `loaddata`), which bypass save() altogether.
        Whatever the instance holds, the row keeps the higher of its stored value and the
        instance's, `version` moves one past the stored one, and an empty value or creation time
        leaves the stored one. A write that would leave the value above the maximum is refused,
        as save() refuses it. The instance then shows value and version as stored.

        *args/**kwargs: Django 6.0 added returning_fields, and returns rows rather than a bool.
        """
        written: list[tuple[models.Field[Any, Any], type[models.Model] | None, Any]] = []
        value: Any = F("value")  # the value and maximum the row will have, for the check
        max_value: Any = F("max_value")
        new_max: Any = None
        keep_created = False
        for field, model, new in values:
            if field.name == "version":
                continue  # written below, whatever the instance holds
            if new is None and field.name in ("value", "created"):
                keep_created |= field.name == "created"
                continue  # empty: the stored one stays
            if field.name == "value":
                new = value = Greatest(F("value"), _expression(new, field), output_field=field)
            elif field.name == "max_value":
                new_max, max_value = new, _expression(new, field)
            written.append((field, model, new))
        written.append((concrete_field(type(self), "version"), None, F("version") + 1))
        # The check is part of the UPDATE, so it holds against the row as stored at that moment.
        checked = base_qs.filter(LessThanOrEqual(value, max_value))
        updated = super()._do_update(checked, using, pk_val, written, *args, **kwargs)
        row = base_qs.filter(pk=pk_val)
        if not updated:
            stored = row.values_list("value", flat=True).first()
            if stored is None:
                return updated  # no such row: Django inserts the instance
            if isinstance(new_max, int) and stored > new_max:
                message = _("The maximum must not be below the value: numbers up to %(value)d were already handed out.")
                raise ValidationError({"max_value": ValidationError(message, params={"value": stored})})
            raise ValidationError({"value": ValidationError(_("The value must not exceed the maximum."))})
        fields = ["value", "version", "created"] if keep_created else ["value", "version"]
        for name, stored_value in zip(fields, row.values_list(*fields).get(), strict=True):
            setattr(self, name, stored_value)
        self._loaded_value = self.value
        return updated


def _expression(value: Any, field: models.Field[Any, Any]) -> Any:
    """`value` as an SQL expression of `field`'s type."""
    return value if hasattr(value, "resolve_expression") else Value(value, output_field=field)
