"""NumberRule: how numbers of one sequence are made (format, reset, scope, check digits, concealment, gapless), the
one implementation a SequenceField and numbers made in code (next_text, next_value) share.

A field *is* its rule: it makes every number through the rule's methods, and the rule learns the field's scope fields
from it, so a scope value given in code names the very row the field's own save names.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, NamedTuple

from django.apps import apps
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db.models import Model

from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import (
    DERIVED_MARK,
    KEY_MAX_LENGTH,
    NAME_MAX_LENGTH,
    PAIR_SEPARATOR,
    PERIOD_SEPARATOR,
    period_row_name,
    validate_sequence_name,
)
from django_segment_seq.exceptions import SequenceMisconfigured, SequenceScopeError
from django_segment_seq.flow import key_ledger, shape_ledger
from django_segment_seq.flow.derived import take
from django_segment_seq.flow.formats import FlowFormat, Format
from django_segment_seq.flow.resets import NAMED, Reset, ResetOption
from django_segment_seq.flow.scopes import declared_field, scope_names, typed_text, value_text, widest_text

__all__ = ["NumberRule", "RuleShape", "rules_made_in_code"]

# Rules made at a module's top level, as the docs show them, with the module each was made in: the system checks
# validate these as they do fields. Weak, so a rule made by a test's own module code goes with it.
_made_in_code: weakref.WeakKeyDictionary[NumberRule, str] = weakref.WeakKeyDictionary()


def rules_made_in_code() -> Iterator[tuple[NumberRule, str]]:
    """Every NumberRule made at the top level of an imported module, with that module's name, sorted by name."""
    return iter(sorted(_made_in_code.items(), key=lambda item: (item[0].sequence_name, item[1])))


class RuleShape(NamedTuple):
    """What decides which row a number comes from and how its text looks: one per sequence name in a project."""

    format: str | None
    reset: str
    scope: tuple[str, ...]

    def described(self) -> str:
        """The shape as people read it in an error: format, reset and scope."""
        return f"format={self.format!r}, reset={self.reset or None!r}, scope={', '.join(self.scope) or None}"


