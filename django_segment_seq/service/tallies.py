"""Each client's requests, numbers and last use, added up in memory and written at most once a second per process."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from django.db import DatabaseError, connections, router
from django.db.models import F
from django.utils import timezone

from django_segment_seq.db.bounded import bounded_when_used, own_savepoint
from django_segment_seq.service.models import Client
from django_segment_seq.service.outages import Outage

logger = logging.getLogger("django_segment_seq.service")
FLUSH_EVERY = 1.0
writes = Outage("the usage counts cannot be written")


@dataclass
class Tally:
    requests: int = 0
    numbers: int = 0


class Usage:
    """Counts per client id since the last write; a crash loses at most the last second's counts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tallies: dict[int, Tally] = {}
        self.flushed = time.monotonic()

    def note(self, client_id: int, numbers: int) -> None:
        with self.lock:
            tally = self.tallies.get(client_id) or self.tallies.setdefault(client_id, Tally())
            tally.requests += 1
            tally.numbers += numbers

    def due(self) -> bool:
        return bool(self.tallies) and time.monotonic() - self.flushed >= FLUSH_EVERY

    def flush(self) -> None:
        """Write the counts (sync code only); a failure keeps them for the next write.

        Each lock wait is bounded by LOCK_TIMEOUT (a client's row held by another session fails its write, not the
        request that made the write due), and inside a caller's transaction each write is a savepoint of its own.
        """
        with self.lock:
            unwritten, self.tallies = self.tallies, {}
            self.flushed = time.monotonic()
        now = timezone.now()
        try:
            connection = connections[router.db_for_write(Client)]
            with bounded_when_used([connection.alias]):
                for client_id, tally in list(unwritten.items()):
                    try:
                        with own_savepoint(connection):
                            Client.objects.filter(pk=client_id).update(
                                requests=F("requests") + tally.requests,
                                numbers=F("numbers") + tally.numbers,
                                last_used_at=now,
                            )
                    except DatabaseError as exc:  # a row held past LOCK_TIMEOUT: kept, the others written
                        writes.failed(f"client {client_id}", exc)
                    else:
                        del unwritten[client_id]
        except Exception as exc:  # noqa: BLE001 - a database that does not answer: kept, logged once an outage
            writes.failed(f"{len(unwritten)} clients' counts", exc)
        for client_id, tally in unwritten.items():
            self.keep(client_id, tally)
        if not unwritten:
            failures = writes.ended()
            if failures is not None:
                logger.warning("ID service: the usage counts are written again, after %d failed writes", failures)

    def keep(self, client_id: int, tally: Tally) -> None:
        """Add counts not written back to those noted since, for the next write."""
        with self.lock:
            kept = self.tallies.setdefault(client_id, Tally())
            kept.requests += tally.requests
            kept.numbers += tally.numbers


usage = Usage()
