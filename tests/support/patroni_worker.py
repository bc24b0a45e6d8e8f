"""A worker for the Patroni failover test: takes numbers at full speed and notes when each pause began and ended.

Run as `python -m tests.support.patroni_worker HOSTS PORTS DATABASE OUT STOP SETTINGS_JSON`. It writes to OUT
{"numbers": [...], "errors": {name: count}, "causes": {name: count}, "first": t, "gaps": [[t_before, t_after,
index_after], ...], "longest_call": s}, with times on the machine-wide monotonic clock the test reads too. It touches
OUT.ready once it has its first number, so the test crashes a member only once every worker is taking numbers (a
worker started slowly on a busy machine would otherwise take its first number only after the failover).
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time

from tests.support.failover_worker import configure

# A pause longer than this between two numbers is noted.
GAP = 0.2


def take(out: str, stop: str) -> None:
    from django_segment_seq import next_value  # after configure(): the app needs settings to import

    numbers: list[int] = []
    errors: collections.Counter[str] = collections.Counter()
    causes: collections.Counter[str] = collections.Counter()
    gaps: list[tuple[float, float, int]] = []
    first = last = 0.0
    longest_call = 0.0
    parent = os.getppid()
    while not os.path.exists(stop) and os.getppid() == parent:  # the test killed: never loop on as an orphan
        began = time.monotonic()
        try:
            number = next_value("failover")
        except Exception as exc:  # noqa: BLE001 - every kind is counted: the test allows SequenceUnavailable only
            errors[type(exc).__name__] += 1
            causes[type(exc.__cause__).__name__] += 1
            continue
        finally:
            longest_call = max(longest_call, time.monotonic() - began)
        now = time.monotonic()
        if not numbers:
            first = now
            open(out + ".ready", "w").close()
        elif now - last > GAP:
            gaps.append((last, now, len(numbers)))
        numbers.append(number)
        last = now
    with open(out, "w") as fh:
        json.dump(
            {
                "numbers": numbers,
                "errors": dict(errors),
                "causes": dict(causes),
                "first": first,
                "last": last,
                "gaps": gaps,
                "longest_call": longest_call,
            },
            fh,
        )


if __name__ == "__main__":
    hosts, ports, database, out, stop, segment_seq = sys.argv[1:7]
    configure(hosts, ports, database, json.loads(segment_seq))
    take(out, stop)
