"""A column and the rule its numbers were made by: a SequenceField with its own rule, or a plain column numbered in
code (next_text) by a NumberRule named by its import path or by the label of a SequenceField it is shared with.

Seeding (sync), the gap report, back-fill and void() read a column through this, so a column filled by code gets
what a field gets. Each scope value of a row comes from a column of the model: one named for it (`scope_from`),
else the column of the scope's own name (or attname).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, cast

from django.apps import apps
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.utils.module_loading import import_string

from django_segment_seq.db.columns import concrete_field
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.fields.labels import UnknownFieldLabel, model_and_name, sequence_field, sequence_fields
from django_segment_seq.flow import rules as rules_module
from django_segment_seq.flow.formats import FlowFormat
from django_segment_seq.flow.rules import NumberRule
from django_segment_seq.flow.scopes import scope_key, scope_names

__all__ = [
    "NumberedColumn",
    "column_of_label",
    "find_rule",
    "numbered_column",
    "rules_of_sequence",
    "scope_fields",
    "stored_column",
    "text_reading",
]


def find_rule(reference: NumberRule | str) -> tuple[NumberRule, SequenceFieldBase | None]:
    """The rule `reference` names (a NumberRule, the import path of one, or a SequenceField's label) and the field it
    belongs to when a label named it; ValueError saying why a reference names none."""
    if isinstance(reference, NumberRule):
        return reference, None
    if not isinstance(reference, str) or not reference:
        raise ValueError(f"rule {reference!r}: give a NumberRule's import path (module.RULE) or a field's label.")
    parts = reference.split(".")
    if len(parts) == 3:
        try:
            model = apps.get_model(parts[0], parts[1])
        except LookupError:
            model = None
        if model is not None:
            try:
                found = model._meta.get_field(parts[2])
            except FieldDoesNotExist:
                raise ValueError(f"rule {reference!r}: {model._meta.label} has no field {parts[2]!r}.") from None
            if not isinstance(found, SequenceFieldBase):
                raise ValueError(
                    f"rule {reference!r} is a {type(found).__name__}, not a SequenceField: name the field the rule "
                    "is shared with, or the rule's import path (module.RULE)."
                )
            return found.rule, found
    try:
        rule = import_string(reference)
    except ImportError as exc:
        raise ValueError(
            f"rule {reference!r} names neither a SequenceField (APP_LABEL.Model.field) nor an importable "
            f"NumberRule: {exc}"
        ) from None
    if not isinstance(rule, NumberRule):
        raise ValueError(f"rule {reference!r} is a {type(rule).__name__}, not a NumberRule.")
    if rule.problems:
        raise ValueError(f"rule {reference!r} cannot make numbers: {'; '.join(rule.problems)}.")
    return rule, None


def rules_of_sequence(sequence_name: str) -> dict[str, NumberRule]:
    """The rules known to number `sequence_name`, by how they are named (a field's label, a rule's import path): the
    SequenceFields declared with it, and the NumberRules the modules loaded hold at their top level, where code
    keeps the rule it passes to next_text(). What numbers the sequence when no rule is named."""
    found = {
        f"{model._meta.label}.{field.name}": field.rule
        for model, field in sequence_fields()
        if field.sequence_name == sequence_name
    }
    seen = {id(rule) for rule in found.values()}
    for module_name, module in _rule_modules():
        try:
            attributes = list(vars(module).items())
        except TypeError:  # a module object without a __dict__
            continue
        for attribute, value in attributes:
            if isinstance(value, NumberRule) and value.sequence_name == sequence_name and id(value) not in seen:
                seen.add(id(value))
                found[f"{module_name}.{attribute}"] = value
    return found


def _rule_modules() -> list[tuple[str, Any]]:
    """The modules to look for rules in: those flow.rules saw rules made in at their top level, when it records
    them, else every module loaded, each in name order."""
    made_in: Any = getattr(rules_module, "rules_made_in_code", None)
    if made_in is not None:
        names = sorted({name for _rule, name in made_in()})
        return [(name, sys.modules[name]) for name in names if name in sys.modules]
    return sorted(sys.modules.items())


@dataclass(frozen=True)
class NumberedColumn:
    """A model's column and the rule that numbers it; `scope_columns` maps each scope name the rows hold a value of
    to its model field. The attributes the audit code reads of a field (name, flow, reset_rule, ...) are the
    column's and the rule's."""

    model: type[models.Model]
    column: models.Field[Any, Any]
    rule: NumberRule
    sequence_field: SequenceFieldBase | None = None  # the column itself, when it is a SequenceField
    scope_columns: dict[str, models.Field[Any, Any]] = dataclasses.field(default_factory=dict)
    rule_label: str = ""  # how the rule was named, for messages ("" for a field's own rule)

    @property
    def name(self) -> str:
        return self.column.name

    @property
    def attname(self) -> str:
        return self.column.attname

    @property
    def label(self) -> str:
        return f"{self.model._meta.label}.{self.column.name}"

    @property
    def sequence_name(self) -> str:
        return self.rule.sequence_name

    @property
    def scope(self) -> Any:
        return self.rule.scope

    @property
    def flow(self) -> Any:
        return self.rule.flow

    @property
    def reset_rule(self) -> Any:
        return self.rule.reset_rule

    @property
    def gapless(self) -> bool:
        return self.rule.gapless is True

    @property
    def periodic(self) -> bool:
        return bool(self.reset_rule.is_named or self.reset_rule.is_callable)

    @property
    def is_text(self) -> bool:
        """Whether the column holds texts (a formatted field's, or a text column's) rather than integers."""
        return isinstance(self.column, (models.CharField, models.TextField))

    @property
    def scope_attnames(self) -> list[str]:
        return [column.attname for column in self.scope_columns.values()]

    def scope_of(self, values: Mapping[str, Any]) -> str | None:
        """The scope key of one row from its scope values by scope name; SequenceScopeError for an empty value."""
        if self.sequence_field is not None:
            by_attname = {self.scope_columns[name].attname: value for name, value in values.items()}
            return scope_key(self.sequence_field, cast(models.Model, SimpleNamespace(**by_attname)))
        return self.rule.scope_key(values)

    def row_values(self, attname_values: tuple[Any, ...]) -> dict[str, Any]:
        """A row's scope values by scope name, from the values of scope_attnames in that order."""
        return dict(zip(self.scope_columns, attname_values, strict=True))


def numbered_column(
    model: type[models.Model],
    field_name: str,
    rule: NumberRule | str | None = None,
    *,
    scope_from: Mapping[str, str] | None = None,
    shown: frozenset[str] = frozenset(),
) -> NumberedColumn:
    """The column `field_name` of `model` and its rule: the field's own when it is a SequenceField, else `rule`.

    Each scope name not in `shown` (the names its texts show) takes its values from the column `scope_from` names for
    it, else from the model's field of that name or attname. ValueError for a column without a rule, a rule given
    for a SequenceField, or a scope no column holds.
    """
    label = f"{model._meta.label}.{field_name}"
    column = stored_column(model, field_name)
    if isinstance(column, SequenceFieldBase):
        if rule is not None:
            raise ValueError(f"{label} is a SequenceField, numbered by its own rule: give no rule.")
        if scope_from:
            raise ValueError(f"{label} is a SequenceField, whose scope fields hold its scope: give no --scope-from.")
        columns = dict(zip(column.rule.scope_names, scope_fields(model, column), strict=True))
        return NumberedColumn(model, column, column.rule, column, columns)
    if rule is None:
        raise ValueError(
            f"{label} is a {type(column).__name__}, not a SequenceField: name the rule its numbers were made by "
            "(--rule module.RULE, or the label of a SequenceField the rule is shared with)."
        )
    if not isinstance(column, (models.IntegerField, models.CharField, models.TextField)):
        raise ValueError(f"{label} is a {type(column).__name__}: numbers are read from an integer or a text column.")
    found, _owner = find_rule(rule)
    rule_label = rule if isinstance(rule, str) else found.sequence_name
    columns = _scope_columns(model, label, found, dict(scope_from or {}), shown)
    return NumberedColumn(model, column, found, None, columns, rule_label)


def stored_column(model: type[models.Model], field_name: str) -> models.Field[Any, Any]:
    """The concrete field `field_name` of `model`; ValueError for a name the model lacks or a field with no column,
    which hold no numbers to read."""
    try:
        column = model._meta.get_field(field_name)
    except FieldDoesNotExist:
        raise ValueError(f"{model._meta.label} has no field {field_name!r}.") from None
    if not isinstance(column, models.Field) or not column.concrete:
        raise ValueError(f"{model._meta.label}.{field_name} is not a column of the table.")
    return column


def _scope_columns(
    model: type[models.Model], label: str, rule: NumberRule, given: dict[str, str], shown: frozenset[str]
) -> dict[str, models.Field[Any, Any]]:
    """The column of `model` holding each scope of `rule` that the texts do not show (`shown`): the one `given` names
    for it, else the column of its name. A row's counter is found only when every scope value is, so ValueError for
    a given name the rule lacks or a column the model lacks, and MissingScope for a scope nothing holds."""
    unknown = sorted(set(given) - set(rule.scope_names))
    if unknown:
        wanted = ", ".join(rule.scope_names) or "none"
        raise ValueError(
            f"--scope-from names {', '.join(unknown)}, which the rule does not scope by (its scope: {wanted})."
        )
    columns: dict[str, models.Field[Any, Any]] = {}
    missing = []
    for name in rule.scope_names:
        if name in shown and name not in given:
            continue
        source = given.get(name, name)
        holder = _model_column(model, source)
        if holder is None:
            if name in given:
                raise ValueError(f"--scope-from {name}={source}: {model._meta.label} has no column {source!r}.")
            missing.append(name)
            continue
        columns[name] = holder
    if missing:
        raise MissingScope(label, rule, missing)
    return columns


class MissingScope(ValueError):
    """A scope of the rule that neither the texts show nor a column of the model holds."""

    def __init__(self, label: str, rule: NumberRule, names: list[str], hint: str = "") -> None:
        self.label, self.rule, self.names = label, rule, names
        missing = ", ".join(names)
        super().__init__(
            f"{label}: sequence {rule.sequence_name!r} counts in a row per {', '.join(rule.scope_names)} "
            f"({rule.sequence_name}@{','.join(f'{name}=…' for name in rule.scope_names)}"
            + ("/PERIOD" if rule.reset_rule.is_named or rule.reset_rule.is_callable else "")
            + f"), and neither the stored texts nor a column of the model named so give {missing}."
            + (f" {hint}" if hint else "")
        )


def _model_column(model: type[models.Model], name: str) -> models.Field[Any, Any] | None:
    """The concrete field of `model` named `name` (or whose attname it is), or None."""
    for candidate in model._meta.concrete_fields:
        if name in (candidate.name, candidate.attname):
            return candidate
    return None


def scope_fields(model: type[models.Model], field: SequenceFieldBase) -> list[models.Field[Any, Any]]:
    """The model fields `field` is scoped by, in the order that names its rows."""
    return [concrete_field(model, name) for name in scope_names(field.scope)]


def column_of_label(
    label: str,
    rule: NumberRule | str | None = None,
    *,
    scope_from: Mapping[str, str] | None = None,
    error: type[UnknownFieldLabel] = UnknownFieldLabel,
) -> NumberedColumn:
    """The numbered column `label` ("shop.Invoice.number") names: a SequenceField, or with `rule` a plain column
    that rule numbers. `error` (UnknownFieldLabel or a subclass of the caller's) for a bad label, a plain column
    without a rule, or a rule that does not fit the column."""
    model, field_name = model_and_name(label, error)
    if rule is None:
        try:
            sequence_field(model, field_name, error)
        except UnknownFieldLabel as exc:
            hint = " Give the rule its numbers were made by (--rule module.RULE, or a field's label it is shared with)."
            raise error(f"{exc}{hint if 'not a SequenceField' in str(exc) else ''}") from None
    try:
        column = numbered_column(model, field_name, rule, scope_from=scope_from)
    except ValueError as exc:
        raise error(str(exc)) from None
    if not column.is_text and column.flow is not None and column.sequence_field is None:
        raise error(f"{label} holds integers, and the rule {column.rule_label} makes texts by its format.")
    return column


class _Whole:
    """The reading of a text column whose rule has no format: each text a whole decimal number, counted without
    periods (what TextReader reads through `flow` and `reset_rule`)."""

    def __init__(self, rule: NumberRule) -> None:
        self.flow = FlowFormat("{value}")
        self.reset_rule = rule.reset_rule


def text_reading(column: NumberedColumn) -> Any:
    """What reads the column's texts (anything with `flow` and `reset_rule`, as TextReader takes): the column's
    rule, or whole numbers for a rule without a format."""
    return column if column.flow is not None else _Whole(column.rule)
