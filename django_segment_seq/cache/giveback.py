"""Giving unused numbers back to their rows when a process ends cleanly, so a restart continues without a gap.

Each give-back is the allocator's compare-and-set in reverse: the row moves back to just before the
first unused number only if it still stands where this process's last block left it (value and
version), that is, if no other process allocated, and nobody edited the row, since. A give-back that
lost that race changes nothing; a process killed never gets here and leaves its gap, as before.
Everything here is bounded and swallows its errors: it runs at interpreter exit.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils import timezone

from django_segment_seq.allocator import callers
from django_segment_seq.allocator.blocks import Unused
from django_segment_seq.allocator.callers import Session
from django_segment_seq.allocator.connections import pool
from django_segment_seq.cache.prefetch import prefetcher
from django_segment_seq.cache.range_cache import ranges
from django_segment_seq.conf import app_settings
from django_segment_seq.db.bounded import write_transaction
from django_segment_seq.db.driver_errors import one_line
from django_segment_seq.db.statements import SQLITE_BUSY_TIMEOUT, sqlite_set_busy_timeout, statements_for

logger = logging.getLogger("django_segment_seq")

# Seconds a clean exit spends at most waiting for background fetches and giving numbers back.
EXIT_BUDGET = 5.0


def give_back(*, exiting: bool = False) -> int:
    """Give the unused rest of this process's cached ranges back to their rows; returns the numbers given back.

    Background fetches are waited for first (at exit they are stopped for good), so a block in flight
    goes back too. Afterwards this process fetches new blocks: nothing given back is handed out by it.
    """

    try:
        if ranges.is_empty() or not app_settings()["GIVE_BACK_UNUSED"]:
            return 0
        deadline = time.monotonic() + EXIT_BUDGET
        wait = app_settings()["LOCK_TIMEOUT"]
        if exiting:
            prefetcher.shutdown(min(wait, EXIT_BUDGET / 2))
        else:
            prefetcher.drain(wait)
        runs = ranges.surrender(min(wait, EXIT_BUDGET / 2))
    except Exception:
        logger.warning("Giving unused sequence numbers back failed; they stay a gap.", exc_info=True)
        return 0
    given = 0
    by_alias: dict[str, list[tuple[str, Unused]]] = {}
    for alias, name, run in runs:
        by_alias.setdefault(alias, []).append((name, run))
    for alias, named in by_alias.items():
        given += _give_back_on(alias, named, wait, deadline)
    return given


def _give_back_on(alias: str, named: list[tuple[str, Unused]], wait: float, deadline: float) -> int:
    """One alias's give-backs: on the caller's own connection when it is open in autocommit, else a private one.

    The first database error ends them (the rest stay gaps); a broken own connection hands over to a private one.
    """

    try:
        caller = connections[alias]
        if caller.vendor == "sqlite" and any(callers.known_to_hold(caller, name) for name, _run in named):
            # This thread's own transaction holds the file's write lock: a private connection would wait in vain.
            return 0
        if caller.connection is not None and callers.session(caller) is Session.IDLE:
            try:
                return _send(caller, named, wait, deadline, on_caller=True)
            except (OperationalError, InterfaceError):
                if caller.is_usable():
                    raise  # the row or the lock said no, not the session: a private one would wait again
                # The session is gone (a restarted server): a private one tries; what moved will not move twice.
        with pool.borrow(alias) as connection:
            return _send(connection, named, wait, deadline)
    except (DatabaseError, InterfaceError) as exc:
        # The database is away (shut down, restarted, unreachable): a fact of the exit, said in one line.
        logger.warning("Giving unused sequence numbers back on %r failed (%s); they stay a gap.", alias, one_line(exc))
        return 0
    except Exception:
        logger.warning("Giving unused sequence numbers back on %r failed; they stay a gap.", alias, exc_info=True)
        return 0


def _send(
    connection: BaseDatabaseWrapper,
    named: list[tuple[str, Unused]],
    wait: float,
    deadline: float,
    *,
    on_caller: bool = False,
) -> int:
    given = 0
    sql = statements_for(connection, wait)
    with (
        connection.cursor() as cursor,
        _bounded_busy_wait(cursor, connection.vendor, wait),
        write_transaction(cursor, sql, callers=on_caller),
    ):
        for name, run in named:
            if time.monotonic() >= deadline:
                logger.info("Sequence %r: no time left to give numbers %d+ back.", name, run.first)
                continue
            now = connection.ops.adapt_datetimefield_value(timezone.now())
            cursor.execute(sql.give_back, [run.first - 1, now, name, run.value, run.version])
            if cursor.rowcount == 1:
                given += run.value - run.first + 1
                logger.debug("Sequence %r: giving numbers %d to %d back.", name, run.first, run.value)
            else:
                logger.debug("Sequence %r: moved since; numbers %d+ stay a gap.", name, run.first)
    if not callers.committed(connection):
        # Autocommit turned off on the session behind Django's back: never leave the rows locked.
        connection.connection.rollback()
        logger.warning("Giving sequence numbers back could not commit on %r; they stay a gap.", connection.alias)
        return 0
    return given


@contextmanager
def _bounded_busy_wait(cursor: Any, vendor: str, seconds: float) -> Iterator[None]:
    """SQLite: wait at most `seconds` for the write lock (not the connection's own timeout), then restore it."""
    if vendor != "sqlite":
        yield
        return
    cursor.execute(SQLITE_BUSY_TIMEOUT)
    previous = int(cursor.fetchone()[0])
    cursor.execute(sqlite_set_busy_timeout(max(1, round(seconds * 1000))))
    try:
        yield
    finally:
        cursor.execute(sqlite_set_busy_timeout(previous))


def _at_exit() -> None:
    """Never raises: an exit must not fail, or wait long, for numbers that would otherwise only be a gap."""
    with contextlib.suppress(BaseException):
        give_back(exiting=True)


atexit.register(_at_exit)
