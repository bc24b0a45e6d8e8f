"""SequenceField: a model field filled from a named sequence when its row is first inserted, as a number or as text."""

from __future__ import annotations

from collections.abc import Sequence as SequenceOf
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.core import checks
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from django_segment_seq.api import next_value
from django_segment_seq.fields.managers import number_bulk_create_in_one_allocation  # noqa: F401 - connects it to class_prepared
from django_segment_seq.flow import formats as formatting
from django_segment_seq.flow.formats import PERIOD_SUFFIX_LENGTH, FlowFormat
from django_segment_seq.flow.resets import NAMED, Reset, ResetOption

if TYPE_CHECKING:
    from django.db.models.expressions import Combinable

    # The stubs' value types, plus None: an empty field is filled at save.
    _MixinBase = models.Field[Any, Any]
    _IntegerBase = models.BigIntegerField[float | int | str | Combinable | None, int]
    _TextBase = models.CharField[str | int | Combinable | None, str]
else:
    _MixinBase = object  # the mixin is only ever combined with a Field
    _IntegerBase = models.BigIntegerField
    _TextBase = models.CharField


def filled_at_save() -> None:
    """The default of a primary-key SequenceField: nothing until save() takes a number."""
    return None


class _SequenceFieldMixin(_MixinBase):
    """What the integer and the formatted field share: the sequence name, the flow options and their checks."""

    sequence_name: str
    reset: Any
    reset_on: Any
    fiscal_year_start: Any
    gapless: Any
    scope: Any

    def _setup(
        self,
        sequence_name: str,
        reset: Any,
        gapless: Any,
        kwargs: dict[str, Any],
        reset_on: Any = None,
        fiscal_year_start: Any = None,
        scope: Any = None,
    ) -> None:
        self.sequence_name = sequence_name
        self.scope = scope
        self.reset = reset
        self.reset_on = reset_on
        self.fiscal_year_start = fiscal_year_start
        self.reset_rule = Reset(reset, fiscal_year_start)
        self.gapless = gapless
        kwargs.setdefault("blank", True)
        # Like AutoField, out of forms unless asked for: a number typed in a form collides with a later one.
        kwargs.setdefault("editable", False)
        if kwargs.get("primary_key") and "default" not in kwargs:
            # A primary key with a default makes save() INSERT at once instead of trying an UPDATE first.
            kwargs["default"] = filled_at_save

    def _deconstruct_common(self, kwargs: dict[str, Any]) -> None:
        if kwargs.get("blank") is True:
            del kwargs["blank"]
        else:
            kwargs["blank"] = False
        # editable=False is this field's default, so migrations written before it was stay unchanged.
        if kwargs.pop("editable", True):
            kwargs["editable"] = True
        if kwargs.get("default") is filled_at_save:
            del kwargs["default"]
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

    def _check_sequence_name(self) -> list[checks.CheckMessage]:
        from django_segment_seq.models import validate_sequence_name

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

    def _check_flow_options(self, fmt: FlowFormat | None) -> list[checks.CheckMessage]:
        errors: list[checks.CheckMessage] = []
        import_problem = self.reset_rule.import_problem()
        if self.reset is not None and not (self.reset_rule.is_named or self.reset_rule.is_callable):
            errors.append(
                checks.Error(
                    f"SequenceField reset={self.reset!r} is unknown.",
                    hint=f"Use reset=None, {', '.join(repr(name) for name in NAMED)}, "
                    "or a function (aware datetime) -> period key.",
                    obj=self,
                    id="django_segment_seq.E013",
                )
            )
        elif import_problem:
            errors.append(
                checks.Error(
                    f"SequenceField reset={self.reset!r} cannot be written to migrations: {import_problem}",
                    hint="Use a function defined at module level, which migrations import by its path.",
                    obj=self,
                    id="django_segment_seq.E013",
                )
            )
        elif self.reset is not None and fmt is None:
            errors.append(
                checks.Error(
                    f"SequenceField reset={self.reset!r} needs a format: an integer field cannot show the period, "
                    "so every period would repeat the numbers of the one before.",
                    hint='Add a format with the date, e.g. format="{date:%Y%m%d}{value:06d}", or drop reset.',
                    obj=self,
                    id="django_segment_seq.E014",
                )
            )
        elif (
            self.reset is not None
            and isinstance(self.sequence_name, str)
            and (len(self.sequence_name) + PERIOD_SUFFIX_LENGTH > 100 or "@" in self.sequence_name)
        ):
            errors.append(
                checks.Error(
                    f"SequenceField sequence_name {self.sequence_name!r} cannot carry a period: per-period rows "
                    f"are named '<sequence_name>@<period>', which must stay within 100 characters.",
                    hint=f"With reset, use a name of at most {100 - PERIOD_SUFFIX_LENGTH} characters without '@'.",
                    obj=self,
                    id="django_segment_seq.E018",
                )
            )
        errors += self._check_reset_on()
        errors += self._check_fiscal_year_start()
        if not isinstance(self.gapless, bool):
            errors.append(
                checks.Error(
                    f"SequenceField gapless={self.gapless!r} must be True or False.",
                    hint="Pass gapless=True for numbers without gaps, or leave it out.",
                    obj=self,
                    id="django_segment_seq.E017",
                )
            )
        else:
            errors += self._check_shared_sequence()
            if self.gapless:
                errors += self._check_gapless_database()
        return errors

    def _check_reset_on(self) -> list[checks.CheckMessage]:
        """reset_on must name a date or datetime field of the model, and only makes sense with reset."""
        if self.reset_on is None:
            return []
        if self.reset is None:
            return [
                checks.Error(
                    f"SequenceField reset_on={self.reset_on!r} has no reset to choose the period of.",
                    hint='Add reset, e.g. reset="monthly", or drop reset_on.',
                    obj=self,
                    id="django_segment_seq.E021",
                )
            ]
        if not hasattr(self, "model"):
            return []
        try:
            field = self.model._meta.get_field(self.reset_on) if isinstance(self.reset_on, str) else None
        except FieldDoesNotExist:
            field = None
        if isinstance(field, models.DateField) and field.concrete:  # DateTimeField is a DateField
            return []
        what = "has no such field" if field is None else f"has it as a {type(field).__name__}"
        return [
            checks.Error(
                f"SequenceField reset_on={self.reset_on!r} must name a DateField or DateTimeField of "
                f"{self.model._meta.label}, which {what}.",
                hint='Name the model\'s own date of the record, e.g. reset_on="issued_on".',
                obj=self,
                id="django_segment_seq.E020",
            )
        ]

    def _check_fiscal_year_start(self) -> list[checks.CheckMessage]:
        """A fiscal year starts in a month of the year, and only yearly resets have one."""
        start = self.fiscal_year_start
        if start is None:
            return []
        if self.reset_rule.start_problem:
            problem = f"{self.reset_rule.start_problem}."
        elif self.reset != "yearly":
            problem = f'fiscal_year_start={start!r} needs reset="yearly", not reset={self.reset!r}.'
        else:
            return []
        return [
            checks.Error(
                f"SequenceField {problem}",
                hint='Use reset="yearly" with fiscal_year_start=1..12 (4 for a year from April), or drop it.',
                obj=self,
                id="django_segment_seq.E022",
            )
        ]

    def _check_gapless_database(self) -> list[checks.CheckMessage]:
        """The row lock must be taken in the transaction that saves the model, so both must share a database."""
        from django.db import router

        from django_segment_seq.db.routing import sequence_database

        if not hasattr(self, "model"):
            return []
        model_alias, sequence_alias = router.db_for_write(self.model), sequence_database()
        if model_alias == sequence_alias:
            return []
        return [
            checks.Error(
                f"SequenceField gapless=True on {self.model._meta.label} cannot lock its number in the model's "
                f"transaction: the model is saved to database {model_alias!r}, the Sequence table is in "
                f"{sequence_alias!r}.",
                hint="Keep the Sequence table in the model's database (SEGMENT_SEQ['DATABASE'], routers), "
                "or drop gapless=True.",
                obj=self,
                id="django_segment_seq.E017",
            )
        ]

    def _check_shared_sequence(self) -> list[checks.CheckMessage]:
        """A gapless sequence also filled by a cached field would get gaps (and vice versa); refuse the mix."""
        if not hasattr(self, "model"):
            return []
        others = [
            field
            for model in self.model._meta.apps.get_models()
            for field in model._meta.local_fields
            if isinstance(field, _SequenceFieldMixin)
            and field is not self
            and field.sequence_name == self.sequence_name
            and field.gapless is not self.gapless
        ]
        if not others:
            return []
        other = others[0]
        return [
            checks.Error(
                f"Sequence {self.sequence_name!r} is gapless in one field and cached in another "
                f"({other.model._meta.label}.{other.name}): cached ranges would leave gaps in the gapless numbers.",
                hint="Give every field of a gapless sequence gapless=True, or use different sequence names.",
                obj=self,
                id="django_segment_seq.E017",
            )
        ]


