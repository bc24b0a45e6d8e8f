"""`segment_seq leases`: the Snowflake worker id leases, their holders and the time left."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from django_segment_seq.management.subcommands.base import Subcommand
from django_segment_seq.snowflake import listing as lease_listing
from django_segment_seq.snowflake.leases import lease_database, worker_leases


class Leases(Subcommand):
    name = "leases"
    help = "Snowflake worker id leases: holder, live or expired, time left."
    database_help = "The database whose WorkerLease table to read (default: SEGMENT_SEQ['DATABASE'], else the routers)."

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument("--live", action="store_true", help="Only leases not expired by the database's clock.")
        parser.add_argument("--json", dest="as_json", action="store_true", help="Print JSON for scripts.")

    def database(self, database: str | None) -> str:
        return database or lease_database()

    def handle(self, *, live: bool = False, as_json: bool = False, database: str | None = None, **options: Any) -> None:
        alias = self.database(database)
        leases = [lease for lease in worker_leases(using=alias) if lease.live or not live]
        if as_json:
            self.write_json({"database": alias, "leases": [lease_listing.as_dict(lease) for lease in leases]})
            return
        if not leases:
            self.stdout.write(
                f"No {'live ' if live else ''}worker leases in database {alias!r}: a process takes one "
                "at its first Snowflake id."
            )
            return
        self.write_table(lease_listing.table(leases))
