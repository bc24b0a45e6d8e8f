"""The system checks of SequenceField, one id per problem: its name, flow options, format and scope."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core import checks
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models, router

from django_segment_seq.db.columns import concrete_field, in_composite_key
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import (
    DERIVED_MARK,
    NAME_MAX_LENGTH,
    PERIOD_SUFFIX_LENGTH,
    can_carry_period,
    shortest_scoped_name,
    validate_sequence_name,
)
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.fields.disguise_checks import check_digit_errors, conceal_errors
from django_segment_seq.flow.resets import NAMED
from django_segment_seq.flow.scopes import scope_names


class SequenceFieldChecks(SequenceFieldBase):
    """Every check of a sequence field; Django runs them through check() at `manage.py check` and test setup."""

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        return [
            *super().check(**kwargs),
            *self._check_sequence_name(),
            *self._check_format(),
            *self._check_flow_options(),
            *self._check_scope(),
            *check_digit_errors(self),
            *conceal_errors(self),
        ]

    def fields_of_same_sequence(self) -> Iterator[SequenceFieldChecks]:
        """The other fields of installed models that take numbers from this field's sequence."""
        if not hasattr(self, "model"):
            return
        for model in self.model._meta.apps.get_models():
            fields = [field for field in model._meta.local_fields if isinstance(field, SequenceFieldChecks)]
            yield from (field for field in fields if field is not self and field.sequence_name == self.sequence_name)

    def _check_sequence_name(self) -> list[checks.CheckMessage]:
        try:
            validate_sequence_name(self.sequence_name)
        except ValidationError as exc:
            return [
                checks.Error(
                    f"SequenceField sequence_name {self.sequence_name!r} is invalid: {' '.join(exc.messages)}",
                    hint=f"Pass a non-empty string of at most {NAME_MAX_LENGTH} characters as the first argument.",
                    obj=self,
                    id="django_segment_seq.E010",
                )
            ]
        return []

    def _check_flow_options(self) -> list[checks.CheckMessage]:
        return [
            *self._check_reset(),
            *self._check_reset_on(),
            *self._check_fiscal_year_start(),
            *self._check_gapless(),
        ]

    def _check_reset(self) -> list[checks.CheckMessage]:
        """`reset` names a known period or an importable function, has a format to show it in, and room in the name."""
        for check in (
            self._check_reset_known,
            self._check_reset_importable,
            self._check_reset_shown,
            self._check_reset_room,
        ):
            errors = check()
            if errors:
                return errors  # one problem at a time: each later check assumes the earlier ones passed
        return []

    def _check_reset_known(self) -> list[checks.CheckMessage]:
        """A `reset` neither a named period nor a function would be refused at the first save."""
        if self.reset is None or self.reset_rule.is_named or self.reset_rule.is_callable:
            return []
        return [
            checks.Error(
                f"SequenceField reset={self.reset!r} is unknown.",
                hint=f"Use reset=None, {', '.join(repr(name) for name in NAMED)}, "
                "or a function (aware datetime) -> period key.",
                obj=self,
                id="django_segment_seq.E013",
            )
        ]

    def _check_reset_importable(self) -> list[checks.CheckMessage]:
        """A reset function is written to migrations by its import path, so it must have one."""
        import_problem = self.reset_rule.import_problem()
        if not import_problem:
            return []
        return [
            checks.Error(
                f"SequenceField reset={self.reset!r} cannot be written to migrations: {import_problem}",
                hint="Use a function defined at module level, which migrations import by its path.",
                obj=self,
                id="django_segment_seq.E028",
            )
        ]

    def _check_reset_shown(self) -> list[checks.CheckMessage]:
        """An integer field has no text to show a period in, so its periods would repeat numbers."""
        if self.reset is None or self.flow is not None:
            return []
        return [
            checks.Error(
                f"SequenceField reset={self.reset!r} needs a format: an integer field cannot show the period, "
                "so every period would repeat the numbers of the one before.",
                hint='Add a format with the date, e.g. format="{date:%Y%m%d}{value:06d}", or drop reset.',
                obj=self,
                id="django_segment_seq.E014",
            )
        ]

    def _check_reset_room(self) -> list[checks.CheckMessage]:
        """Per-period rows need room for the period in the row name."""
        errors: list[checks.CheckMessage] = []
        if self.reset is not None and isinstance(self.sequence_name, str) and not can_carry_period(self.sequence_name):
            errors.append(
                checks.Error(
                    f"SequenceField sequence_name {self.sequence_name!r} cannot carry a period: per-period rows "
                    f"are named '<sequence_name>{DERIVED_MARK}<period>', which must stay within {NAME_MAX_LENGTH} "
                    "characters.",
                    hint=f"With reset, use a name of at most {NAME_MAX_LENGTH - PERIOD_SUFFIX_LENGTH} characters "
                    f"without {DERIVED_MARK!r}.",
                    obj=self,
                    id="django_segment_seq.E018",
                )
            )
        return errors

    def _check_gapless(self) -> list[checks.CheckMessage]:
        """`gapless` is a bool, used alike by every field of the sequence, with the table in the model's database."""
        errors: list[checks.CheckMessage] = []
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
                id="django_segment_seq.E029",
            )
        ]

    def _check_shared_sequence(self) -> list[checks.CheckMessage]:
        """A gapless sequence also filled by a cached field would get gaps (and vice versa); refuse the mix."""
        if not hasattr(self, "model"):
            return []
        others = [field for field in self.fields_of_same_sequence() if field.gapless is not self.gapless]
        if not others:
            return []
        other = others[0]
        return [
            checks.Error(
                f"Sequence {self.sequence_name!r} is gapless in one field and cached in another "
                f"({other.model._meta.label}.{other.name}): cached ranges would leave gaps in the gapless numbers.",
                hint="Give every field of a gapless sequence gapless=True, or use different sequence names.",
                obj=self,
                id="django_segment_seq.E031",
            )
        ]

    def _check_format(self) -> list[checks.CheckMessage]:
        """A format that parses and writes each number as its own text; only then what it shows and how wide it is."""
        if self.flow is None:
            return []
        errors = self._check_format_parses()
        if errors:
            return errors
        return [
            *self._check_format_value(),
            *self._check_format_period_without_reset(),
            *self._check_format_shows_period(),
            *self._check_instance_paths_and_width(),
        ]

    def _check_format_parses(self) -> list[checks.CheckMessage]:
        """A format parses, and its {value} spec writes no two numbers as one text."""
        fmt = self.flow
        if fmt is None:
            return []
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
        errors += [
            checks.Error(
                f"SequenceField format {fmt.source!r}: {problem}.",
                hint="Use an integer presentation padded with zeros or with a character no number contains, "
                "e.g. {value:06d}, {value:>8} or {value:_<8}.",
                obj=self,
                id="django_segment_seq.E035",
            )
            for problem in fmt.ambiguous
        ]
        return errors

    def _check_format_value(self) -> list[checks.CheckMessage]:
        """Without {value}, every row of a period would get the same text."""
        fmt = self.flow
        if fmt is None or fmt.has_value:
            return []
        return [
            checks.Error(
                f"SequenceField format {fmt.source!r} has no {{value}}, so every row would get the same text.",
                hint='Add the number, e.g. "{value:06d}".',
                obj=self,
                id="django_segment_seq.E012",
            )
        ]

    def _check_format_period_without_reset(self) -> list[checks.CheckMessage]:
        """{period} is the reset period, which a field without reset has none of."""
        fmt = self.flow
        if fmt is None or not fmt.period_specs or self.reset is not None:
            return []
        return [
            checks.Error(
                f"SequenceField format {fmt.source!r} shows {{period}}, but the field has no reset.",
                hint='Add reset, e.g. reset="monthly", or show the date with {date:…} instead.',
                obj=self,
                id="django_segment_seq.E027",
            )
        ]

    def _check_format_shows_period(self) -> list[checks.CheckMessage]:
        """With a reset, the text must tell two periods apart, or a new period repeats the last one's texts."""
        fmt = self.flow
        if fmt is None or not (self.reset_rule.is_named or self.reset_rule.is_callable):
            return []
        problem = fmt.period_problem(self.reset_rule)
        if not problem:
            return []
        return [
            checks.Error(
                f"SequenceField format {fmt.source!r} with reset={self.reset!r}"
                + (f", fiscal_year_start={self.fiscal_year_start}" if self.reset_rule.is_fiscal else "")
                + f": {problem}.",
                hint=f"Put the whole period in the format, e.g. {self._date_hint()}, or reset less often.",
                obj=self,
                id="django_segment_seq.E015",
            )
        ]

    def _check_instance_paths_and_width(self) -> list[checks.CheckMessage]:
        """Every {instance...} names an attribute the model has, and max_length holds the widest text."""
        fmt = self.flow
        if fmt is None:
            return []
        errors: list[checks.CheckMessage] = []
        instance_widths = []
        for path in fmt.instance_paths:
            problem = self._instance_path_problem(path)
            if problem is not None:
                return [problem]
            width = self._instance_width(path)
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
        return DATE_HINTS[self.reset]

    def _instance_path_problem(self, path: str) -> checks.CheckMessage | None:
        """{instance<path>} reads attributes the model has, through forward relations the check can follow."""
        source = self.flow.source if self.flow is not None else None
        if not path.startswith(".") or "[" in path:
            return self._path_error(path, "indexes the instance, which the check cannot follow")
        model: Any = self.model
        names = path[1:].split(".")
        for position, name in enumerate(names):
            last = position == len(names) - 1
            try:
                field = model._meta.get_field(name)
            except FieldDoesNotExist:
                if not hasattr(model, name):
                    return checks.Error(
                        f"SequenceField format {source!r} refers to instance{path}, "
                        f"which {model._meta.label} does not have" + (f" ({name!r})." if position else "."),
                        hint="Use an attribute or field of the model, e.g. {instance.kind}.",
                        obj=self,
                        id="django_segment_seq.E019",
                    )
                if last:
                    return None
                return self._path_error(path, f"reads through {model._meta.label}.{name}, which is not a relation")
            if last:
                return None
            if not isinstance(field, models.ForeignKey):
                return self._path_error(path, f"reads through {model._meta.label}.{name}, which is not a foreign key")
            model = field.related_model
            if not isinstance(model, type):
                return None  # a lazy reference not resolved yet (isolated apps): nothing further to check
        return None  # pragma: no cover - the loop returns at the last name

    def _path_error(self, path: str, why: str) -> checks.CheckMessage:
        source = self.flow.source if self.flow is not None else None
        return checks.Error(
            f"SequenceField format {source!r}: {{instance{path}}} {why}.",
            hint="Read a field of the model, or of a model a ForeignKey or OneToOneField leads to, "
            "e.g. {instance.kind} or {instance.company.code}.",
            obj=self,
            id="django_segment_seq.E034",
        )

    def _instance_width(self, path: str) -> object:
        """The widest text of {instance<path>} when a model field tells it; None when unknown."""
        if "." in path[1:]:
            return None
        try:
            field = self.model._meta.get_field(path[1:])
        except FieldDoesNotExist:
            return None
        if not isinstance(field, models.Field):
            return None  # a reverse relation: no column to measure
        if field.choices:
            return max((len(str(key)) for key, _label in field.flatchoices), default=0)
        if getattr(field, "max_length", None):
            return field.max_length
        return None

    # scope

    def _check_scope(self) -> list[checks.CheckMessage]:
        """`scope`: concrete fields of the model, a name with room for them, the same in every field of the sequence."""
        if self.scope is None:
            return self._check_shared_scope()
        errors = self._check_scope_option()
        if errors or not hasattr(self, "model"):
            return errors
        names = scope_names(self.scope)
        errors = [problem for name in names for problem in self._check_scope_field(name)]
        if errors:
            return errors
        return [
            *self._check_scope_room(names),
            *self._check_scoped_primary_key(),
            *self._check_scope_inside_key(names),
            *self._check_key_scope_set_before_save(names),
            *self._check_shared_scope(),
            *self._check_scoped_unique(names),
        ]

    def _check_scope_option(self) -> list[checks.CheckMessage]:
        scope = self.scope
        if not (
            isinstance(scope, str)
            or (isinstance(scope, (list, tuple)) and scope and all(isinstance(name, str) for name in scope))
        ):
            return [
                checks.Error(
                    f"SequenceField scope={scope!r} must be a field name or a non-empty list of field names.",
                    hint='Name the fields each counter is kept per, e.g. scope=["company"], or drop scope.',
                    obj=self,
                    id="django_segment_seq.E023",
                )
            ]
        names = scope_names(scope)
        if len(set(names)) != len(names):
            return [
                checks.Error(
                    f"SequenceField scope={scope!r} names a field twice.",
                    hint="Name each field once.",
                    obj=self,
                    id="django_segment_seq.E032",
                )
            ]
        return []

    def _check_scope_field(self, name: str) -> list[checks.CheckMessage]:
        """A scope field must be a column of the row, set before the number is taken, with one text per value."""
        label = self.model._meta.label
        try:
            target = self.model._meta.get_field(name)
        except FieldDoesNotExist:
            target = None
        if target is None:
            problem = f"{label} has no field {name!r}"
        elif not getattr(target, "concrete", False) or getattr(target, "many_to_many", False):
            problem = f"{label}.{name} is a {type(target).__name__}, not a column of the row being inserted"
        elif target is self:
            problem = "a field cannot be scoped by itself"
        elif isinstance(target, AUTO_FIELDS):
            problem = f"{label}.{name} is filled by the database at INSERT, after the number is taken"
        elif isinstance(target, TEXTLESS_FIELDS):
            problem = f"{label}.{name} is a {type(target).__name__}, whose values have no single text to name a row by"
        else:
            return []
        return [
            checks.Error(
                f"SequenceField scope names {name!r}: {problem}.",
                hint="Scope by concrete fields of the model set before saving: a ForeignKey (counted by its "
                "id), an integer, text, UUID or date field.",
                obj=self,
                id="django_segment_seq.E033",
            )
        ]

    def _check_scope_room(self, names: tuple[str, ...]) -> list[checks.CheckMessage]:
        sequence_name = self.sequence_name
        if not isinstance(sequence_name, str):
            return []
        shortest = shortest_scoped_name(sequence_name, names, with_period=self.reset is not None)
        if DERIVED_MARK not in sequence_name and shortest <= NAME_MAX_LENGTH:
            return []
        return [
            checks.Error(
                f"SequenceField sequence_name {sequence_name!r} cannot carry scope {self.scope!r}: scope rows are "
                f"named '<sequence_name>{DERIVED_MARK}<field>=<value>,…"
                f"{'/<period>' if self.reset is not None else ''}', "
                f"which must stay within {NAME_MAX_LENGTH} characters (at least {shortest} here).",
                hint=f"Use a shorter sequence name without {DERIVED_MARK!r}, or fewer scope fields.",
                obj=self,
                id="django_segment_seq.E024",
            )
        ]

    def _check_scoped_primary_key(self) -> list[checks.CheckMessage]:
        if self.flow is not None or not self.primary_key:
            return []
        return [
            checks.Error(
                "SequenceField scope on an integer primary key: every scope counts from min_value, so two scopes "
                "would hand out the same key.",
                hint="Keep the primary key unscoped and give the scoped number a field of its own, or make the key "
                "composite: pk = models.CompositePrimaryKey(<the scope fields>, <this field>).",
                obj=self,
                id="django_segment_seq.E026",
            )
        ]

    def _check_scope_inside_key(self, names: tuple[str, ...]) -> list[checks.CheckMessage]:
        """In a composite primary key, the number repeats in every scope, so each scope field must be in the key too."""
        key = self.model._meta.pk
        if not isinstance(key, models.CompositePrimaryKey) or not in_composite_key(self.model, self):
            return []
        outside = tuple(name for name in names if not in_composite_key(self.model, concrete_field(self.model, name)))
        if not outside or self._format_shows_scope(outside):
            return []
        return [
            checks.Error(
                f"SequenceField {self.model._meta.label}.{self.name} is in the primary key {key.field_names!r} but "
                f"scoped by {', '.join(outside)}, which is not: each of its values counts from min_value, so two "
                "rows would get the same key.",
                hint=f"Put {', '.join(outside)} in the CompositePrimaryKey too, or drop it from scope.",
                obj=self,
                id="django_segment_seq.E040",
            )
        ]

    def _check_key_scope_set_before_save(self, names: tuple[str, ...]) -> list[checks.CheckMessage]:
        """Django numbers a composite key before any field's pre_save, so a scope field filled there is still empty."""
        if not in_composite_key(self.model, self):
            return []
        late = [name for name in names if filled_by_pre_save(concrete_field(self.model, name))]
        if not late:
            return []
        return [
            checks.Error(
                f"SequenceField {self.model._meta.label}.{self.name} is in the primary key and scoped by "
                f"{', '.join(late)}, which is only filled at save, after Django numbers the key: every save would "
                "find the scope empty.",
                hint="Scope by fields the instance has before save(): set the date yourself (default=date.today "
                "instead of auto_now_add), or scope by another field.",
                obj=self,
                id="django_segment_seq.E041",
            )
        ]

    def _check_scoped_unique(self, names: tuple[str, ...]) -> list[checks.CheckMessage]:
        if not self.unique or self._format_shows_scope(names):
            return []
        return [
            checks.Warning(
                f"SequenceField {self.model._meta.label}.{self.name} is scoped by {', '.join(names)} and unique=True: "
                "each scope counts from min_value, so the second scope's first number is refused as a duplicate.",
                hint=f"Drop unique=True and add models.UniqueConstraint(fields={[*names, self.name]!r}, ...) "
                "to Meta.constraints (or unique_together).",
                obj=self,
                id="django_segment_seq.W002",
            )
        ]

    def _format_shows_scope(self, names: tuple[str, ...]) -> bool:
        """Whether the field's texts show every scope value ({instance.company…}), so they differ between scopes."""
        paths = self.flow.instance_paths if self.flow is not None else []
        meta = self.model._meta
        shown = set()
        for name in names:
            target = meta.get_field(name)
            for path in paths:
                head = path[1:].split(".", 1)[0].split("[", 1)[0] if path.startswith(".") else ""
                if head in (target.name, getattr(target, "attname", None)):
                    shown.add(name)
        return bool(paths) and shown == set(names)

    def _check_shared_scope(self) -> list[checks.CheckMessage]:
        """Fields of one sequence share its scope, or one field's period rows could take another's scope names."""
        if not hasattr(self, "model"):
            return []
        names = resolved_scope(self.model, self.scope)
        for other in self.fields_of_same_sequence():
            if resolved_scope(other.model, other.scope) != names:
                return [
                    checks.Error(
                        f"Sequence {self.sequence_name!r} is scoped by {', '.join(names) or 'nothing'} here and by "
                        f"{', '.join(resolved_scope(other.model, other.scope)) or 'nothing'} in "
                        f"{other.model._meta.label}.{other.name}.",
                        hint="Give every field of a sequence the same scope, or use different sequence names.",
                        obj=self,
                        id="django_segment_seq.E025",
                    )
                ]
        return []