class SequenceField(_SequenceFieldMixin, _IntegerBase):
    """A BigIntegerField whose value, when left empty, is taken from a sequence at INSERT time.

    A value assigned by the caller is stored as given, and updates never touch it. With
    format=..., SequenceField(...) builds a FormattedSequenceField (a CharField) instead.
    """

    description = _("Number from a named sequence")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls is SequenceField and kwargs.get("format") is not None:
            return FormattedSequenceField(*args, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        sequence_name: str,
        *args: Any,
        reset: ResetOption = None,
        reset_on: str | None = None,
        fiscal_year_start: int | None = None,
        gapless: bool = False,
        scope: str | list[str] | tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.pop("format", None)  # None here: a format makes __new__ build a FormattedSequenceField
        self._setup(sequence_name, reset, gapless, kwargs, reset_on, fiscal_year_start, scope)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[str, str, SequenceOf[Any], dict[str, Any]]:
        name, _path, args, kwargs = super().deconstruct()
        self._deconstruct_common(kwargs)
        return name, "django_segment_seq.fields.SequenceField", args, kwargs

    def _take(self, instance: models.Model | None = None) -> int:
        if self.gapless or self.scope:
            from django_segment_seq.flow.derived import take
            from django_segment_seq.flow.scopes import scope_key

            scope = None if instance is None else scope_key(self, instance)
            return take(self.sequence_name, int, gapless=self.gapless is True, scope=scope)
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

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        from django_segment_seq.checks import check_scope

        return [
            *super().check(**kwargs),
            *self._check_sequence_name(),
            *self._check_flow_options(None),
            *check_scope(self),
        ]


class FormattedSequenceField(_SequenceFieldMixin, _TextBase):
    """A CharField holding a flow number ("OD20261122000123"): a sequence number rendered by a format.

    With reset, each day, week, month, quarter, (fiscal) year or callable-defined period counts from
    the sequence's minimum in its own row, the period of the instance's reset_on date when it has
    one; a zero-padded width caps the count; with gapless, numbers are taken under a row lock.
    """

    description = _("Formatted number from a named sequence")

    def __init__(
        self,
        sequence_name: str,
        *args: Any,
        format: formatting.Format,
        reset: ResetOption = None,
        reset_on: str | None = None,
        fiscal_year_start: int | None = None,
        gapless: bool = False,
        scope: str | list[str] | tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> None:
        self.format = format
        self.flow = FlowFormat(format)
        self._setup(sequence_name, reset, gapless, kwargs, reset_on, fiscal_year_start, scope)
        kwargs.setdefault("max_length", self.flow.default_max_length(self.reset_rule))
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[str, str, SequenceOf[Any], dict[str, Any]]:
        name, _path, args, kwargs = super().deconstruct()
        self._deconstruct_common(kwargs)
        kwargs["format"] = self.format
        return name, "django_segment_seq.fields.SequenceField", args, kwargs

    def _take(self, instance: models.Model) -> str:
        from django_segment_seq.flow.derived import take
        from django_segment_seq.flow.scopes import scope_key
        from django_segment_seq.models import NAME_MAX_LENGTH

        moment = self.instant(instance)
        period = self.reset_rule.key(moment)
        if period is not None and len(self.sequence_name) + 1 + len(period) > NAME_MAX_LENGTH:
            raise ValueError(
                f"Sequence {self.sequence_name!r}: period {period!r} makes the row name "
                f"'{self.sequence_name}@{period}' longer than {NAME_MAX_LENGTH} characters. Shorten the sequence name."
            )

        def render(value: int) -> str:
            text = self.flow.render(value, instance, moment, period)
            if self.max_length is not None and len(text) > self.max_length:
                raise ValueError(
                    f"{self.model._meta.label}.{self.name}: {text!r} is {len(text)} characters long, "
                    f"more than max_length={self.max_length}. Raise max_length."
                )
            return text

        return take(
            self.sequence_name,
            render,
            period=period,
            cap=self.flow.cap,
            gapless=self.gapless is True,
            scope=scope_key(self, instance),
        )

    def instant(self, instance: models.Model) -> datetime:
        """The one instant that picks the period and fills {date}: the record's reset_on date, else now."""
        if self.reset_on is None:
            return formatting.now()
        from django_segment_seq.models import concrete_field

        field = concrete_field(self.model, self.reset_on)  # a DateField or DateTimeField, as E020 checks
        value = getattr(instance, field.attname)
        if value in (None, ""):
            return formatting.now()
        if isinstance(value, str):
            value = field.to_python(value)
        return formatting.instant_of(value)

    def get_pk_value_on_save(self, instance: models.Model) -> str:
        """Number a new primary key before Django decides between INSERT and UPDATE, and before bulk_create."""
        return self._take(instance)

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = getattr(model_instance, self.attname)
        if add and value in (None, ""):
            value = self._take(model_instance)
            setattr(model_instance, self.attname, value)
        return value

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        from django_segment_seq.checks import check_scope

        return [
            *super().check(**kwargs),
            *self._check_sequence_name(),
            *self._check_format(),
            *self._check_flow_options(self.flow),
            *check_scope(self),
        ]

    def _check_format(self) -> list[checks.CheckMessage]:
        fmt = self.flow
        errors: list[checks.CheckMessage] = [
            checks.Error(
                f"SequenceField format is invalid: {problem}.",
                hint="Use placeholders {value[:int spec]}, {date[:strftime spec]}, {period} and "
                '{instance.<attribute>}, e.g. format="OD{date:%Y%m%d}{value:06d}", or a callable '
                "(value, instance, now) -> str.",
                obj=self,
                id="django_segment_seq.E011",
            )
            for problem in fmt.problems
        ]
        if errors:
            return errors
        if not fmt.has_value:
            errors.append(
                checks.Error(
                    f"SequenceField format {fmt.source!r} has no {{value}}, so every row would get the same text.",
                    hint='Add the number, e.g. "{value:06d}".',
                    obj=self,
                    id="django_segment_seq.E012",
                )
            )
        if fmt.period_specs and self.reset is None:
            errors.append(
                checks.Error(
                    f"SequenceField format {fmt.source!r} shows {{period}}, but the field has no reset.",
                    hint='Add reset, e.g. reset="monthly", or show the date with {date:…} instead.',
                    obj=self,
                    id="django_segment_seq.E011",
                )
            )
        if self.reset_rule.is_named or self.reset_rule.is_callable:
            problem = fmt.period_problem(self.reset_rule)
            if problem:
                errors.append(
                    checks.Error(
                        f"SequenceField format {fmt.source!r} with reset={self.reset!r}"
                        + (f", fiscal_year_start={self.fiscal_year_start}" if self.reset_rule.is_fiscal else "")
                        + f": {problem}.",
                        hint=f"Put the whole period in the format, e.g. {self._date_hint()}, or reset less often.",
                        obj=self,
                        id="django_segment_seq.E015",
                    )
                )
        instance_widths = []
        for path in fmt.instance_paths:
            width = self._instance_width(path)
            if width is _UNKNOWN_ATTRIBUTE:
                errors.append(
                    checks.Error(
                        f"SequenceField format {fmt.source!r} refers to instance{path}, "
                        f"which {self.model._meta.label} does not have.",
                        hint="Use an attribute or field of the model, e.g. {instance.kind}.",
                        obj=self,
                        id="django_segment_seq.E019",
                    )
                )
                return errors
            instance_widths.append(width if isinstance(width, int) else 0)
        widest = fmt.widest(instance_widths, self.reset_rule)
        if widest is not None and self.max_length is not None and widest > self.max_length:
            errors.append(
                checks.Error(
                    f"SequenceField max_length={self.max_length} is too short for format {fmt.source!r}, "
                    f"whose widest text is {widest} characters.",
                    hint=f"Set max_length={widest} or more, or narrow the format.",
                    obj=self,
                    id="django_segment_seq.E016",
                )
            )
        return errors

    def _date_hint(self) -> str:
        if self.reset_rule.is_fiscal or not self.reset_rule.is_named:
            return "{period}"
        return _DATE_HINT[self.reset]

    def _instance_width(self, path: str) -> object:
        """The widest text of {instance<path>} when a model field tells it; None when unknown."""
        if not path.startswith(".") or "." in path[1:] or "[" in path:
            return None
        attribute = path[1:]
        try:
            field = self.model._meta.get_field(attribute)
        except FieldDoesNotExist:
            return None if hasattr(self.model, attribute) else _UNKNOWN_ATTRIBUTE
        if not isinstance(field, models.Field):
            return None  # a reverse relation: no column to measure
        if field.choices:
            return max((len(str(key)) for key, _label in field.flatchoices), default=0)
        if getattr(field, "max_length", None):
            return field.max_length
        return None


_UNKNOWN_ATTRIBUTE = object()
_DATE_HINT = {
    "daily": "{date:%Y%m%d}",
    "weekly": "{period} or {date:%G-W%V}",
    "monthly": "{date:%Y%m}",
    "quarterly": "{period}",
    "yearly": "{date:%Y}",
}
