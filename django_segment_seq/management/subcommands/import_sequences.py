"""`segment_seq import-sequences`: carry django-sequences' rows over to this app's table, never lowering a value."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from django_segment_seq.compat.carry_over import CarryRefused, carry_over, plan
from django_segment_seq.management.subcommands.base import Subcommand, sentence


class ImportSequences(Subcommand):
    name = "import-sequences"
    help = "Carry django-sequences' rows over: create or move forward, never lower."

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="Show what would change; change nothing.")

    def handle(self, *, dry_run: bool = False, database: str | None = None, **options: Any) -> None:
        alias = self.database(database)
        try:
            carries = plan(alias) if dry_run else carry_over(alias)
        except CarryRefused as exc:
            raise CommandError(f"{sentence(exc)} Nothing was changed.") from None
        if not carries:
            self.stdout.write(f"django-sequences' table in database {alias!r} holds no rows; nothing to carry over.")
            return
        table: list[tuple[str, ...]] = [("NAME", "DJANGO-SEQUENCES", "HERE BEFORE", "ACTION", "WRAP")]
        for carry in carries:
            before = "" if carry.before is None else str(carry.before)
            table.append((carry.name, str(carry.last), before, carry.action, "kept" if carry.wraps else "unknown"))
        self.write_table(table)
        moved = sum(carry.action != "keep" for carry in carries)
        if dry_run:
            self.stdout.write(f"Dry run: {moved} of {len(carries)} rows would change; nothing was written.")
        else:
            self.stdout.write(
                f"{moved} of {len(carries)} rows created or moved forward; django-sequences' table is left as it was."
            )
        unknown = sum(not carry.wraps for carry in carries)
        if unknown:
            self.stdout.write(
                f"Wrap unknown for {unknown} of {len(carries)} rows: django-sequences keeps reset_value in the "
                "calls, not in its table."
            )
            self.stdout.write(
                "Each takes the wrap of its first call of django_segment_seq.compat.sequences that gives a "
                "reset_value; called without one, it never wraps."
            )
