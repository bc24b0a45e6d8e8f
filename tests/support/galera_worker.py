"""A worker for the Galera tests: takes numbers of sequence NAME at full speed through one node until told to stop.

Run as `python -m tests.support.galera_worker PORT DATABASE NAME OUT STOP SETTINGS_JSON`: Django's connection goes
to the node on PORT, SEGMENT_SEQ is the JSON (SERVERS included, if any). Writes {"numbers": [...], "errors":
{name: count}, "longest_pause": s, "pauses": [[start, seconds], ...], "figures": {ranges_fetched, retries,
failures, busy}} to OUT, each pause's start on the monotonic clock, which the parent shares. It touches OUT.ready
once it has its first number, so a test's fault comes only once every worker is taking numbers.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time

from tests.support.failover_worker import configure_django

# A call that took longer than this is recorded as a pause, with when it began.
PAUSE = 0.5


def configure(port: str, database: str, segment_seq: dict[str, object]) -> None:
    configure_django(
        {
            "ENGINE": "django.db.backends.mysql",
            "HOST": "127.0.0.1",
            "PORT": port,
            "USER": "root",
            "NAME": database,
            "OPTIONS": {"charset": "utf8mb4", "connect_timeout": 2},
        },
        segment_seq,
    )


def take(out: str, stop: str, name: str) -> None:
    from django_segment_seq import next_value

    numbers: list[int] = []
    errors: collections.Counter[str] = collections.Counter()
    messages: list[str] = []
    pauses: list[tuple[float, float]] = []
    started = last = time.monotonic()
    longest = 0.0
    while not os.path.exists(stop):
        try:
            numbers.append(next_value(name))
            if len(numbers) == 1:
                open(out + ".ready", "w").close()
        except Exception as exc:  # noqa: BLE001 - every kind is counted: the tests allow none
            errors[type(exc).__name__] += 1
            if len(messages) < 5:
                messages.append(f"{time.monotonic() - started:.2f} s: {exc}")
            time.sleep(0.01)
            continue
        now = time.monotonic()
        if now - last > PAUSE:
            pauses.append((last, now - last))
        longest, last = max(longest, now - last), now
    from django_segment_seq import sequence_stats

    stats = sequence_stats().get(("default", name))
    figures = {key: getattr(stats, key, 0) for key in ("ranges_fetched", "retries", "failures", "busy")}
    with open(out, "w") as fh:
        json.dump(
            {"numbers": numbers, "errors": dict(errors), "messages": messages, "longest_pause": longest,
             "pauses": pauses, "seconds": time.monotonic() - started, "figures": figures},
            fh,
        )  # fmt: skip


if __name__ == "__main__":
    port, database, name, out, stop, segment_seq = sys.argv[1:7]
    configure(port, database, json.loads(segment_seq))
    take(out, stop, name)
