"""`segment_seq advance`: move every sequence forward by a margin in one transaction, after a restore the
app cannot detect (a data-only restore into the existing table, a physical backup, another server's data)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from django_segment_seq.conf import app_settings
from django_segment_seq.db.bounded import session_bounds
from django_segment_seq.db.table import Sequence
from django_segment_seq.management.redis_states import retire_redis_states
from django_segment_seq.management.subcommands.base import Subcommand, sequence_name


@dataclass(frozen=True, slots=True)
class Move:
    """One row's value before and after; `short` when it had fewer numbers left than the margin."""

    name: str
    before: int
    after: int
    short: bool


def margin_for(value: int, min_value: int, max_value: int, by: int | None, default: int) -> tuple[int, bool]:
    """The new value, and whether the row had fewer numbers left than asked.

    An explicit margin is kept whole (a row with fewer left stops at max_value: exhausted, never repeated). The
    default, FAILOVER_SKIP, is capped as the failover fence caps it: a row with fewer than twice as many left
    skips half of them, so a capped row (a daily number) keeps numbers.
    """
    start = max(value, min_value - 1)
    left = max_value - start
    wanted = by if by is not None else min(default, left // 2)
    short = by > left if by is not None else default > left // 2
    return min(start + wanted, max_value), short


def advance(alias: str, names: list[str], by: int | None, *, dry_run: bool) -> list[Move]:
    """Move the rows (all, or those of `names`) forward in one transaction, each row locked first."""
    if by is not None and by < 1:
        raise CommandError(f"--by must be at least 1, not {by}.")
    if alias not in connections.settings:
        raise CommandError(f"No database {alias!r} in DATABASES.")
    default = int(app_settings()["FAILOVER_SKIP"])
    rows = Sequence._base_manager.using(alias)
    if names:
        rows = rows.filter(Q(name__in=names) | Q(base_name__in=names))
    moves = []
    with session_bounds(connections[alias]), transaction.atomic(using=alias):
        columns = ("pk", "name", "value", "min_value", "max_value")
        found = list(rows.select_for_update().order_by("name").values_list(*columns))
        missing = sorted(set(names) - {name for _pk, name, *_rest in found})
        if missing:
            raise CommandError(f"No sequence named {', '.join(map(repr, missing))} in database {alias!r}.")
        for pk, name, value, min_value, max_value in found:
            after, short = margin_for(value, min_value, max_value, by, default)
            moves.append(Move(name, value, after, short))
            if not dry_run and after != value:
                rows.filter(pk=pk).update(value=after, version=F("version") + 1, modified=timezone.now())
    return moves


class Advance(Subcommand):
    name = "advance"
    help = "After a restore the app cannot see: move every sequence forward by a margin (FAILOVER_SKIP by default)."

    @classmethod
    def add_arguments(cls, parser: CommandParser) -> None:
        parser.add_argument(
            "names",
            nargs="*",
            metavar="NAME",
            type=sequence_name,
            help="Only these sequences (with their periods, scopes).",
        )
        parser.add_argument("--by", type=int, help="Numbers to skip: more than were handed out since the backup.")
        parser.add_argument("--dry-run", action="store_true", help="Show what would move; change nothing.")

    def handle(
        self, *, names: list[str], by: int | None, dry_run: bool, database: str | None = None, **options: Any
    ) -> None:
        alias = self.database(database)
        moves = advance(alias, names, by, dry_run=dry_run)
        retired = [] if dry_run else retire_redis_states(alias, {move.name: move.after for move in moves})
        verb = "would move" if dry_run else "moved"
        for move in moves:
            note = " (fewer numbers left than the margin)" if move.short else ""
            self.stdout.write(f"{move.name}: {verb} from {move.before} to {move.after}{note}")
        ending = ", nothing changed." if dry_run else "."
        self.stdout.write(f"{len(moves)} sequence rows {verb} forward on database {alias!r}{ending}")
        if retired:
            self.stdout.write(f"{len(retired)} rows on the Redis tier: their Redis states emptied (a gap).")
        if not dry_run and moves:
            self.stdout.write(
                "Processes running now keep the ranges they have cached: the margin must cover those too, "
                "or restart them first."
            )
