"""`segment_seq set NAME`: change a sequence's step, limits or cycle, validated as the admin validates them; the row of
one scope and period (`--scope NAME=VALUE --period KEY`, or the row's name) is created first when missing."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser

from django_segment_seq.allocator.rows import ensure_derived_row
from django_segment_seq.conf import app_settings
from django_segment_seq.db.rownames import DERIVED_MARK, parse_row_name, row_name
from django_segment_seq.db.table import Sequence
from django_segment_seq.exceptions import SequenceError, SequenceScopeError
from django_segment_seq.flow.resets import key_problem
from django_segment_seq.flow.rules import NumberRule
from django_segment_seq.management.subcommands.base import Subcommand, sequence_name, validation_messages
from django_segment_seq.management.subcommands.sync import pairs, scope_pair
from django_segment_seq.numbered import find_rule, rules_of_sequence


class SetSequence(Subcommand):
    name = "set"
    help = (
        "Change step, limits or cycle, validated as in the admin; a scope's and period's row (--scope, --period, or "
        "its name) is created from the sequence's row when missing."
    )

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("name", type=sequence_name, help="The sequence, or the name of one of its rows.")
        parser.add_argument(
            "--scope",
            metavar="NAME=VALUE",
            type=scope_pair,
            action="append",
            help="The row of this scope value (repeat for each scope name), written as the rule writes it.",
        )
        parser.add_argument("--period", help="The row of this period, by its key (2026, 2026-11, FY2026, ...).")
        parser.add_argument(
            "--rule",
            help="The rule that spells the scope (a NumberRule's import path or a SequenceField's label); default: "
            "the rule declared with the sequence.",
        )
        parser.add_argument("--step", type=int)
        parser.add_argument("--min", dest="min_value", type=int)
        parser.add_argument("--max", dest="max_value", type=int)
        cycle = parser.add_mutually_exclusive_group()
        cycle.add_argument("--cycle", dest="cycle", action="store_true", default=None)
        cycle.add_argument("--no-cycle", dest="cycle", action="store_false")

    def handle(
        self,
        *,
        name: str,
        step: int | None,
        min_value: int | None,
        max_value: int | None,
        cycle: bool | None,
        scope: list[tuple[str, str]] | None = None,
        period: str | None = None,
        rule: str | None = None,
        database: str | None = None,
        **options: Any,
    ) -> None:
        asked = (("step", step), ("min_value", min_value), ("max_value", max_value), ("cycle", cycle))
        changes = {field: value for field, value in asked if value is not None}
        if not changes:
            raise CommandError("Nothing to change: give --step, --min, --max, --cycle or --no-cycle.")
        alias = self.database(database)
        sequence, scope_text, period, found = self.row_of(name, pairs(scope, "--scope"), period, rule)
        name = row_name(sequence, scope_text, period)
        row = Sequence._base_manager.using(alias).filter(name=name).first()
        if row is None and (scope_text, period) != (None, None):
            self.create_derived(alias, name, sequence, period, found, changes)
            return
        if row is None:
            self.create(alias, name, changes)
            return
        before = {field: getattr(row, field) for field in changes}
        for field, value in changes.items():
            setattr(row, field, value)
        try:
            row.full_clean()
        except ValidationError as exc:
            raise CommandError(f"Sequence {name!r} not changed: {validation_messages(exc)}") from None
        row.save()
        for field, value in changes.items():
            self.stdout.write(f"{name}: {field} {before[field]} -> {value}")
        self.stdout.write(
            "Each process applies this at its next range fetch; numbers it has cached are still handed out."
        )
        if row.base_name is None and Sequence._base_manager.using(alias).filter(base_name=name).exists():
            self.stdout.write(
                "Periods and scopes created from now on take these settings; their existing rows keep their own."
            )

    def row_of(
        self, name: str, scope: dict[str, str], period: str | None, reference: str | None
    ) -> tuple[str, str | None, str | None, NumberRule | None]:
        """The sequence, encoded scope and period of the row asked for, and the rule that spells it (if known)."""
        if DERIVED_MARK in name:
            if scope or period is not None:
                raise CommandError(f"{name!r} is a row's name already: give no --scope or --period with it.")
            try:
                sequence, scope_text, period = parse_row_name(name)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            return sequence, scope_text, period, self.rule_of(sequence, reference, needed=False)
        if not scope and period is None:
            return name, None, None, None
        found = self.rule_of(name, reference, needed=bool(scope))
        if period is not None:
            problem = key_problem(period)
            if problem:
                raise CommandError(f"--period {period!r}: {problem}.")
        if found is None:  # a period alone names its row without the rule's help
            return name, None, period, None
        periodic = found.reset_rule.is_named or found.reset_rule.is_callable
        if period is not None and not periodic:
            raise CommandError(f"Sequence {name!r} has no reset, so its rows have no period: give no --period.")
        if period is None and periodic:
            raise CommandError(
                f"Sequence {name!r} counts each period in a row of its own: give its --period (2026, 2026-11, ...)."
            )
        if not found.scope_names:
            if scope:
                raise CommandError(f"Sequence {name!r} is not scoped: give no --scope.")
            return name, None, period, found
        try:
            scope_text = found.scope_key(scope)
        except SequenceError as exc:
            raise CommandError(f"--scope: {exc}") from None
        return name, scope_text, period, found

    def rule_of(self, sequence: str, reference: str | None, *, needed: bool) -> NumberRule | None:
        """The rule named, else the one the sequence is declared with; CommandError when `needed` and none is known."""
        if reference is not None:
            try:
                found, _field = find_rule(reference)
            except ValueError as exc:
                raise CommandError(f"--rule {exc}") from None
            if found.sequence_name != sequence:
                raise CommandError(f"--rule {reference} numbers sequence {found.sequence_name!r}, not {sequence!r}.")
            return found
        known = rules_of_sequence(sequence)
        if len(set(known.values())) == 1:
            return next(iter(known.values()))
        if needed:
            why = f"several rules number it ({', '.join(sorted(known))})" if known else "no rule of it is known here"
            raise CommandError(
                f"Sequence {sequence!r}: {why}, and the rule spells a scope: give --rule module.RULE (or a "
                "SequenceField's label), or the row's name as `segment_seq list` shows it."
            )
        return None

    def create_derived(
        self, alias: str, name: str, sequence: str, period: str | None, rule: NumberRule | None, changes: dict[str, Any]
    ) -> None:
        """Create a period's or scope's row as its first use would, from its sequence's row (made first if missing),
        then set it, so the first number of that row already obeys the settings given."""
        cap = rule.flow.cap if rule is not None and rule.flow is not None else None
        base = Sequence._base_manager.using(alias).filter(name=sequence).first() or Sequence(name=sequence)
        settings = {"step": base.step, "min_value": base.min_value, "max_value": base.max_value, "cycle": base.cycle}
        if cap is not None:
            settings["max_value"] = min(settings["max_value"], cap)
        settings |= changes
        try:  # checked before anything is made, so a refusal leaves no row behind
            Sequence(name=name, base_name=sequence, period=period, **settings).full_clean()
        except ValidationError as exc:
            raise CommandError(f"Sequence {name!r} not created: {validation_messages(exc)}") from None
        try:
            ensure_derived_row(alias, name, base_name=sequence, period=period, cap=cap)
        except (SequenceError, SequenceScopeError) as exc:
            raise CommandError(f"Sequence {name!r} not created: {exc}") from None
        row = Sequence._base_manager.using(alias).get(name=name)
        for field, value in changes.items():
            setattr(row, field, value)
        try:
            row.full_clean()
        except ValidationError as exc:  # a process took numbers of the row in between
            raise CommandError(f"Sequence {name!r} created, not changed: {validation_messages(exc)}") from None
        row.save()
        set_to = ", ".join(f"{field} {getattr(row, field)}" for field in ("step", "min_value", "max_value", "cycle"))
        first = max(row.value + 1, row.min_value)
        self.stdout.write(
            f"{name}: created in database {alias!r} from {sequence!r}'s settings, then set to {set_to}; its next "
            f"number is {first}."
        )

    def create(self, alias: str, name: str, changes: dict[str, Any]) -> None:
        """Create a sequence's own row with the settings given (the defaults for the rest), as first use would, so
        its first number already obeys them (--min above numbers stored before the app came)."""
        row = Sequence(name=name, **{"step": app_settings()["DEFAULT_STEP"], **changes})
        try:
            row.full_clean()
        except ValidationError as exc:
            raise CommandError(f"Sequence {name!r} not created: {validation_messages(exc)}") from None
        row.save(using=alias)
        settings = ", ".join(f"{field} {getattr(row, field)}" for field in ("step", "min_value", "max_value", "cycle"))
        self.stdout.write(
            f"{name}: created in database {alias!r} with {settings}; its first number is {row.value + 1}."
        )
