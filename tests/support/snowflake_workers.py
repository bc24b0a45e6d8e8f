"""Worker processes for the Snowflake tests: each takes a lease and ids one way and reports on stdout and a file.

Run as `python -m tests.support.snowflake_workers MODE OUT LAYOUT COUNT`; SEGMENT_SEQ_TEST_SNOWFLAKE holds JSON
settings merged into SEGMENT_SEQ. Lines on stdout: "ready <worker id>", "done", or "error <class> <message>".
"""

from __future__ import annotations

import json
import os
import sys
import time


def setup() -> None:
    import django

    django.setup()
    extra = json.loads(os.environ.get("SEGMENT_SEQ_TEST_SNOWFLAKE", "{}"))
    if extra:
        from django.conf import settings
        from django.test.utils import override_settings

        override_settings(SEGMENT_SEQ={**settings.SEGMENT_SEQ, **extra}).enable()


def say(*words: object) -> None:
    print(*words, flush=True)


def write(out: str, worker_id: int, ids: list[int]) -> None:
    with open(out, "w") as fh:
        fh.write("\n".join(map(str, [worker_id, *ids])))


def ids_mode(out: str, layout: str, count: int) -> None:
    """Lease, say ready, wait for "go", take `count` ids, write them, say done, wait for "exit", release at exit."""
    from django_segment_seq import next_snowflake
    from django_segment_seq.snowflake.generator import held_worker_ids

    first = next_snowflake(layout=layout)
    worker_id = held_worker_ids()[layout]
    say("ready", worker_id)
    sys.stdin.readline()
    ids = [first] + [next_snowflake(layout=layout) for _ in range(count - 1)]
    write(out, worker_id, ids)
    say("done")
    sys.stdin.readline()


def stall_mode(out: str, layout: str, count: int) -> None:
    """Lease, then stop renewing (a cut from the database, as far as the lease goes) and issue until refused.

    Says how long after its first id the last call that got an id began: the lease must have
    stopped it within 0.75 of the lease time, whatever the machine's load.
    """
    from django_segment_seq import WorkerLeaseExpired, next_snowflake
    from django_segment_seq.snowflake import generator

    ids = [next_snowflake(layout=layout)]
    started = time.monotonic()  # after the lease was taken, so never before the generator's own start
    worker_id = generator.held_worker_ids()[layout]
    generator._renewer.stop(pause=True)
    say("ready", worker_id)
    last_ok = started
    try:
        while True:
            for _ in range(50):
                before = time.monotonic()
                ids.append(next_snowflake(layout=layout))
                last_ok = before
            time.sleep(0.002)
    except WorkerLeaseExpired:
        pass
    write(out, worker_id, ids)
    say("stopped", f"{last_ok - started:.3f}")
    os._exit(0)  # the lease is left to expire, as a process cut from the database would leave it


def wait_mode(out: str, layout: str, count: int) -> None:
    """Retry until a worker id is free (exhausted meanwhile), then take `count` ids and write them."""
    from django_segment_seq import WorkerIdsExhausted, next_snowflake
    from django_segment_seq.snowflake.generator import held_worker_ids

    refused = 0
    deadline = time.monotonic() + 60
    while True:
        try:
            first = next_snowflake(layout=layout)
            break
        except WorkerIdsExhausted:
            refused += 1
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    ids = [first] + [next_snowflake(layout=layout) for _ in range(count - 1)]
    write(out, held_worker_ids()[layout], ids)
    say("done", refused)


def fork_mode(out: str, layout: str, count: int) -> None:
    """Take ids, fork, and take as many in parent and child: each must hold its own worker id."""
    from django_segment_seq import next_snowflake
    from django_segment_seq.snowflake.generator import held_worker_ids

    before = [next_snowflake(layout=layout) for _ in range(count)]
    pid = os.fork()
    if pid == 0:
        try:
            ids = [next_snowflake(layout=layout) for _ in range(count)]
            write(out + ".child", held_worker_ids()[layout], ids)
        finally:
            os._exit(0)
    ids = before + [next_snowflake(layout=layout) for _ in range(count)]
    _, status = os.waitpid(pid, 0)
    write(out, held_worker_ids()[layout], ids)
    say("done", os.waitstatus_to_exitcode(status))


MODES = {"ids": ids_mode, "stall": stall_mode, "wait": wait_mode, "fork": fork_mode}


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    setup()
    mode, out, layout, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    from django_segment_seq import SnowflakeError

    try:
        MODES[mode](out, layout, count)
    except SnowflakeError as exc:
        say("error", type(exc).__name__, exc)
        sys.exit(3)
