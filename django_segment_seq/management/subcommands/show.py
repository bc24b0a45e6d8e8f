"""`segment_seq show NAME`: one sequence, its periods and scopes, and this process's figures."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from django_segment_seq.api import sequence_stats
from django_segment_seq.db.rownames import shown as shown_scope
from django_segment_seq.db.table import Sequence
from django_segment_seq.management import sequence_rows
from django_segment_seq.management.subcommands.base import Subcommand, sequence_name


class ShowSequence(Subcommand):
    name = "show"
    help = "One sequence, its periods and this process's figures."

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("name", type=sequence_name)
        parser.add_argument("--json", dest="as_json", action="store_true", help="Print JSON for scripts.")

    def handle(self, *, name: str, database: str | None = None, as_json: bool = False, **options: Any) -> None:
        alias = self.database(database)
        row = Sequence._base_manager.using(alias).filter(name=name).first()
        if row is None:
            raise CommandError(f"No sequence named {name!r} in database {alias!r}.")
        periods = sequence_rows.newest_first(Sequence._base_manager.using(alias).filter(base_name=name))
        names = {name, *(period.name for period in periods)}
        figures = {
            key[1]: sequence_rows.stats_dict(stats)
            for key, stats in sequence_stats().items()
            if key[0] == alias and key[1] in names
        }
        if as_json:
            periods_data = [sequence_rows.row_dict(period) for period in periods]
            self.write_json({**sequence_rows.row_dict(row), "periods": periods_data, "this_process": figures})
            return
        self.stdout.write(f"Sequence {row.name} (database {alias})")
        self.write_table([(f"  {label}", str(value)) for label, value in details(row)])
        if periods:
            scoped = any(sequence_rows.scope(period) for period in periods)
            self.stdout.write("Scopes, each with its periods newest first:" if scoped else "Periods, newest first:")
            self.write_table([sequence_rows.row_cells(period, indent="  ") for period in periods])
        if not figures:
            self.stdout.write("This process: no numbers taken from it.")
        for shown, stats in sorted(figures.items()):
            self.stdout.write(f"This process, {shown}: " + ", ".join(f"{k} {v}" for k, v in stats.items()))


def details(row: Sequence) -> list[tuple[str, object]]:
    """The row's columns as `show` lists them, a derived row's sequence, scope and period first."""
    found: list[tuple[str, object]] = [
        ("value", row.value),
        ("step", row.step),
        ("minimum", row.min_value),
        ("maximum", sequence_rows.limit(row)),
        ("cycle", sequence_rows.yes_no(row.cycle)),
        ("left", sequence_rows.left(row)),
        ("created", row.created.isoformat(timespec="seconds")),
        ("modified", row.modified.isoformat(timespec="seconds")),
        ("server history", row.history or "(none recorded)"),
    ]
    if row.base_name is not None:
        scope = [("scope", shown_scope(sequence_rows.scope(row)))] if sequence_rows.scope(row) else []
        found[0:0] = [("sequence", row.base_name), *scope, ("period", row.period or "")]
    return found
