"""Worker ids leased from the WorkerLease table: taken, renewed and released with conditional statements.

Each statement runs on a private autocommit connection (dbconn.pool), so a lease is committed the
moment it is taken, whatever transaction the caller is in.
"""

from __future__ import annotations

import os
import random
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import router

from django_segment_seq.allocator.connections import pool
from django_segment_seq.conf import app_settings
from django_segment_seq.db.history import server_history
from django_segment_seq.snowflake.exceptions import WorkerIdsExhausted
from django_segment_seq.snowflake.layouts import Layout
from django_segment_seq.snowflake.layouts import instant_of_ms as _instant
from django_segment_seq.snowflake.models import WorkerLease
from django_segment_seq.snowflake.sql import statements

# Rounds of read-then-take lost to other processes before the layout counts as exhausted.
TAKE_ROUNDS = 20
# Free worker ids tried per round: a few of the lowest, so the table stays small and racers spread out.
TRIES_PER_ROUND = 3

# Lease statements this process sent (take, renew, release), for benchmarks that count round trips.
round_trips = 0


@dataclass(frozen=True)
class Lease:
    """A worker id this process holds; `floor_ms` is the time ceiling the previous holder left on the row.

    `fenced_until_ms` (0: none) is the end of a failover fence: no id may carry an earlier time.
    """

    layout: str
    worker_id: int
    token: str
    alias: str
    floor_ms: int
    ceiling_ms: int
    fenced_until_ms: int = 0


def failover_fence(rows: list[tuple[Any, ...]], history: str, db_now: int, ttl_ms: int) -> tuple[int, int]:
    """(the failover time to record on a row taken now, the time before which its ids must not start; 0: none).

    A lease taken or renewed on the old primary in the stretch an asynchronous standby never received is
    missing on the new one, while its holder goes on making ids until its next renewal finds the row gone,
    at most a lease time later. So for a lease time after a failover is first noticed (a write on this
    history meeting rows of another), a worker id's ids start only once that time has passed.
    """
    noticed = max((row[6] for row in rows if row[5] == history), default=0)
    if not noticed and history and any(row[5] and row[5] != history for row in rows):
        noticed = db_now  # this process is the first to meet the failover
    return noticed, noticed + ttl_ms if noticed and noticed + ttl_ms > db_now else 0


@dataclass(frozen=True)
class LiveLease:
    """A lease row as the database's clock judges it, as a management command or the admin shows it.

    `expires_in` is seconds left by the database's clock: negative once expired; `expires_at` is None
    for a worker id given back (released).
    """

    layout: str
    worker_id: int
    owner: str
    acquired_at: datetime | None
    renewed_at: datetime | None
    expires_at: datetime | None
    expires_in: float

    @property
    def live(self) -> bool:
        return self.expires_in > 0

    @property
    def status(self) -> str:
        """Live; expired (its holder stopped renewing, so any process may take it); or released at the holder's exit."""
        if self.live:
            return "live"
        return "expired" if self.expires_at is not None else "released"


def lease_database() -> str:
    """The alias holding the WorkerLease table: SEGMENT_SEQ['DATABASE'], else where the routers write it."""

    return app_settings()["DATABASE"] or router.db_for_write(WorkerLease)


def owner_label() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:255]


