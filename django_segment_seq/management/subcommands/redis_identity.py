"""`segment_seq redis-identity [--renew]`: the identity the Redis tier names this deployment's keys after, and a new
one for a database copied to make another deployment (staging from production's backup) that shares a Redis."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from django_segment_seq.management.subcommands.base import Subcommand
from django_segment_seq.redistier import deployment_id


class RedisIdentity(Subcommand):
    name = "redis-identity"
    help = (
        "Show the identity the Redis tier names this deployment's keys after; --renew mints a new one (run it on a "
        "copy of the database that is to be another deployment, before its app starts)."
    )

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument(
            "--renew", action="store_true", help="Mint a new identity: every row on the tier refills (a gap)."
        )

    def handle(self, *, renew: bool, database: str | None = None, **options: Any) -> None:
        alias = self.database(database)
        if not renew:
            self.stdout.write(f"Redis identity of database {alias!r}: {deployment_id.deployment(alias)}")
            return
        old, new = deployment_id.renew(alias)
        self.stdout.write(
            f"Redis identity of database {alias!r}: {new} (was {old}). Processes running now keep the old one until "
            "they restart: renew before the copy's app starts."
        )
