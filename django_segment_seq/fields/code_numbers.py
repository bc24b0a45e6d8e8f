"""Numbers made in code, before any row exists (an order number shown before payment): next_text() makes the text a
SequenceField would make, by a NumberRule or by the rule of a field named by its label."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from django_segment_seq.db.routing import sequence_database
from django_segment_seq.fields.base import SequenceFieldBase
from django_segment_seq.fields.labels import field_of
from django_segment_seq.fields.sequence import FormattedSequenceField
from django_segment_seq.flow import formats as formatting
from django_segment_seq.flow import key_ledger
from django_segment_seq.flow.rules import NumberRule

__all__ = ["next_text", "next_texts"]

# (alias, sequence name, format) of concealed rules made in code whose key this process has recorded.
_recorded: set[tuple[str, str, str]] = set()


def next_text(
    rule: NumberRule | str,
    *,
    scope: Mapping[str, Any] | None = None,
    at: date | datetime | None = None,
    instance: Any = None,
    using: str | None = None,
) -> str:
    """The next number of `rule` as text: a NumberRule, or a field's label ("shop.Order.number") for that field's
    rule, the very text the field would have made in the same scope and period.

    `scope` gives the value of each scope name ({"site": 3}; a model instance counts by its primary key); `at` picks
    the period and fills {date} (default: now); `instance` fills {instance.…} and, with a label, may stand for the
    unsaved row: its scope fields and reset_on date are read as the field reads them. A rule without a format gives
    its number's decimal text.
    """
    found, field = _rule_and_field(rule)
    flow = found.flow
    if flow is not None and flow.instance_paths and instance is None:
        raise ValueError(
            f"Sequence {found.sequence_name!r}: the format {flow.source!r} shows {{instance{flow.instance_paths[0]}}}: "
            "pass instance= with that attribute."
        )
    key = _scope_key(found, field, scope, instance)
    if flow is None:
        return str(found.number(scope=key, moment=_moment(field, at, instance), using=using))
    if field is None and flow.concealment is not None:
        _record_key(found, using)
    record = instance if instance is not None else dict(scope or {})  # what a fiscal year from the record reads
    return found.text(moment=_moment(field, at, instance), scope=key, instance=instance, record=record, using=using)


def next_texts(rule: NumberRule | str, count: int, **options: Any) -> list[str]:
    """`count` texts of next_text(rule, **options), in the order they were taken."""
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"count must be a positive int, not {count!r}")
    return [next_text(rule, **options) for _ in range(count)]


def _rule_and_field(rule: NumberRule | str) -> tuple[NumberRule, SequenceFieldBase | None]:
    """The rule asked for, checked when made in code, and the field it belongs to when a label named it."""
    if isinstance(rule, NumberRule):
        rule.require_valid()
        return rule, None
    if isinstance(rule, str):
        _model, field = field_of(rule)
        return field.rule, field
    raise TypeError(f"expected a NumberRule or a field label such as 'shop.Order.number', not {type(rule).__name__}")


def _scope_key(
    rule: NumberRule, field: SequenceFieldBase | None, values: Mapping[str, Any] | None, instance: Any
) -> str | None:
    """The encoded scope of the counter, as the rule names it: from `values`, or from a field's unsaved `instance`."""
    if field is not None and values is None and isinstance(instance, field.model):
        return rule.scope_key_of(instance)
    return rule.scope_key(values)


def _moment(field: SequenceFieldBase | None, at: date | datetime | None, instance: Any) -> datetime:
    """The instant that picks the period: `at`, else the reset_on date of a field's unsaved instance, else now."""
    if at is not None:
        return formatting.instant_of(at)
    if isinstance(field, FormattedSequenceField) and isinstance(instance, field.model):
        return field.instant(instance)
    return formatting.now()


def _record_key(rule: NumberRule, using: str | None) -> None:
    """Record a concealed rule's format with the key it is made under, once per process, as migrate records a
    field's: a later key change with the same format is then refused instead of repeating texts."""
    alias = sequence_database(using)
    source = str(rule.flow.source) if rule.flow is not None else ""
    if (alias, rule.sequence_name, source) not in _recorded:
        key_ledger.record(alias, [(rule.sequence_name, source)])
        _recorded.add((alias, rule.sequence_name, source))
