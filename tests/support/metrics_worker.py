"""A worker process for the metrics tests: takes numbers with the Prometheus export on, then writes them and figures.

Run as `python -m tests.support.metrics_worker NAME COUNT OUT`, with PROMETHEUS_MULTIPROC_DIR, SEGMENT_SEQ_TEST_SETTINGS
('{"METRICS": true}') and the test database in the environment. Its last range's numbers reach the
exported counters at exit, as a gunicorn worker's do.
"""

import dataclasses
import json
import os
import sys


def main(name: str, count: int, out: str) -> None:
    import django

    django.setup()
    from django_segment_seq import next_value, sequence_stats

    numbers = [next_value(name) for _ in range(count)]
    figures = {f"{alias}/{seq}": dataclasses.asdict(stats) for (alias, seq), stats in sequence_stats().items()}
    with open(out, "w") as fh:
        json.dump({"pid": os.getpid(), "numbers": numbers, "stats": figures}, fh)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
