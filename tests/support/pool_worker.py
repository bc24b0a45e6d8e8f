"""A process whose Django connection comes from Django's own PostgreSQL pool; prints one JSON line.

Run as `python -m tests.support.pool_worker SCENARIO NAME` with SEGMENT_SEQ_TEST_PG_POOL set: `leak` takes
ranges inside atomic() (on the app's private connections), lets them idle out, then reads lock_timeout on every
connection the project's pool hands out; `starve` takes a range inside atomic() while the project's only pooled
connection is the one in use.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import django

django.setup()

from django.db import connection, connections, transaction  # noqa: E402

from django_segment_seq import next_value  # noqa: E402
from django_segment_seq.exceptions import SequenceUnavailable  # noqa: E402


def leak(name: str) -> dict[str, Any]:
    numbers: list[int] = []
    with transaction.atomic():  # the caller's transaction: each range is taken on a private connection
        numbers += [next_value(name) for _ in range(9)]
    time.sleep(0.6)  # past CONNECTION_MAX_IDLE: the app closes its idle private connections
    from django_segment_seq.allocator.connections import pool

    pool.close_stale()
    connection.close()
    seen: list[str] = []
    pooled = connection.pool
    assert pooled is not None
    stats = pooled.get_stats()
    for _ in range(stats.get("pool_size", 0) + 2):
        # Every connection the pool holds, each checked out at once so none is handed out twice.
        held = [pooled.getconn() for _ in range(pooled.get_stats().get("pool_size", 1))]
        for raw in held:
            seen.append(raw.execute("SHOW lock_timeout").fetchone()[0])
        for raw in held:
            pooled.putconn(raw)
    return {"numbers": numbers, "lock_timeouts": sorted(set(seen)), "pool_size": pooled.get_stats().get("pool_size")}


def starve(name: str) -> dict[str, Any]:
    numbers: list[int] = []
    errors: list[str] = []
    started = time.monotonic()
    with transaction.atomic():  # holds the pool's only connection for the whole block
        connection.ensure_connection()
        try:
            numbers += [next_value(name) for _ in range(7)]
        except SequenceUnavailable as exc:
            errors.append(str(exc))
    waited = time.monotonic() - started
    connection.close()  # back to the pool, for the request threads below

    # Request threads hold the pool's connections meanwhile; prefetch and private connections must not need them.
    def request(out: list[int]) -> None:
        with transaction.atomic():
            out.append(next_value(name))
        connections.close_all()

    outs: list[list[int]] = [[] for _ in range(3)]
    threads = [threading.Thread(target=request, args=(out,)) for out in outs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    numbers += [n for out in outs for n in out]
    return {"numbers": numbers, "errors": errors, "waited": waited}


if __name__ == "__main__":
    print(json.dumps({"leak": leak, "starve": starve}[sys.argv[1]](sys.argv[2])))
