"""`segment_seq list`: every sequence with its per-scope and per-period rows, and the numbers left."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from django_segment_seq.db.table import Sequence
from django_segment_seq.management import sequence_rows
from django_segment_seq.management.subcommands.base import Subcommand
from django_segment_seq.snowflake import listing as lease_listing
from django_segment_seq.snowflake.leases import lease_database, worker_leases


class ListSequences(Subcommand):
    name = "list"
    help = "Every sequence with its per-scope and per-period rows, and the numbers left."

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("--json", dest="as_json", action="store_true", help="Print JSON for scripts.")

    def handle(self, *, database: str | None = None, as_json: bool = False, **options: Any) -> None:
        alias = self.database(database)
        rows = list(Sequence._base_manager.using(alias).order_by("name"))
        groups: dict[str, list[Sequence]] = {row.name: [] for row in rows if row.base_name is None}
        for row in rows:
            if row.base_name is not None:
                groups.setdefault(row.base_name, []).append(row)
        by_name = {row.name: row for row in rows}
        if as_json:
            self.write_json({"database": alias, "sequences": [entry(name, by_name, groups) for name in sorted(groups)]})
            return
        if not rows:
            self.stdout.write("No sequences yet: a row is created when a sequence is first used.")
        else:
            table: list[tuple[str, ...]] = [("NAME", "VALUE", "STEP", "MIN", "MAX", "CYCLE", "LEFT")]
            for name, periods in sorted(groups.items()):
                missing = (name, "(no row)", "", "", "", "", "")
                table.append(sequence_rows.row_cells(by_name[name]) if name in by_name else missing)
                table += [sequence_rows.row_cells(row, indent="  ") for row in sequence_rows.newest_first(periods)]
            self.write_table(table)
        line = lease_listing.summary(worker_leases(using=lease_database()))
        if line:
            self.stdout.write(line)


def entry(name: str, by_name: dict[str, Sequence], groups: dict[str, list[Sequence]]) -> dict[str, Any]:
    """One sequence as `list --json` prints it, its derived rows under "periods"."""
    found = sequence_rows.row_dict(by_name[name]) if name in by_name else {"name": name, "missing": True}
    found["periods"] = [sequence_rows.row_dict(row) for row in sequence_rows.newest_first(groups[name])]
    return found
