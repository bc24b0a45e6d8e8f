"""`segment_seq sync APP_LABEL.Model.field`: move every row of the field's sequence past the highest number stored for
it, or seed a sequence from a column no SequenceField fills (--rule or --sequence, with --pattern or --format for
texts, --scope-from for a scope the texts do not show)."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import CommandError, CommandParser

from django_segment_seq.exceptions import SequenceError
from django_segment_seq.flow.parsing import UnparseableFormat
from django_segment_seq.management.redis_states import retire_redis_states
from django_segment_seq.management.subcommands.base import (
    MODEL_ROWS_DATABASE,
    Subcommand,
    resolve_field,
    sequence_name,
)
from django_segment_seq.sync import SyncReport, SyncResult, sync_sequence


def scope_pair(text: str) -> tuple[str, str]:
    """NAME=VALUE, an argument that gives one scope (argparse's `type`)."""
    name, mark, value = text.partition("=")
    if not mark or not name.strip() or not value.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=VALUE, e.g. entity=entity_id")
    return name.strip(), value.strip()


def pairs(given: list[tuple[str, str]] | None, option: str) -> dict[str, str]:
    """The NAME=VALUE arguments as a mapping; CommandError for a name given twice."""
    found: dict[str, str] = {}
    for name, value in given or ():
        if name in found:
            raise CommandError(f"{option} {name} is given twice.")
        found[name] = value
    return found


class Sync(Subcommand):
    name = "sync"
    help = (
        "Move every period's and scope's row of a sequence past the highest number stored for it in a column "
        "(any integer or text column with --rule or --sequence)."
    )
    database_help = MODEL_ROWS_DATABASE

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("field", metavar="APP_LABEL.Model.field")
        parser.add_argument(
            "--rule",
            help="For a column that is not a SequenceField: the rule its numbers were made by, a NumberRule's import "
            "path (module.RULE) or the label of a SequenceField the rule is shared with; it names the sequence, "
            "the format, the period and the scope of each stored number.",
        )
        parser.add_argument(
            "--sequence",
            type=sequence_name,
            help="For a column that is not a SequenceField: the sequence whose rows to move (created when missing); "
            "its rule is that of the SequenceFields declared with it, else it has no reset and no scope.",
        )
        parser.add_argument(
            "--scope-from",
            dest="scope_from",
            metavar="NAME=COLUMN",
            type=scope_pair,
            action="append",
            help="With --rule: the column of the model holding a scope's value, e.g. entity=entity_id (default: "
            "the texts, when they show it, else the column of the scope's name). Repeat for each scope.",
        )
        texts = parser.add_mutually_exclusive_group()
        texts.add_argument(
            "--pattern",
            help="For a text column: a regular expression matching a whole stored text, its group 'value' (or only "
            "group) the number, e.g. 'ORD-(?P<value>[0-9]+)'; with --rule, a group 'period' the period's key and a "
            "group named after a scope that scope's value. Default: the rule's format, else whole decimal numbers.",
        )
        texts.add_argument(
            "--format", help="For a text column: the format its texts were made by, e.g. '{date:%%Y}-{value:06d}'."
        )

    def database(self, database: str | None) -> str:
        return super().database(None)  # --database names the model's rows; the Sequence table stays routed

    def handle(
        self,
        *,
        field: str,
        rule: str | None = None,
        sequence: str | None = None,
        scope_from: list[tuple[str, str]] | None = None,
        pattern: str | None = None,
        format: str | None = None,
        database: str | None = None,
        **options: Any,
    ) -> None:
        model, field_name = resolve_field(field)
        columns = pairs(scope_from, "--scope-from")
        try:
            report = sync_sequence(
                model,
                field_name,
                sequence=sequence,
                pattern=pattern,
                format=format,
                rule=rule,
                scope_from=columns,
                using=database,
            )
        except (ValueError, UnparseableFormat, SequenceError) as exc:
            message = str(exc)
            raise CommandError(message if field in message else f"{field}: {message}") from None
        if report.unreadable:
            shape = "the number's shape" if report.seeded else "the field's format"
            self.stdout.write(f"{report.unreadable} stored values do not match {shape} and were ignored.")
        if report.empty_scope:
            self.stdout.write(f"{report.empty_scope} stored values have an empty scope value and were ignored.")
        if not report.rows:
            self.stdout.write(f"{field} holds no value to read; sequence {report.sequence_name!r} left as it is.")
            return
        single = len(report.rows) == 1 and report.rows[0].row_name == report.sequence_name
        if single:
            self.write_one(field, report.rows[0], seeded=report.seeded)
        else:
            self.write_rows(field, report)
        moved = report.moved
        if not moved:
            return
        floors = {result.row_name: result.after for result in moved if result.after is not None}
        if retire_redis_states(self.database(None), floors):
            rows = "The row is" if len(floors) == 1 else "Rows moved are"
            self.stdout.write(f"{rows} on the Redis tier: its Redis state was emptied (a gap).")
        self.write_running_processes(moved, seeded=report.seeded)

    def write_one(self, field: str, result: SyncResult, *, seeded: bool) -> None:
        """The sequence's own row, the one counter of a column without reset or scope."""
        if result.moved:
            moved = "created at" if result.created and seeded else f"moved from {result.before} to"
            self.stdout.write(
                f"Sequence {result.row_name!r} {moved} {result.after}, the highest value stored in {field}."
            )
        else:
            self.stdout.write(
                f"Sequence {result.row_name!r} is already at {result.after}, past the highest value stored "
                f"in {field} ({result.highest})."
            )

    def write_rows(self, field: str, report: SyncReport) -> None:
        """Each row of a period or scope, with what was done to it."""
        read = f", read by {report.read_by}" if report.read_by else ""
        self.stdout.write(
            f"Sequence {report.sequence_name!r}: {len(report.rows)} rows of its periods and scopes hold numbers "
            f"stored in {field}{read}:"
        )
        table: list[tuple[str, ...]] = [("ROW", "BEFORE", "NOW", "HIGHEST STORED", "")]
        for result in report.rows:
            done = "created" if result.created else ("moved" if result.moved else "already past")
            before = "-" if result.created else str(result.before)
            table.append((f"  {result.row_name}", before, str(result.after), str(result.highest), done))
        self.write_table(table)
        created = sum(result.created for result in report.rows)
        moved = len(report.moved) - created
        past = len(report.rows) - created - moved
        self.stdout.write(
            f"{created} rows created, {moved} moved, {past} already past their stored numbers; the sequence's own "
            f"row {report.sequence_name!r} is left as it is (its settings are what new periods and scopes start "
            "from)."
        )

    def write_running_processes(self, moved: list[SyncResult], *, seeded: bool) -> None:
        """What processes running now still hand out, and whether that can repeat a stored number."""
        if not seeded:
            self.stdout.write(
                "Processes running now keep the ranges they have cached; restart them, or they may hand out "
                "numbers below this."
            )
            return
        if all(result.created for result in moved):
            rows = (
                "The row is new: no process held numbers of it"
                if len(moved) == 1
                else ("The rows are new: no process held numbers of them")
            )
            self.stdout.write(f"{rows}, and every number from now on is above.")
            return
        unsafe = [result for result in moved if not result.safe_for_running_processes]
        if not unsafe:
            self.stdout.write(
                "Processes running now hand out what they hold of the ranges they took before (numbers at or below "
                "each row's value before) until those are used up, then numbers above the stored ones. None of the "
                "stored values lies there, so none is repeated; restart them to stop numbers below at once."
            )
            return
        for result in unsafe:
            counted = (
                f"{result.at_or_below} stored values lie" if result.at_or_below is not None else "stored values may lie"
            )
            self.stdout.write(
                f"{counted} at or below {result.before} in {result.row_name!r}, where processes running now may "
                "still hold cached ranges."
            )
        self.stdout.write(
            "If any of those values was not handed out by this sequence, restart every process that takes its "
            "numbers before it hands that value out again."
        )
