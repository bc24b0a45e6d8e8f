"""`segment_seq sync APP_LABEL.Model.field`: move the field's sequence past the highest value stored in it."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from django_segment_seq.flow.parsing import UnparseableFormat
from django_segment_seq.management.subcommands.base import MODEL_ROWS_DATABASE, Subcommand, resolve_field
from django_segment_seq.sync import sync_sequence


class Sync(Subcommand):
    name = "sync"
    help = "Move the sequence past the highest value stored in a column."
    database_help = MODEL_ROWS_DATABASE

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("field", metavar="APP_LABEL.Model.field")

    def database(self, database: str | None) -> str:
        return super().database(None)  # --database names the model's rows; the Sequence table stays routed

    def handle(self, *, field: str, database: str | None = None, **options: Any) -> None:
        model, field_name = resolve_field(field)
        try:
            result = sync_sequence(model, field_name, using=database)
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
