"""void(): record that a number of a series was deliberately not used (a cancelled draft, a spoiled form)."""

from __future__ import annotations

import string
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote

from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError, connections, models, router, transaction

from django_segment_seq.audit.exceptions import (
    AlreadyVoided,
    EmptyReason,
    InvalidVoidOption,
    NeverHandedOut,
    OtherSeries,
    UnknownField,
    UnreadableNumber,
)
from django_segment_seq.audit.models import VoidedNumber
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import PAIR_SEPARATOR, row_name
from django_segment_seq.db.table import Sequence
from django_segment_seq.exceptions import SequenceScopeError
from django_segment_seq.flow import formats as formatting
from django_segment_seq.flow.parsing import FormatParser, UnparseableFormat
from django_segment_seq.flow.rules import NumberRule
from django_segment_seq.flow.texts import TextReader
from django_segment_seq.numbered import NumberedColumn, column_of_label, text_reading

# A scope as void() takes it: the row-name key ("company=42"), or the scope fields' values by field name.
ScopeOption = str | Mapping[str, Any] | None


def void(
    field_label: str,
    number_or_text: int | str,
    reason: str,
    *,
    scope: ScopeOption = None,
    period: str | None = None,
    user: str | None = None,
    using: str | None = None,
    rule: NumberRule | str | None = None,
    scope_from: Mapping[str, str] | None = None,
) -> VoidedNumber:
    """Record that `number_or_text` of the field `field_label` ("shop.Invoice.number") was not used, and why.

    A text is read back with the field's format, exactly as the format writes it (check digits
    included), which also gives its period; a bare number of a field with reset is of `period`, by
    default the current one. `using` is the database of the field's rows; the register lives beside
    the Sequence table. A column that is not a SequenceField (numbers made in code) is read by `rule`, the rule
    that made them (a NumberRule, its import path, or a SequenceField's label), its scope values from the columns
    `scope_from` names (default: the columns of the scopes' names). Raises a VoidError: UnknownField,
    EmptyReason, UnreadableNumber, OtherSeries (a period or scope the text does not show), AlreadyVoided,
    NeverHandedOut, InvalidVoidOption; SequenceScopeError for a missing or unneeded scope.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise EmptyReason(f"{field_label}: give the reason {number_or_text!r} was not used.")
    field = column_of_label(field_label, rule, scope_from=scope_from, error=UnknownField)
    label = field.label
    _check_options(label, user, using)
    number, text, period = _read(field, number_or_text, period)
    scope_text = _scope(field, scope)
    if text and field.flow is not None:
        _scope_agrees(field, text, scope)
    sequence = row_name(field.sequence_name, scope_text, period)
    shown = text or str(number)
    alias = sequence_database()
    register = VoidedNumber._default_manager.using(alias)
    if register.filter(label=label, scope=scope_text or "", period=period or "", number=number).exists():
        raise AlreadyVoided(f"{label}: {shown} is voided already.")
    _check_handed_out(field, number, text, scope_text, sequence, using)
    try:
        with transaction.atomic(using=alias):
            return register.create(
                label=label,
                scope=scope_text or "",
                period=period or "",
                number=number,
                text=text,
                reason=reason.strip(),
                sequence=sequence,
                voided_by=user or "",
            )
    except IntegrityError:
        raise AlreadyVoided(f"{label}: {shown} is voided already.") from None


def _check_handed_out(
    field: NumberedColumn, number: int, text: str, scope: str | None, sequence: str, using: str | None
) -> None:
    """NeverHandedOut unless the row `sequence` has passed the number or a row of the field holds it: only a number
    handed out leaves a gap to record."""
    shown = text or str(number)
    row = Sequence._base_manager.using(sequence_database()).filter(name=sequence).first()
    minimum = row.min_value if row is not None else Sequence._meta.get_field("min_value").get_default()
    if number < minimum:
        raise NeverHandedOut(
            f"{field.label}: {shown} is below the sequence's minimum {minimum}, so it was never handed out."
        )
    handed_out = row is not None and row.value is not None and number <= row.value
    if not handed_out and not _held(field.model, field, number, text, scope, using):
        raise NeverHandedOut(
            f"{field.label}: {shown} was never handed out (sequence {sequence!r} is at "
            f"{'nothing yet' if row is None or row.value is None else row.value}) and no row holds it."
        )


def _check_options(label: str, user: str | None, using: str | None) -> None:
    """InvalidVoidOption for a user the register cannot keep whole or a database alias that does not exist."""
    width = VoidedNumber._meta.get_field("voided_by").max_length or 0
    if user is not None and (not isinstance(user, str) or len(user) > width):
        raise InvalidVoidOption(f"{label}: user must be a text of at most {width} characters, not {user!r:.60}.")
    if using is not None and using not in connections:
        raise InvalidVoidOption(f"{label}: using={using!r} is not a database of DATABASES.")


def _read(field: NumberedColumn, given: int | str, period: str | None) -> tuple[int, str, str | None]:
    """The number, the text (formatted fields, '' for a bare number) and the period `given` names."""
    if not field.is_text:
        if period is not None:
            raise ValueError(f"{field.name} is an integer field, which counts without periods; give no period.")
        if isinstance(given, str) and given.strip().lstrip("-").isdigit():
            given = int(given)
        if isinstance(given, bool) or not isinstance(given, int):
            raise UnreadableNumber(f"{field.name}: {given!r} is not a number.")
        return given, "", None
    if isinstance(given, bool):
        raise UnreadableNumber(f"{field.name}: {given!r} is not a number.")
    if isinstance(given, int):
        if period is None:
            period = field.reset_rule.key(formatting.now())
        elif not field.periodic:
            raise ValueError(f"{field.name} has no reset, so it counts without periods; give no period.")
        return given, "", period
    if not isinstance(given, str):
        raise UnreadableNumber(f"{field.name}: {given!r} is neither a number nor a text.")
    try:
        reader = TextReader(text_reading(field), strict=True)
        reading = reader.read(given)
    except UnparseableFormat as exc:
        raise UnreadableNumber(f"{field.name}: {exc}") from None
    if reading is None and reader.locked is not None:
        raise UnreadableNumber(f"{field.name}: {given!r} cannot be read back: {reader.locked}") from None
    if reading is None:
        flow = text_reading(field).flow
        check = " with its check digits right" if flow.check_digits is not None else ""
        raise UnreadableNumber(
            f"{field.name}: {given!r} is not a text its format {flow.source!r} makes{check} "
            "(each number written as the format writes it)."
        )
    number, read_period = reading
    if period is not None and period != read_period:
        raise OtherSeries(f"{field.name}: {given!r} is of period {read_period!r}, not {period!r}.")
    return number, given, read_period


def _scope(field: NumberedColumn, scope: ScopeOption) -> str | None:
    """The scope key of `scope` for this field; SequenceScopeError when a scoped field has none or another has one."""
    names = field.rule.scope_names
    if not names:
        if scope:
            raise SequenceScopeError(field.sequence_name, "the field is not scoped; give no scope.")
        return None
    if not scope:
        raise SequenceScopeError(field.sequence_name, f"the field is scoped by {', '.join(names)}: give the scope.")
    if isinstance(scope, str):
        return scope
    values = {}
    for name, scope_field in field.scope_columns.items():
        value = scope.get(name, scope.get(scope_field.name, scope.get(scope_field.attname)))
        values[name] = getattr(value, "pk", value)  # a model instance counts by its key
    return field.scope_of(values)


def _scope_agrees(field: NumberedColumn, text: str, scope: ScopeOption) -> None:
    """OtherSeries when the text shows a scope value ({instance.company.code}) that the given scope does not have."""
    parser = FormatParser(field.flow)
    shown = parser.instance_texts(text) or ()
    by_name = {scope_field.name: (name, scope_field) for name, scope_field in field.scope_columns.items()}
    by_name |= {scope_field.attname: (name, scope_field) for name, scope_field in by_name.values()}
    for (path, spec, conversion), seen in zip(parser.instance_fields, shown, strict=False):
        first = path.removeprefix("instance.").split(".", 1)[0].split("[", 1)[0]
        if first not in by_name:
            continue  # not a scope value: nothing to compare the scope with
        instance = _scope_instance(*by_name[first], scope)
        if instance is None:
            continue  # the scope names a row that no longer exists: what the text shows cannot be told
        formatter = string.Formatter()
        try:
            value = formatter.convert_field(formatter.get_field(path, (), {"instance": instance})[0], conversion)
            expected = formatter.format_field(value, spec)
        except (AttributeError, LookupError, TypeError, ValueError, ObjectDoesNotExist):
            continue
        if expected != seen:
            raise OtherSeries(
                f"{field.name}: {text!r} shows {seen!r} for {{{path}}}, but the scope given has {expected!r}: "
                "give the text's own scope."
            )


def _scope_instance(name: str, scope_field: Any, scope: ScopeOption) -> SimpleNamespace | None:
    """A stand-in instance with the value of scope `name` (held by `scope_field`; a foreign key's object loaded), or
    None when unknown."""
    if isinstance(scope, Mapping):
        value = scope.get(name, scope.get(scope_field.name, scope.get(scope_field.attname)))
    else:
        pairs = dict(pair.split("=", 1) for pair in str(scope or "").split(PAIR_SEPARATOR) if "=" in pair)
        value = unquote(pairs.get(name, pairs.get(scope_field.name, ""))) or None
    if value is None:
        return None
    if scope_field.is_relation and not isinstance(value, models.Model):
        value = scope_field.related_model._base_manager.filter(pk=value).first()
        if value is None:
            return None
    if isinstance(value, models.Model) and scope_field.is_relation:
        return SimpleNamespace(**{scope_field.name: value, scope_field.attname: value.pk})
    return SimpleNamespace(**{scope_field.name: value, scope_field.attname: value})


def _held(
    model: type[models.Model],
    field: NumberedColumn,
    number: int,
    text: str,
    scope: str | None,
    using: str | None,
) -> bool:
    """Whether a row of the field holds the number (a formatted field: the text) in this scope."""
    if field.is_text and not text:
        return False  # a bare number of a formatted field is no stored text
    manager = model._base_manager.db_manager(using or router.db_for_read(model))
    rows = manager.filter(**{field.name: text if text else number})
    attnames = field.scope_attnames
    if not attnames:
        return rows.exists()
    for values in rows.values_list(*attnames)[:100]:
        try:
            if field.scope_of(field.row_values(tuple(values))) == scope:
                return True
        except SequenceScopeError:
            continue
    return False
