"""`segment_seq sync APP_LABEL.Model.field`: move the field's sequence past the highest value stored in it, or seed a
sequence from a column no SequenceField fills (--sequence, with --pattern or --format for texts)."""

from __future__ import annotations

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
from django_segment_seq.sync import SyncResult, sync_sequence


class Sync(Subcommand):
    name = "sync"
    help = "Move the sequence past the highest value stored in a column (any integer or text column with --sequence)."
    database_help = MODEL_ROWS_DATABASE

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("field", metavar="APP_LABEL.Model.field")
        parser.add_argument(
            "--sequence",
            type=sequence_name,
            help="For a column that is not a SequenceField: the sequence whose row to move (created when missing).",
        )
        texts = parser.add_mutually_exclusive_group()
        texts.add_argument(
            "--pattern",
            help="For a text column: a regular expression matching a whole stored text, its group 'value' (or only "
            "group) the number, e.g. 'ORD-(?P<value>[0-9]+)'. Default: the whole text is a decimal number.",
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
        sequence: str | None = None,
        pattern: str | None = None,
        format: str | None = None,
        database: str | None = None,
        **options: Any,
    ) -> None:
        model, field_name = resolve_field(field)
        try:
            result = sync_sequence(model, field_name, sequence=sequence, pattern=pattern, format=format, using=database)
        except (ValueError, UnparseableFormat, SequenceError) as exc:
            message = str(exc)
            raise CommandError(message if field in message else f"{field}: {message}") from None
        if result.unreadable:
            shape = "the number's shape" if sequence is not None else "the field's format"
            self.stdout.write(f"{result.unreadable} stored values do not match {shape} and were ignored.")
        if result.highest is None:
            self.stdout.write(f"{field} holds no value to read; sequence {result.row_name!r} left as it is.")
        elif result.moved:
            moved = "created at" if result.before is None else f"moved from {result.before} to"
            self.stdout.write(
                f"Sequence {result.row_name!r} {moved} {result.after}, the highest value stored in {field}."
            )
            if result.after is not None and retire_redis_states(self.database(None), {result.row_name: result.after}):
                self.stdout.write("The row is on the Redis tier: its Redis state was emptied (a gap).")
            self.write_running_processes(result, seeded=sequence is not None)
        else:
            self.stdout.write(
                f"Sequence {result.row_name!r} is already at {result.after}, past the highest value stored "
                f"in {field} ({result.highest})."
            )

    def write_running_processes(self, result: SyncResult, *, seeded: bool) -> None:
        """What processes running now still hand out, and whether that can repeat a stored number."""
        if not seeded:
            self.stdout.write(
                "Processes running now keep the ranges they have cached; restart them, or they may hand out "
                "numbers below this."
            )
        elif result.before is None:
            self.stdout.write("The row is new: no process held numbers of it, and every number from now on is above.")
        elif result.at_or_below == 0:
            self.stdout.write(
                f"Processes running now hand out what they hold of the ranges they took before (numbers at or below "
                f"{result.before}) until those are used up, then numbers above {result.after}. None of the stored "
                "values lies there, so none is repeated; restart them to stop numbers below at once."
            )
        else:
            self.stdout.write(
                f"{result.at_or_below} stored values lie at or below {result.before}, where processes running now "
                "may still hold cached ranges: if any of those values was not handed out by this sequence, restart "
                "every process that takes its numbers before it hands that value out again."
            )
