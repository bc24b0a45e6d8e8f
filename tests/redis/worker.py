"""A worker process for the Redis tier tests: takes numbers of one or more rows for some seconds, then writes them.

python -m tests.redis.worker OUT SECONDS NAME [NAME ...]; the numbers go to OUT as "name number" lines, the
process's tier figures (sequence_stats) to OUT.json.
"""

import json
import os
import sys
import time

import django

django.setup()

from django_segment_seq import next_value, next_values, sequence_stats  # noqa: E402
from django_segment_seq.cache.stats import TIER_FIGURES  # noqa: E402
from django_segment_seq.exceptions import SequenceExhausted  # noqa: E402


def main() -> None:
    out, seconds, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    taken: list[tuple[str, int]] = []
    deadline = time.monotonic() + seconds
    turn = 0
    pause = float(os.environ.get("SEGMENT_SEQ_TEST_PAUSE", "0"))
    while time.monotonic() < deadline:
        name = names[turn % len(names)]
        try:
            if turn % 50 == 49:
                taken += [(name, number) for number in next_values(name, 7)]
            else:
                taken.append((name, next_value(name)))
        except SequenceExhausted:
            break  # a daily row's numbers are all taken: the day is full
        turn += 1
        if pause:
            time.sleep(pause)
        elif turn % 200 == 0:
            time.sleep(0.001)  # leave the other processes and the test some of the 2 cores
    with open(out, "w") as file:
        file.write("\n".join(f"{name} {number}" for name, number in taken))
    figures = {field: 0 for field in (*TIER_FIGURES, "retries", "ranges_fetched")}
    for stats in sequence_stats().values():
        for field in figures:
            figures[field] += getattr(stats, field)
    with open(out + ".json", "w") as file:
        json.dump(figures, file)


if __name__ == "__main__":
    main()
