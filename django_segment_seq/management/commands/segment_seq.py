"""manage.py segment_seq: dispatches to its subcommands, one module each under management/subcommands/."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections
from django.utils.module_loading import import_string

from django_segment_seq.allocator.attempts import is_lock_timeout
from django_segment_seq.conf import app_settings
from django_segment_seq.db.bounded import session_bounds
from django_segment_seq.management.subcommands.base import Subcommand, global_options, sentence

# The subcommands in the order `segment_seq --help` lists them: the dotted path of each one's Subcommand class.
SUBCOMMANDS = (
    "django_segment_seq.management.subcommands.list_.ListSequences",
    "django_segment_seq.management.subcommands.show.ShowSequence",
    "django_segment_seq.management.subcommands.set_.SetSequence",
    "django_segment_seq.management.subcommands.sync.Sync",
    "django_segment_seq.management.subcommands.backfill.Backfill",
    "django_segment_seq.management.subcommands.gaps.Gaps",
    "django_segment_seq.management.subcommands.leases.Leases",
    "django_segment_seq.management.subcommands.import_sequences.ImportSequences",
    "django_segment_seq.management.subcommands.advance.Advance",
    "django_segment_seq.management.subcommands.reshape.Reshape",
    "django_segment_seq.management.subcommands.client.ClientCommand",
    "django_segment_seq.management.subcommands.redis_check.RedisCheck",
    "django_segment_seq.management.subcommands.redis_identity.RedisIdentity",
)


@cache
def subcommands() -> dict[str, type[Subcommand]]:
    """Each subcommand's class by its name."""
    found: dict[str, type[Subcommand]] = {}
    for path in SUBCOMMANDS:
        subcommand = import_string(path)
        if not (isinstance(subcommand, type) and issubclass(subcommand, Subcommand)):
            raise TypeError(f"{path} is not a Subcommand class")
        found[subcommand.name] = subcommand
    return found


class Command(BaseCommand):
    help = (
        "List, show and tune sequences; move one past the values stored in its column (sync), fill empty values "
        "(backfill), list the gaps of its series (gaps) or the Snowflake worker leases (leases), and carry "
        "django-sequences' rows over (import-sequences); move every row forward after a restore (advance); "
        "the ID service's clients (client); check a Redis (redis-check)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        known = subcommands()
        commands = parser.add_subparsers(dest="subcommand", required=True, metavar="{" + ",".join(known) + "}")
        shared = global_options()
        for name, subcommand in known.items():
            sub = commands.add_parser(name, help=subcommand.help, description=subcommand.help, parents=[shared])
            if subcommand.database_help is not None:
                sub.add_argument("--database", help=subcommand.database_help)
            subcommand.add_arguments(sub)

    def handle(self, *args: Any, subcommand: str, database: str | None = None, **options: Any) -> None:
        if database is not None and database not in connections:
            raise CommandError(f"--database {database!r} names no database in settings.DATABASES.")
        runner = subcommands()[subcommand](self)
        connection = connections[runner.database(database)]
        try:
            with session_bounds(connection):
                runner.handle(database=database, **options)
        except DatabaseError as exc:
            if not is_lock_timeout(exc):
                raise
            raise CommandError(
                f"The sequence table on database {connection.alias!r} stayed locked by another session for over "
                f"LOCK_TIMEOUT ({app_settings()['LOCK_TIMEOUT']} s): {sentence(exc)} Nothing was changed; "
                "try again later."
            ) from exc
