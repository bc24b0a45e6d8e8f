"""`segment_seq set NAME`: change a sequence's step, limits or cycle, validated as the admin validates them."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser

from django_segment_seq.conf import app_settings
from django_segment_seq.db.rownames import DERIVED_MARK
from django_segment_seq.db.table import Sequence
from django_segment_seq.management.subcommands.base import Subcommand, sequence_name, validation_messages


class SetSequence(Subcommand):
    name = "set"
    help = "Change step, limits or cycle, validated as in the admin."

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("name", type=sequence_name)
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
        database: str | None = None,
        **options: Any,
    ) -> None:
        asked = (("step", step), ("min_value", min_value), ("max_value", max_value), ("cycle", cycle))
        changes = {field: value for field, value in asked if value is not None}
        if not changes:
            raise CommandError("Nothing to change: give --step, --min, --max, --cycle or --no-cycle.")
        alias = self.database(database)
        row = Sequence._base_manager.using(alias).filter(name=name).first()
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

    def create(self, alias: str, name: str, changes: dict[str, Any]) -> None:
        """Create a sequence's own row with the settings given (the defaults for the rest), as first use would, so
        its first number already obeys them (--min above numbers stored before the app came)."""
        if DERIVED_MARK in name:
            raise CommandError(
                f"No sequence row named {name!r} in database {alias!r}; a period or scope row is created from its "
                "sequence's row on first use: set that one."
            )
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
