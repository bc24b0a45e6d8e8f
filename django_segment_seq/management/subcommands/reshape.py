"""`segment_seq reshape`: forget the shape a sequence name was first used with, once its new rows are seeded, so the
rule it has now is recorded at its next use."""

from __future__ import annotations

from django.core.management.base import CommandError, CommandParser

from django_segment_seq.flow import shape_ledger
from django_segment_seq.management.subcommands.base import Subcommand, sequence_name


class Reshape(Subcommand):
    name = "reshape"
    help = (
        "Forget the reset and scope a sequence name was first used with, so a changed rule may use it: seed the new "
        "rows above the texts already issued first (sync), or they repeat them."
    )

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("name", type=sequence_name, help="The sequence name whose recorded shape to forget.")

    def handle(self, *, name: str, database: str | None = None, **_options: object) -> None:
        alias = self.database(database)
        recorded = shape_ledger.recorded_shapes(alias).get(name)
        if recorded is None:
            raise CommandError(f"No shape is recorded for sequence {name!r} in database {alias!r}.")
        shape_ledger.reshape(alias, name)
        self.stdout.write(
            f"Sequence {name!r}: forgot its recorded shape, {shape_ledger.described(recorded[2], *recorded[:2])}. "
            "Its next use records the rule it has then; restart processes that compared the old one."
        )
