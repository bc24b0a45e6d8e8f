"""Whether a PostgreSQL primary may hand out numbers now: its standbys confirm, within STANDBY_LAG, what it wrote.

An old primary cut off from its standby but still reached by some application servers goes on committing ranges
that the promoted standby never receives; the failover fence (FAILOVER_SKIP) covers them only up to its size.
So where a primary has standbys, the transaction that takes a range (or a gapless number) first counts the
standbys streaming and either caught up with the primary's flushed WAL or answering within STANDBY_LAG seconds
with a flush lag below it. A range taken with one confirming records so in the row's history (STANDBY_MARK), and
the row's next range on that same history needs one too: a primary cut off from its standby stops handing out
numbers STANDBY_LAG seconds after the standby's last answer, while a promoted standby, on a history of its own,
hands them out alone until a standby of its own confirms them.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from django_segment_seq.conf import app_settings
from django_segment_seq.db.history import STANDBY_MARK, same_history, without_mark

# Standbys streaming and, either caught up with what this primary flushed, or answering and flushing within
# STANDBY_LAG seconds (flush_lsn: what a promotion of the standby starts from); and whether one is synchronous.
CONFIRMING_STANDBYS = (
    "SELECT count(*) FILTER (WHERE state = 'streaming' AND ("
    "flush_lsn >= pg_current_wal_flush_lsn() "
    "OR (reply_time >= clock_timestamp() - make_interval(secs => %s) "
    "AND coalesce(flush_lag, interval '0') <= make_interval(secs => %s)))), "
    "coalesce(bool_or(sync_state IN ('sync', 'quorum')), false) FROM pg_stat_replication"
)


def streaming_standbys(connection: BaseDatabaseWrapper) -> int:
    """How many standbys stream from the server behind `connection` now (for the system check)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")
        return int(cursor.fetchone()[0])


# Standbys streaming, those of them whose confirmation a commit waits for, and whether commits wait at all.
REPLICATION_MODE = (
    "SELECT count(*) FILTER (WHERE state = 'streaming'), "
    "count(*) FILTER (WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')), "
    "current_setting('synchronous_commit') FROM pg_stat_replication"
)


def asynchronous_replication(connection: BaseDatabaseWrapper) -> str | None:
    """Why a commit on the primary behind `connection` may be missing from a standby promoted after it (for the
    system check on gapless numbers); None when no standby streams or every commit waits for one."""
    with connection.cursor() as cursor:
        cursor.execute(REPLICATION_MODE)
        streaming, synchronous, commit = cursor.fetchone()
    if int(streaming) == 0:
        return None
    if int(synchronous) == 0:
        return f"its {streaming} streaming standby(s) are asynchronous (synchronous_standby_names names none of them)"
    if commit in ("off", "local"):
        return f"synchronous_commit is {commit!r}, so commits do not wait for its synchronous standby"
    return None


class StandbyUnconfirmed(Exception):
    """Fewer standbys than required confirm this primary's writes within STANDBY_LAG: no number may be taken here."""


def watched(connection: BaseDatabaseWrapper) -> bool:
    """Whether ranges on this connection ask for confirming standbys: a PostgreSQL alias that STANDBYS names, or
    whose HOST lists more than one host (libpq's failover list: a primary with a standby)."""
    if connection.vendor != "postgresql":
        return False
    if connection.alias in (app_settings()["STANDBYS"] or {}):
        return True
    return "," in str(connection.settings_dict.get("HOST") or "")


def required_standbys(connection: BaseDatabaseWrapper, stored: str, current: str) -> int:
    """How many standbys must confirm: STANDBYS[alias] when set, else one when the row's last range was confirmed
    by a standby on this same server history, else none."""
    configured = app_settings()["STANDBYS"] or {}
    if connection.alias in configured:
        return int(configured[connection.alias])
    return 1 if without_mark(stored)[1] and same_history(stored, current) else 0


def confirmed_history(connection: BaseDatabaseWrapper, cursor: Any, stored: str, current: str) -> tuple[str, int]:
    """Inside the transaction about to take numbers of a row last written with history `stored`: the history to
    record (`current`, marked when an asynchronous standby confirms) and the statements sent; StandbyUnconfirmed
    when fewer standbys than required confirm in time.

    A synchronous standby marks nothing: every commit waits for it (Patroni's synchronous_mode promotes no other),
    so a range is never lost, and the primary may go on alone when it is dropped (Patroni empties
    synchronous_standby_names when its standby dies).
    """
    if not watched(connection):
        return current, 0
    lag = float(app_settings()["STANDBY_LAG"])
    cursor.execute(CONFIRMING_STANDBYS, [lag, lag])
    confirming, synchronous = cursor.fetchone()
    if synchronous and connection.alias not in (app_settings()["STANDBYS"] or {}):
        return current, 1
    required = required_standbys(connection, stored, current)
    if int(confirming) < required:
        raise StandbyUnconfirmed(
            f"{confirming} of the {required} standbys required confirm this primary's writes within {lag:g} s "
            "(STANDBY_LAG): it may be cut off from them, and numbers it handed out could come again after a promotion"
        )
    return (current + STANDBY_MARK if int(confirming) > 0 else current), 1
