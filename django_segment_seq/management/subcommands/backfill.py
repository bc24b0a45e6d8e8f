"""`segment_seq backfill APP_LABEL.Model.field`: number the rows whose value is still empty, in batches, with a
progress bar."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser, OutputWrapper
from tqdm import tqdm

from django_segment_seq.backfill import DEFAULT_BATCH_SIZE, FillResult, count_empty, fill_empty
from django_segment_seq.management.subcommands.base import MODEL_ROWS_DATABASE, Subcommand, resolve_field
from django_segment_seq.management.subcommands.gaps import add_rule_arguments
from django_segment_seq.management.subcommands.sync import pairs


class Backfill(Subcommand):
    name = "backfill"
    help = "Number the rows whose value is still empty, in batches."
    database_help = MODEL_ROWS_DATABASE

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("field", metavar="APP_LABEL.Model.field")
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
        add_rule_arguments(parser)

    def database(self, database: str | None) -> str:
        return super().database(None)  # --database names the model's rows; the Sequence table stays routed

    def handle(
        self,
        *,
        field: str,
        batch_size: int,
        database: str | None = None,
        rule: str | None = None,
        scope_from: list[tuple[str, str]] | None = None,
        **options: Any,
    ) -> None:
        if batch_size < 1:
            raise CommandError(f"--batch-size must be at least 1, not {batch_size}.")
        model, field_name = resolve_field(field)
        columns = pairs(scope_from, "--scope-from")
        if columns and rule is None:
            raise CommandError("--scope-from reads a scope of a rule: name the rule (--rule).")
        try:
            total = count_empty(model, field_name, using=database, rule=rule, scope_from=columns)
        except ValueError as exc:
            raise CommandError(f"{field}: {exc}") from None
        if total == 0:
            self.stdout.write(f"{field}: no empty values; nothing to fill.")
            return
        with tqdm(total=total, unit="rows", file=TqdmOut(self.stdout), desc=field, mininterval=0.5) as bar:
            try:
                result = fill_empty(
                    model,
                    field_name,
                    batch_size=batch_size,
                    using=database,
                    progress=lambda picked, filled: bar.update(picked),
                    rule=rule,
                    scope_from=columns,
                )
            except ValueError as exc:
                raise CommandError(f"{field}: {exc}") from None
        self.report(field, result)

    def report(self, field: str, result: FillResult) -> None:
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


class TqdmOut:
    """Lets tqdm write through the command's stdout, which adds no line endings of its own here."""

    def __init__(self, out: OutputWrapper) -> None:
        self.out = out

    def write(self, text: str) -> None:
        self.out.write(text, ending="")

    def flush(self) -> None:
        self.out.flush()