@dataclass(frozen=True)
class NumberRule:
    """The options of a SequenceField that decide its numbers, for code that makes numbers without a model row.

    `scope` names the values each counter is kept per (["site"]: one counter per site); the call gives them
    (`next_text(rule, scope={"site": 3})`). A rule that is not valid says why at its first use
    (SequenceMisconfigured); a field's rule is checked by the field's system checks instead.
    """

    sequence_name: str
    format: Format | None = None
    reset: ResetOption = None
    fiscal_year_start: int | str | Callable[[Any], int] | None = None
    scope: Any = None
    check_digits: str | None = None
    conceal: bool = False
    gapless: bool = False
    flow: FlowFormat | None = field(init=False, repr=False, compare=False)
    reset_rule: Reset = field(init=False, repr=False, compare=False)
    # The fields that make their numbers by this rule (a field's own rule, or one shared through from_rule).
    owners: list[Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.scope, list):
            object.__setattr__(self, "scope", tuple(self.scope))  # a rule is a value: hashable, never changed
        if isinstance(self.scope, dict):
            object.__setattr__(self, "scope", tuple(self.scope.items()))  # {"site": int}: names with their types
        object.__setattr__(self, "owners", [])
        object.__setattr__(self, "_resolved", None)
        maker = sys._getframe(2)
        if maker.f_code.co_name == "<module>":  # made at import time, not inside a field or a call
            _made_in_code[self] = str(maker.f_globals.get("__name__", "?"))
        flow = None
        if self.format is not None:
            conceal_as = self.sequence_name if self.conceal else None
            flow = FlowFormat(self.format, check_digits=self.check_digits, conceal_as=conceal_as)
        object.__setattr__(self, "flow", flow)
        object.__setattr__(self, "reset_rule", Reset(self.reset, self.fiscal_year_start))

    @property
    def scope_names(self) -> tuple[str, ...]:
        """The scope as given: the names a call may use, before they are resolved to a model's fields."""
        return scope_names(self.scope)

    def bind(self, owner: Any) -> None:
        """Learn a field that makes its numbers by this rule, so scope names resolve to its model's fields."""
        if owner not in self.owners:
            self.owners.append(owner)
            object.__setattr__(self, "_resolved", None)

    def scope_fields(self) -> tuple[Any, ...] | None:
        """The model fields (or, for a rule with declared scope types, stand-in fields) each scope value is read
        through; None for a rule whose scope names no types (its values are written as given)."""
        resolved: tuple[Any, ...] | None = getattr(self, "_resolved", None)
        if resolved is not None:
            return resolved
        owner = next((o for o in self.owners if hasattr(o, "model") and not o.model._meta.abstract), None)
        if owner is not None:
            try:
                found = tuple(owner.model._meta.get_field(name) for name in self.scope_names)
            except FieldDoesNotExist as exc:  # the field's check E033 says so at `manage.py check`
                raise SequenceScopeError(self.sequence_name, str(exc)) from None
        elif self.scope and all(isinstance(item, tuple) for item in self.scope):
            found = tuple(declared_field(self.sequence_name, name, kind) for name, kind in self.scope)
        else:
            return None
        if apps.ready:  # a model still being built may gain fields
            object.__setattr__(self, "_resolved", found)
        return found

    @property
    def resolved_scope(self) -> tuple[str, ...]:
        """The scope's names as row names spell them: a foreign key's attname ("company_id") is its name."""
        try:
            fields = self.scope_fields()
        except SequenceScopeError:
            fields = None
        return self.scope_names if fields is None else tuple(found.name for found in fields)

    @property
    def shape(self) -> RuleShape:
        """The rule's format, reset and resolved scope: one shape per sequence name, recorded where it is first used."""
        flow = self.flow
        return RuleShape(None if flow is None else str(flow.source), self.reset_rule.spelled(), self.resolved_scope)

    def widest_row_name(self) -> int:
        """The longest row name this rule can write, with the widest text each scope value's type allows (a text
        field counts as many characters as its max_length, an untyped value one)."""
        name = len(self.sequence_name)
        names = self.scope_names
        if names:
            try:
                fields = self.scope_fields()
            except SequenceScopeError:
                fields = None
            widths = [1] * len(names) if fields is None else [widest_text(found) for found in fields]
            spelled = self.resolved_scope
            name += len(DERIVED_MARK) + sum(len(n) + 1 + w for n, w in zip(spelled, widths, strict=True))
            name += len(PAIR_SEPARATOR) * (len(names) - 1)
            if self.reset is not None:
                name += len(PERIOD_SEPARATOR) + KEY_MAX_LENGTH
        elif self.reset is not None:
            name += len(DERIVED_MARK) + KEY_MAX_LENGTH
        return name

    @cached_property
    def problems(self) -> tuple[str, ...]:
        """Why this rule cannot make numbers, as the field's system checks would say it; empty when it can."""
        found: list[str] = []
        try:
            validate_sequence_name(self.sequence_name)
        except ValidationError as exc:
            found.append(f"sequence_name {self.sequence_name!r} is invalid: {' '.join(exc.messages)}")
        flow, reset = self.flow, self.reset_rule
        if self.reset is not None and not (reset.is_named or reset.is_callable):
            found.append(f"reset={self.reset!r} is unknown; use {', '.join(map(repr, NAMED))} or a function")
        if reset.start_problem:
            found.append(reset.start_problem)
        if flow is None:
            if self.reset is not None:
                found.append(f"reset={self.reset!r} needs a format that shows the period")
            for option in ("check_digits", "conceal"):
                if getattr(self, option) not in (None, False):
                    found.append(f"{option} needs a format")
        else:
            found += flow.problems + flow.ambiguous
            if not flow.problems and not flow.has_value:
                found.append(f"the format {flow.source!r} has no {{value}}, so every number would get the same text")
            if flow.period_specs and self.reset is None:
                found.append(f"the format {flow.source!r} shows {{period}}, but the rule has no reset")
            period = flow.period_problem(reset) if not found else None
            if period:
                found.append(f"the format {flow.source!r} with reset={self.reset!r}: {period}")
            if flow.check_digits_problem:
                found.append(flow.check_digits_problem)
            if flow.conceal_problem:
                found.append(flow.conceal_problem)
        names = self.scope_names if isinstance(self.scope, (str, tuple, type(None))) else None
        if names is None or not all(isinstance(name, str) and name for name in names) or len(set(names)) != len(names):
            found.append(f"scope={self.scope!r} must be a name, a list of distinct names or a dict of names and types")
        elif self.scope and any(isinstance(item, tuple) for item in self.scope):
            try:
                self.scope_fields()
            except SequenceScopeError as exc:
                found.append(exc.problem)
        if not found and not self.owners and self.widest_row_name() > NAME_MAX_LENGTH:  # a field's is E024
            found.append(
                f"its rows can be named with up to {self.widest_row_name()} characters (the widest value of each "
                f"scope type), over the {NAME_MAX_LENGTH} of Sequence.name: shorten the sequence or scope names"
            )
        if not isinstance(self.gapless, bool) or not isinstance(self.conceal, bool):
            found.append("gapless and conceal must be True or False")
        return tuple(found)

    def require_valid(self) -> None:
        """SequenceMisconfigured naming the rule's first problem, if it has one."""
        if self.problems:
            raise SequenceMisconfigured(str(self.sequence_name), "; ".join(self.problems))

    def scope_key(self, values: Mapping[str, Any] | None) -> str | None:
        """The scope part of the row name for `values` ("company=42"): the one place scope values become a row name.

        A name may be a field's name or its attname ("company" or "company_id"), and each value is read through the
        field's own type (a UUID in capitals, "1" for True), so code and the field's save name one row.
        SequenceScopeError when the names given are not the rule's.
        """
        names = self.scope_names
        given = dict(values or {})
        fields = self.scope_fields() if names else None
        if fields is None:
            if set(given) != set(names):
                self._wrong_names(given, names)
            if not names:
                return None
            return PAIR_SEPARATOR.join(f"{name}={typed_text(self.sequence_name, name, given[name])}" for name in names)
        wanted = tuple(found.name for found in fields)
        left = dict(given)  # the names no scope field has taken yet
        pairs = []
        for found in fields:
            spellings = [
                key for key in dict.fromkeys((found.name, getattr(found, "attname", found.name))) if key in left
            ]
            if len(spellings) != 1:
                self._wrong_names(given, wanted)
            value = left.pop(spellings[0])
            if isinstance(value, Model):
                value = value.pk  # a model instance counts by its row, as a foreign key's id names it
            pairs.append(f"{found.name}={value_text(self.sequence_name, found, value)}")
        if left:
            self._wrong_names(given, wanted)
        return PAIR_SEPARATOR.join(pairs)

    def scope_key_of(self, instance: Any) -> str | None:
        """The scope part of the row name for a model instance: its scope fields' values, read as they are stored."""
        if not self.scope_names:
            return None
        fields = self.scope_fields() or ()
        return self.scope_key({found.name: getattr(instance, found.attname) for found in fields})

    def _wrong_names(self, given: Mapping[str, Any], names: tuple[str, ...]) -> None:
        wanted = ", ".join(names) if names else "none"
        raise SequenceScopeError(
            self.sequence_name,
            f"the scope values given ({', '.join(sorted(given)) or 'none'}) are not the rule's scope ({wanted})",
        )

    def number(
        self, *, scope: str | None = None, moment: datetime | None = None, record: Any = None, using: str | None = None
    ) -> int:
        """The next number of the rule's counter for `scope` (an encoded scope_key) in the period of `moment`: the
        integer behind the text next_text() would make. `record` gives a fiscal year read from the record."""
        self.require_shape(using)
        period = None if self.reset is None or moment is None else self._period(moment, record)
        cap = None if self.flow is None or period is None else self.flow.cap
        return take(
            self.sequence_name, int, period=period, cap=cap, gapless=self.gapless is True, scope=scope, using=using
        )

    def require_shape(self, using: str | None) -> None:
        """SequenceShapeChanged when the sequence was first used with another reset or scope (once per process)."""
        shape_ledger.verify(sequence_database(using), self.sequence_name, self.shape)

    def _period(self, moment: datetime, record: Any) -> str | None:
        """The period key of `moment` (for `record`, when its fiscal year starts where the record says), refused when
        its row name would not fit the name column."""
        period = self.reset_rule.key(moment, record)
        if period is not None and len(period_row_name(self.sequence_name, period)) > NAME_MAX_LENGTH:
            raise ValueError(
                f"Sequence {self.sequence_name!r}: period {period!r} makes the row name "
                f"{period_row_name(self.sequence_name, period)!r} longer than {NAME_MAX_LENGTH} characters. "
                "Shorten the sequence name."
            )
        return period

    def text(
        self,
        *,
        moment: datetime,
        scope: str | None = None,
        instance: Any = None,
        record: Any = None,
        using: str | None = None,
        max_length: int | None = None,
        owner: Callable[[], str] | None = None,
    ) -> str:
        """The next text: the number of `scope`'s counter in the period of `moment`, rendered by the format.

        `instance` fills {instance.…} and is what a callable format is given; `record` (default: `instance`) is what a
        fiscal year read from the record reads; `max_length` (a field's) is never exceeded, and `owner` says whose
        texts they are in that error (a field's label, asked for only then).
        """
        flow = self.flow
        if flow is None:
            return str(self.number(scope=scope, using=using))
        if flow.concealment is not None:
            key_ledger.verify(sequence_database(using), self.sequence_name, flow.source)
        self.require_shape(using)
        period = self._period(moment, instance if record is None else record)
        return take(
            self.sequence_name,
            self.renderer(instance, moment, period, max_length, owner or (lambda: f"Sequence {self.sequence_name!r}")),
            period=period,
            cap=flow.cap,
            gapless=self.gapless is True,
            scope=scope,
            using=using,
        )

    def renderer(
        self, instance: Any, moment: datetime, period: str | None, max_length: int | None, owner: Callable[[], str]
    ) -> Callable[[int], str]:
        """render(number) -> the text, refused when longer than `max_length`."""
        flow = self.flow
        if flow is None:
            raise TypeError(f"Sequence {self.sequence_name!r}: a rule without a format renders no text")

        def render(value: int) -> str:
            text = flow.render(value, instance, moment, period)
            if max_length is not None and len(text) > max_length:
                raise ValueError(
                    f"{owner()}: {text!r} is {len(text)} characters long, more than max_length={max_length}. "
                    "Raise max_length."
                )
            return text

        return render
