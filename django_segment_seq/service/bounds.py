"""Every statement of the service's checks waits at most LOCK_TIMEOUT for a lock (a client's row or a table held by
another session), on each connection they may use; a check answered from memory sends none and pays nothing."""

from __future__ import annotations

from django.db import router

from django_segment_seq.db.bounded import BoundWhenUsed, bounded_when_used
from django_segment_seq.db.routing import sequence_database
from django_segment_seq.service.models import Client, RateWindow


def checks_bounded() -> BoundWhenUsed:
    """LOCK_TIMEOUT for the block's statements on the databases of the clients, the rates and the sequences."""
    aliases = [router.db_for_read(Client), router.db_for_write(Client), router.db_for_write(RateWindow)]
    return bounded_when_used([*aliases, sequence_database()])
