"""manage.py segment_seq: list, show and tune sequences, sync and backfill them, list the gaps of a series, and list
Snowflake worker leases."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, OutputWrapper
from django.db import DatabaseError, connections, models
from tqdm import tqdm

from django_segment_seq.allocator.attempts import is_lock_timeout
from django_segment_seq.api import sequence_stats
from django_segment_seq.audit.exceptions import UnknownField
from django_segment_seq.audit.gaps import gap_report
from django_segment_seq.audit.labels import model_and_name
from django_segment_seq.backfill import DEFAULT_BATCH_SIZE, count_empty, fill_empty
from django_segment_seq.compat.carry_over import CarryRefused, carry_over, plan
from django_segment_seq.conf import app_settings
from django_segment_seq.db.bounded import session_bounds
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import shown as shown_scope
from django_segment_seq.db.table import Sequence
from django_segment_seq.flow.parsing import UnparseableFormat
from django_segment_seq.management import advance, sequence_rows
from django_segment_seq.management import gaps as gap_listing
from django_segment_seq.snowflake import listing as lease_listing
from django_segment_seq.snowflake.leases import lease_database, worker_leases
from django_segment_seq.sync import sync_sequence


class Command(BaseCommand):
    help = (
        "List, show and tune sequences; move one past the values stored in its column (sync), "
        "fill empty values (backfill) or list the gaps of its series (gaps)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        commands = parser.add_subparsers(
            dest="subcommand",
            required=True,
            metavar="{list,show,set,sync,backfill,gaps,leases,import-sequences,advance}",
        )

        listing = commands.add_parser(
            "list", help="Every sequence with its per-scope and per-period rows, and the numbers left."
        )
        listing.add_argument("--json", dest="as_json", action="store_true", help="Print JSON for scripts.")

        show = commands.add_parser("show", help="One sequence, its periods and this process's figures.")
        show.add_argument("name")
        show.add_argument("--json", dest="as_json", action="store_true", help="Print JSON for scripts.")

        tune = commands.add_parser("set", help="Change step, limits or cycle, validated as in the admin.")
        tune.add_argument("name")
        tune.add_argument("--step", type=int)
        tune.add_argument("--min", dest="min_value", type=int)
        tune.add_argument("--max", dest="max_value", type=int)
        cycle = tune.add_mutually_exclusive_group()
        cycle.add_argument("--cycle", dest="cycle", action="store_true", default=None)
        cycle.add_argument("--no-cycle", dest="cycle", action="store_false")

        sync = commands.add_parser("sync", help="Move the sequence past the highest value stored in a column.")
        sync.add_argument("field", metavar="APP_LABEL.Model.field")

        backfill = commands.add_parser("backfill", help="Number the rows whose value is still empty, in batches.")
        backfill.add_argument("field", metavar="APP_LABEL.Model.field")
        backfill.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)

        gaps = commands.add_parser(
            "gaps", help="The numbers missing from a field's series, per scope and period: voided or unexplained."
        )
        gaps.add_argument("field", metavar="APP_LABEL.Model.field")
        gaps.add_argument("--period", help="Only this period's numbers (its key: 2026, 2026-11, 2026-W47, ...).")
        gaps.add_argument("--scope", help="Only this scope's numbers, as listed (company=42).")
        gaps.add_argument("--json", dest="as_json", action="store_true", help="Print JSON for scripts.")

        self.add_leases_arguments(commands)

        carry = commands.add_parser(
            "import-sequences", help="Carry django-sequences' rows over: create or move forward, never lower."
        )
        carry.add_argument("--dry-run", action="store_true", help="Show what would change; change nothing.")
        advance.add_arguments(commands)

    def handle(self, *args: Any, subcommand: str, **options: Any) -> None:
        handler = getattr(self, f"handle_{subcommand.replace('-', '_')}")
        connection = connections[lease_database() if subcommand == "leases" else sequence_database()]
        try:
            with session_bounds(connection):
                handler(**options)
        except DatabaseError as exc:
            if not is_lock_timeout(exc):
                raise
            raise CommandError(
                f"The sequence table on database {connection.alias!r} stayed locked by another session for over "
                f"LOCK_TIMEOUT ({app_settings()['LOCK_TIMEOUT']} s): {exc}. Nothing was changed; try again later."
            ) from exc
        if subcommand == "list" and not options.get("as_json"):
            self.mention_leases()

    def handle_advance(self, **options: Any) -> None:
        advance.run(self.stdout, **options)

    # list, show

    def handle_list(self, *, as_json: bool = False, **options: Any) -> None:
        alias = sequence_database()
        rows = list(Sequence._base_manager.using(alias).order_by("name"))
        groups: dict[str, list[Sequence]] = {row.name: [] for row in rows if row.base_name is None}
        for row in rows:
            if row.base_name is not None:
                groups.setdefault(row.base_name, []).append(row)
        by_name = {row.name: row for row in rows}
        if as_json:
            listed = []
            for name, periods in sorted(groups.items()):
                entry = sequence_rows.row_dict(by_name[name]) if name in by_name else {"name": name, "missing": True}
                entry["periods"] = [sequence_rows.row_dict(row) for row in sequence_rows.newest_first(periods)]
                listed.append(entry)
            self._print_json({"database": alias, "sequences": listed})
            return
        if not rows:
            self.stdout.write("No sequences yet: a row is created when a sequence is first used.")
            return
        table: list[tuple[str, ...]] = [("NAME", "VALUE", "STEP", "MIN", "MAX", "CYCLE", "LEFT")]
        for name, periods in sorted(groups.items()):
            table.append(
                sequence_rows.row_cells(by_name[name]) if name in by_name else (name, "(no row)", "", "", "", "", "")
            )
            table += [sequence_rows.row_cells(row, indent="  ") for row in sequence_rows.newest_first(periods)]
        self._print_table(table)

    def handle_show(self, *, name: str, as_json: bool = False, **options: Any) -> None:
        alias = sequence_database()
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
            self._print_json(
                {
                    **sequence_rows.row_dict(row),
                    "periods": [sequence_rows.row_dict(p) for p in periods],
                    "this_process": figures,
                }
            )
            return
        self.stdout.write(f"Sequence {row.name} (database {alias})")
        details: list[tuple[str, object]] = [
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
            details[0:0] = [("sequence", row.base_name), *scope, ("period", row.period or "")]
        self._print_table([(f"  {label}", str(value)) for label, value in details])
        if periods:
            scoped = any(sequence_rows.scope(period) for period in periods)
            self.stdout.write("Scopes, each with its periods newest first:" if scoped else "Periods, newest first:")
            self._print_table([sequence_rows.row_cells(period, indent="  ") for period in periods])
        if not figures:
            self.stdout.write("This process: no numbers taken from it.")
        for shown, stats in sorted(figures.items()):
            self.stdout.write(f"This process, {shown}: " + ", ".join(f"{k} {v}" for k, v in stats.items()))

    # set

    def handle_set(
        self,
        *,
        name: str,
        step: int | None,
        min_value: int | None,
        max_value: int | None,
        cycle: bool | None,
        **options: Any,
    ) -> None:
        changes = {
            field: value
            for field, value in (("step", step), ("min_value", min_value), ("max_value", max_value), ("cycle", cycle))
            if value is not None
        }
        if not changes:
            raise CommandError("Nothing to change: give --step, --min, --max, --cycle or --no-cycle.")
        alias = sequence_database()
        row = Sequence._base_manager.using(alias).filter(name=name).first()
        if row is None:
            raise CommandError(f"No sequence named {name!r} in database {alias!r}; it is created on first use.")
        before = {field: getattr(row, field) for field in changes}
        for field, value in changes.items():
            setattr(row, field, value)
        try:
            row.full_clean()
        except ValidationError as exc:
            raise CommandError(f"Sequence {name!r} not changed: {_messages(exc)}") from None
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

    # sync, backfill

    def handle_sync(self, *, field: str, **options: Any) -> None:
        model, field_name = _resolve(field)
        try:
            result = sync_sequence(model, field_name)
        except (ValueError, UnparseableFormat) as exc:
            raise CommandError(f"{field}: {exc}") from None
        if result.unreadable:
            self.stdout.write(f"{result.unreadable} stored values do not match the field's format and were ignored.")
        if result.highest is None:
            self.stdout.write(f"{field} holds no value to read; sequence {result.row_name!r} left as it is.")
        elif result.moved:
            self.stdout.write(
                f"Sequence {result.row_name!r} moved from {result.before} to {result.after}, "
                f"the highest value stored in {field}."
            )
            self.stdout.write(
                "Processes running now keep the ranges they have cached; restart them, or they may hand out "
                "numbers below this."
            )
        else:
            self.stdout.write(
                f"Sequence {result.row_name!r} is already at {result.after}, past the highest value stored "
                f"in {field} ({result.highest})."
            )

    def handle_backfill(self, *, field: str, batch_size: int, **options: Any) -> None:
        if batch_size < 1:
            raise CommandError(f"--batch-size must be at least 1, not {batch_size}.")
        model, field_name = _resolve(field)
        try:
            total = count_empty(model, field_name)
        except ValueError as exc:
            raise CommandError(f"{field}: {exc}") from None
        if total == 0:
            self.stdout.write(f"{field}: no empty values; nothing to fill.")
            return
        with tqdm(total=total, unit="rows", file=_TqdmOut(self.stdout), desc=field, mininterval=0.5) as bar:
            try:
                result = fill_empty(
                    model, field_name, batch_size=batch_size, progress=lambda picked, filled: bar.update(picked)
                )
            except ValueError as exc:
                raise CommandError(f"{field}: {exc}") from None
        self.stdout.write(f"{field}: filled {result.filled} rows in {result.batches} batches.")
        moved = [synced for synced in result.synced if synced.moved]
        if moved:
            shown = ", ".join(f"{synced.row_name} {synced.before} -> {synced.after}" for synced in moved[:3])
            self.stdout.write(
                f"First moved {len(moved)} sequence rows past the values stored in {field}: {shown}"
                + (", ..." if len(moved) > 3 else ".")
            )
        if result.skipped:
            self.stdout.write(f"{result.skipped} rows were filled by others meanwhile and left as they were.")

    # gaps: the audit of a series

    def handle_gaps(
        self, *, field: str, period: str | None = None, scope: str | None = None, as_json: bool = False, **options: Any
    ) -> None:
        try:
            report = gap_report(field, period=period, scope=scope)
        except UnparseableFormat as exc:
            raise CommandError(f"{field}: {exc}; its gaps cannot be found.") from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if as_json:
            self._print_json(gap_listing.as_dict(report))
            return
        for line in gap_listing.lines(report):
            self.stdout.write(line)

    # import-sequences: moving from django-sequences

    def handle_import_sequences(self, *, dry_run: bool = False, **options: Any) -> None:
        alias = sequence_database()
        try:
            carries = plan(alias) if dry_run else carry_over(alias)
        except CarryRefused as exc:
            raise CommandError(f"{exc}. Nothing was changed.") from None
        if not carries:
            self.stdout.write(f"django-sequences' table in database {alias!r} holds no rows; nothing to carry over.")
            return
        table: list[tuple[str, ...]] = [("NAME", "DJANGO-SEQUENCES", "HERE BEFORE", "ACTION")]
        for carry in carries:
            table.append((carry.name, str(carry.last), "" if carry.before is None else str(carry.before), carry.action))
        self._print_table(table)
        moved = sum(carry.action != "keep" for carry in carries)
        if dry_run:
            self.stdout.write(f"Dry run: {moved} of {len(carries)} rows would change; nothing was written.")
        else:
            self.stdout.write(
                f"{moved} of {len(carries)} rows created or moved forward; django-sequences' table is left as it was."
            )

    # leases: Snowflake worker ids

    def add_leases_arguments(self, commands: Any) -> None:
        leases = commands.add_parser("leases", help="Snowflake worker id leases: holder, live or expired, time left.")
        leases.add_argument("--live", action="store_true", help="Only leases not expired by the database's clock.")
        leases.add_argument("--json", dest="as_json", action="store_true", help="Print JSON for scripts.")

    def handle_leases(self, *, live: bool = False, as_json: bool = False, **options: Any) -> None:
        alias = lease_database()
        leases = [lease for lease in worker_leases(using=alias) if lease.live or not live]
        if as_json:
            self._print_json({"database": alias, "leases": [lease_listing.as_dict(lease) for lease in leases]})
            return
        if not leases:
            self.stdout.write(f"No {'live ' if live else ''}worker leases in database {alias!r}: a process takes one "
                              "at its first Snowflake id.")  # fmt: skip
            return
        self._print_table(lease_listing.table(leases))

    def mention_leases(self) -> None:
        line = lease_listing.summary(worker_leases(using=lease_database()))
        if line:
            self.stdout.write(line)

    # output

    def _print_json(self, data: Any) -> None:
        self.stdout.write(json.dumps(data, indent=2, default=str))

    def _print_table(self, table: list[tuple[str, ...]]) -> None:
        widths = [max(len(str(line[i])) for line in table) for i in range(len(table[0]))]
        for line in table:
            self.stdout.write(
                "  ".join(str(cell).ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
            )


class _TqdmOut:
    """Lets tqdm write through the command's stdout, which adds no line endings of its own here."""

    def __init__(self, out: OutputWrapper) -> None:
        self.out = out

    def write(self, text: str) -> None:
        self.out.write(text, ending="")

    def flush(self) -> None:
        self.out.flush()


def _resolve(label: str) -> tuple[type[models.Model], str]:
    try:
        return model_and_name(label)
    except UnknownField as exc:
        raise CommandError(str(exc)) from None


def _messages(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
    return " ".join(exc.messages)
