"""`segment_seq gaps APP_LABEL.Model.field`: the numbers missing from a field's series, voided or unexplained."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from django_segment_seq.audit.gaps import gap_report
from django_segment_seq.flow.parsing import UnparseableFormat
from django_segment_seq.management import gaps as gap_listing
from django_segment_seq.management.subcommands.base import MODEL_ROWS_DATABASE, Subcommand
from django_segment_seq.management.subcommands.sync import pairs, scope_pair


class Gaps(Subcommand):
    name = "gaps"
    help = "The numbers missing from a field's series, per scope and period: voided or unexplained."
    database_help = MODEL_ROWS_DATABASE

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("field", metavar="APP_LABEL.Model.field")
        parser.add_argument("--period", help="Only this period's numbers (its key: 2026, 2026-11, 2026-W47, ...).")
        parser.add_argument("--scope", help="Only this scope's numbers, as listed (company=42).")
        parser.add_argument("--json", dest="as_json", action="store_true", help="Print JSON for scripts.")
        add_rule_arguments(parser)

    def database(self, database: str | None) -> str:
        return super().database(None)  # --database names the model's rows; the Sequence table stays routed

    def handle(
        self,
        *,
        field: str,
        period: str | None = None,
        scope: str | None = None,
        as_json: bool = False,
        database: str | None = None,
        rule: str | None = None,
        scope_from: list[tuple[str, str]] | None = None,
        **options: Any,
    ) -> None:
        columns = pairs(scope_from, "--scope-from")
        try:
            report = gap_report(field, period=period, scope=scope, using=database, rule=rule, scope_from=columns)
        except UnparseableFormat as exc:
            raise CommandError(f"{field}: {exc}; its gaps cannot be found.") from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if as_json:
            self.write_json(gap_listing.as_dict(report))
            return
        for line in gap_listing.lines(report):
            self.stdout.write(line)


def add_rule_arguments(parser: CommandParser) -> None:
    """--rule and --scope-from: how a column that is not a SequenceField is read (numbers made in code)."""
    parser.add_argument(
        "--rule",
        help="For a column that is not a SequenceField: the rule its numbers were made by, a NumberRule's import "
        "path (module.RULE) or the label of a SequenceField the rule is shared with.",
    )
    parser.add_argument(
        "--scope-from",
        dest="scope_from",
        metavar="NAME=COLUMN",
        type=scope_pair,
        action="append",
        help="With --rule: the column holding a scope's value, e.g. entity=entity_id (default: the column of the "
        "scope's name). Repeat for each scope.",
    )
