"""What every subcommand of `manage.py segment_seq` is: a name, a help line, its arguments, the database whose
locks it waits for, its work; and the output and argument helpers they share."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, ClassVar

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.db import models

from django_segment_seq.db.routing import sequence_database
from django_segment_seq.db.rownames import validate_sequence_name
from django_segment_seq.fields.labels import UnknownFieldLabel, model_and_name

# --database, for subcommands that work on this app's Sequence table.
SEQUENCE_TABLE_DATABASE = (
    "The database whose Sequence table to use (default: SEGMENT_SEQ['DATABASE'], else the routers)."
)
# --database, for subcommands that read or write a model's rows.
MODEL_ROWS_DATABASE = "The database holding the model's rows (default: where the routers send them)."


class Subcommand:
    """One subcommand: `name` and `help` as `segment_seq --help` lists them, `add_arguments()`, `handle()`.

    `database_help` set gives it a `--database` option, described so; `database()` names the alias whose lock
    waits the command bounds by LOCK_TIMEOUT while it runs.
    """

    name: ClassVar[str]
    help: ClassVar[str]
    database_help: ClassVar[str | None] = SEQUENCE_TABLE_DATABASE
    # The work, given the parsed options by keyword (each subcommand names those it takes).
    handle: Callable[..., None]

    def __init__(self, command: BaseCommand) -> None:
        self.command = command

    @property
    def stdout(self) -> OutputWrapper:
        return self.command.stdout

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        """The subcommand's own arguments; Django's global ones and --database are added for it."""

    def database(self, database: str | None) -> str:
        """The alias of the Sequence table the subcommand works on (or waits for)."""
        return sequence_database(database)

    def write_json(self, data: Any) -> None:
        self.stdout.write(json.dumps(data, indent=2, default=str))

    def write_table(self, table: list[tuple[str, ...]]) -> None:
        """Rows of cells in left-aligned columns, the first row being the heading."""
        widths = [max(len(str(line[i])) for line in table) for i in range(len(table[0]))]
        for line in table:
            self.stdout.write(
                "  ".join(str(cell).ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
            )


def global_options() -> CommandParser:
    """Django's options of every command (--verbosity, --settings, --no-color, ...), built by Django itself, as a
    parent parser for each subcommand, so they may also follow the subcommand as Django's commands take them.

    Their defaults are suppressed: a subparser's default would overwrite a value given before the subcommand.
    """
    parser = BaseCommand().create_parser("manage.py", "segment_seq", add_help=False)
    for action in parser._actions:  # argparse's list of them, as Django's call_command reads it
        action.default = argparse.SUPPRESS
    return parser


def sequence_name(text: str) -> str:
    """An argument naming a sequence, in the name grammar every entry point enforces (argparse's `type`)."""
    try:
        validate_sequence_name(text)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(" ".join(exc.messages)) from None
    return text


def resolve_field(label: str) -> tuple[type[models.Model], str]:
    """The model and field name of APP_LABEL.Model.field, or a CommandError saying what is wrong with it."""
    try:
        return model_and_name(label)
    except UnknownFieldLabel as exc:
        raise CommandError(str(exc)) from None


def validation_messages(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
    return " ".join(exc.messages)


def sentence(text: object) -> str:
    """`text` ending with one full stop, whether it had one or not, so messages can be joined without "..".."""
    return str(text).rstrip().rstrip(".") + "."