def acquire(layout: Layout, alias: str, ttl_ms: int, max_workers: int, wall_ms: int) -> Lease:
    """Take a free worker id: an expired row by a version-checked UPDATE, else a missing one by INSERT.

    `wall_ms` is the latest time (by this host's clock) the first ids may carry; the row's time ceiling
    becomes `ttl_ms` past it, or past the previous holder's ceiling when that is later.
    """
    global round_trips
    token = uuid.uuid4().hex
    owner = owner_label()
    with pool.borrow(alias) as connection:
        sql = statements(connection)
        history = server_history(connection)
        with connection.cursor() as cursor:
            for _round in range(TAKE_ROUNDS):
                round_trips += 1
                cursor.execute(sql.select_rows, [layout.name])
                rows = [row for row in cursor.fetchall() if row[0] < max_workers]
                if rows:
                    db_now = rows[0][4]
                else:
                    cursor.execute(sql.select_now)
                    db_now = cursor.fetchone()[0]
                # Expired rows whose last holder's ids are behind our clock first: no wait before the first id.
                free = [row for row in rows if row[1] <= db_now]
                random.shuffle(free)
                free.sort(key=lambda row: row[2] > wall_ms)
                # FAILOVER_SKIP 0 turns the failover fences off, the Sequence table's and this one.
                fenced = app_settings()["FAILOVER_SKIP"] > 0
                noticed, fence = failover_fence(rows, history, db_now, ttl_ms) if fenced else (0, 0)
                for worker_id, _expires, floor_ms, version, _now, _history, _noticed in free[:TRIES_PER_ROUND]:
                    floor_ms = max(floor_ms, fence)
                    ceiling_ms = max(floor_ms, wall_ms) + ttl_ms
                    round_trips += 1
                    cursor.execute(
                        sql.take_expired,
                        [owner, token, ceiling_ms, ttl_ms, history, noticed, layout.name, worker_id, version],
                    )
                    if cursor.rowcount == 1:
                        return Lease(layout.name, worker_id, token, alias, floor_ms, ceiling_ms, fence)
                present = {row[0] for row in rows}
                missing = [worker_id for worker_id in range(max_workers) if worker_id not in present]
                for worker_id in random.sample(missing[: TRIES_PER_ROUND * 2], min(len(missing), TRIES_PER_ROUND)):
                    ceiling_ms = max(fence, wall_ms) + ttl_ms
                    round_trips += 1
                    cursor.execute(
                        sql.insert_if_missing,
                        [layout.name, worker_id, owner, token, ttl_ms, ceiling_ms, history, noticed],
                    )
                    if cursor.rowcount == 1:
                        return Lease(layout.name, worker_id, token, alias, fence, ceiling_ms, fence)
                if not free and not missing:
                    raise WorkerIdsExhausted(layout.name, sum(1 for row in rows if row[1] > db_now), max_workers)
                time.sleep(random.uniform(0.001, 0.02))
            cursor.execute(sql.select_rows, [layout.name])
            rows = [row for row in cursor.fetchall() if row[0] < max_workers]
    live = sum(1 for row in rows if row[1] > row[4])
    raise WorkerIdsExhausted(layout.name, live, max_workers)


def renew(lease: Lease, ttl_ms: int, ceiling_ms: int) -> bool:
    """Push the lease's expiry `ttl_ms` past the database's now; False when the row is no longer ours."""
    global round_trips
    round_trips += 1
    with pool.borrow(lease.alias) as connection, connection.cursor() as cursor:
        history = server_history(connection)
        cursor.execute(
            statements(connection).renew,
            [ttl_ms, ceiling_ms, history, history, lease.layout, lease.worker_id, lease.token],
        )
        return bool(cursor.rowcount == 1)


def release(lease: Lease, ceiling_ms: int) -> None:
    """Free the worker id at once, leaving the time of our last id for the next holder to start after."""
    global round_trips
    round_trips += 1
    with pool.borrow(lease.alias) as connection, connection.cursor() as cursor:
        history = server_history(connection)
        cursor.execute(
            statements(connection).release, [ceiling_ms, history, history, lease.layout, lease.worker_id, lease.token]
        )


def live_worker_leases(*, using: str | None = None) -> list[LiveLease]:
    """Every lease of every layout not expired by the database's clock, ordered by layout and worker id."""
    return _read(using, everything=False)


def worker_leases(*, using: str | None = None) -> list[LiveLease]:
    """Every lease row, live, expired or released, ordered by layout and worker id: what operators look at."""
    return _read(using, everything=True)


def _read(using: str | None, *, everything: bool) -> list[LiveLease]:
    alias = using or lease_database()
    with pool.borrow(alias) as connection, connection.cursor() as cursor:
        sql = statements(connection)
        cursor.execute(sql.select_all if everything else sql.select_live)
        rows = cursor.fetchall()
    return [
        LiveLease(
            layout, worker_id, owner, _instant(acquired), _instant(renewed), _instant(expires), (expires - now) / 1000
        )
        for layout, worker_id, owner, acquired, renewed, expires, now in rows
    ]