def resolved_scope(model: type[models.Model], scope: Any) -> tuple[str, ...]:
    """The field names a scope option resolves to ("company_id" is "company"); a malformed one (E023) as it is."""
    try:
        names = [str(name) for name in scope_names(scope)]
    except TypeError:
        return ()
    resolved = []
    for name in names:
        try:
            resolved.append(model._meta.get_field(name).name)
        except FieldDoesNotExist:
            resolved.append(name)
    return tuple(resolved)


def filled_by_pre_save(field: models.Field[Any, Any]) -> bool:
    """Whether `field` gets its value only in pre_save at INSERT: an auto_now(_add) date or time, or a SequenceField."""
    return bool(getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)) or isinstance(
        field, SequenceFieldBase
    )


AUTO_FIELDS = (models.AutoField, models.BigAutoField, models.SmallAutoField)
# 1.0 and 1.00, or equal JSON written two ways, would count in two scopes.
TEXTLESS_FIELDS = (models.FloatField, models.DecimalField, models.BinaryField, models.JSONField)

# A format that shows the whole period of each named reset, for the hint of E015.
DATE_HINTS = {
    "daily": "{date:%Y%m%d}",
    "weekly": "{period} or {date:%G-W%V}",
    "monthly": "{date:%Y%m}",
    "quarterly": "{period}",
    "yearly": "{date:%Y}",
}
