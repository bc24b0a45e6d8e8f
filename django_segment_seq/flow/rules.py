"""NumberRule: how numbers of one sequence are made (format, reset, scope, check digits, concealment, gapless), the
one implementation a SequenceField and numbers made in code (next_text) share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from django.core.exceptions import ValidationError

from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import NAME_MAX_LENGTH, PAIR_SEPARATOR, period_row_name, validate_sequence_name
from django_segment_seq.exceptions import SequenceMisconfigured, SequenceScopeError
from django_segment_seq.flow import key_ledger
from django_segment_seq.flow.derived import take
from django_segment_seq.flow.formats import FlowFormat, Format
from django_segment_seq.flow.resets import NAMED, Reset, ResetOption
from django_segment_seq.flow.scopes import scope_names, typed_text

__all__ = ["NumberRule"]


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
    fiscal_year_start: int | None = None
    scope: Any = None
    check_digits: str | None = None
    conceal: bool = False
    gapless: bool = False
    flow: FlowFormat | None = field(init=False, repr=False, compare=False)
    reset_rule: Reset = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.scope, list):
            object.__setattr__(self, "scope", tuple(self.scope))  # a rule is a value: hashable, never changed
        flow = None
        if self.format is not None:
            conceal_as = self.sequence_name if self.conceal else None
            flow = FlowFormat(self.format, check_digits=self.check_digits, conceal_as=conceal_as)
        object.__setattr__(self, "flow", flow)
        object.__setattr__(self, "reset_rule", Reset(self.reset, self.fiscal_year_start))

    @property
    def scope_names(self) -> tuple[str, ...]:
        return scope_names(self.scope)

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
            found.append(f"scope={self.scope!r} must be a name or a list of distinct names")
        if not isinstance(self.gapless, bool) or not isinstance(self.conceal, bool):
            found.append("gapless and conceal must be True or False")
        return tuple(found)

    def require_valid(self) -> None:
        """SequenceMisconfigured naming the rule's first problem, if it has one."""
        if self.problems:
            raise SequenceMisconfigured(str(self.sequence_name), "; ".join(self.problems))

    def scope_key(self, values: Mapping[str, Any] | None) -> str | None:
        """The scope part of the row name for `values` ("site=3"), written as a field scoped by those names writes
        it; SequenceScopeError when the names given are not the rule's."""
        names = self.scope_names
        given = dict(values or {})
        if set(given) != set(names):
            wanted = ", ".join(names) if names else "none"
            raise SequenceScopeError(
                self.sequence_name,
                f"the scope values given ({', '.join(sorted(given)) or 'none'}) are not the rule's scope ({wanted})",
            )
        if not names:
            return None
        return PAIR_SEPARATOR.join(f"{name}={typed_text(self.sequence_name, name, given[name])}" for name in names)

    def number(self, *, scope: str | None = None, using: str | None = None) -> int:
        """The next number of a rule without a format, in the counter of `scope` (an encoded scope_key)."""
        return take(self.sequence_name, int, gapless=self.gapless is True, scope=scope, using=using)

    def text(
        self,
        *,
        moment: datetime,
        scope: str | None = None,
        instance: Any = None,
        using: str | None = None,
        max_length: int | None = None,
        owner: Callable[[], str] | None = None,
    ) -> str:
        """The next text: the number of `scope`'s counter in the period of `moment`, rendered by the format.

        `instance` fills {instance.…} and is what a callable format is given; `max_length` (a field's) is never
        exceeded, and `owner` says whose texts they are in that error (a field's label, asked for only then).
        """
        flow = self.flow
        if flow is None:
            return str(self.number(scope=scope, using=using))
        if flow.concealment is not None:
            key_ledger.verify(sequence_database(using), self.sequence_name, flow.source)
        period = self.reset_rule.key(moment)
        if period is not None and len(period_row_name(self.sequence_name, period)) > NAME_MAX_LENGTH:
            raise ValueError(
                f"Sequence {self.sequence_name!r}: period {period!r} makes the row name "
                f"{period_row_name(self.sequence_name, period)!r} longer than {NAME_MAX_LENGTH} characters. "
                "Shorten the sequence name."
            )
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
