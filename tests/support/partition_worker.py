"""An application process for the partition tests, run inside a network namespace: takes numbers of a plain row, a
per-period row and a gapless row in turn, at full speed, until told to stop, and writes every one it got.

Run as `python -m tests.support.partition_worker MODE ENGINE HOSTS PORTS DATABASE OUT STOP SETTINGS_JSON`, with
ENGINE `postgresql` or `mysql`; MODE `migrate` makes the app's tables and the ROWS (through the ORM, as a project
makes them), `check` prints the ids of the system checks' messages, `take` writes to OUT {"numbers": {row:
[...]}, "errors": {"cached:" or "gapless:" + error name: count}, "messages": [...], "longest_call": s, "longest":
{"cached" or "gapless": s}, "after_mark": {row: n}, "after_marks": [{row: n}, ...], "last_at": {row: monotonic
s}}. A taker touches OUT.ready once set up, and waits for the file SEGMENT_SEQ_TEST_GO; "after_marks" counts what
it got per row after each file SEGMENT_SEQ_TEST_MARK names (os.pathsep between them) appeared, "after_mark" after
the first (the standby's promotion, say); its first number of the plain row after that mark touches OUT.went_on.
With SEGMENT_SEQ_TEST_RATE set, it takes at most that many numbers a second of each cached row, so what a side hands
out in a given time does not swing with the machine's speed.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time

from tests.support.failover_worker import configure_django

PLAIN = "plain"
# A per-period row, as a field with a daily reset names it: the sequence, the mark, the day.
PERIOD = "daily@2026-11-27"
GAPLESS = "gapless"
ROWS = (PLAIN, PERIOD, GAPLESS)
# A gapless number every this many rounds: each holds the row until its transaction commits.
GAPLESS_EVERY = 200
# Each cached row's step: fixed ranges (no adaptive step, no prefetch), many of them, so many go to the table.
STEP = 100
# The options a project behind a partition needs: libpq's failover list finds the writable server, and a
# connection whose peer went silent fails within seconds instead of waiting out TCP's retransmissions.
PG_OPTIONS = {
    "target_session_attrs": "read-write",
    "connect_timeout": 2,
    "tcp_user_timeout": 3000,
    "keepalives": 1,
    "keepalives_idle": 1,
    "keepalives_interval": 1,
    "keepalives_count": 2,
}
MYSQL_OPTIONS = {"charset": "utf8mb4", "connect_timeout": 2}


def configure(engine: str, hosts: str, ports: str, database: str, segment_seq: dict[str, object]) -> None:
    postgres = engine == "postgresql"
    configure_django(
        {
            "ENGINE": f"django.db.backends.{engine}",
            "HOST": hosts,
            "PORT": ports,
            "USER": "postgres" if postgres else "root",
            "NAME": database,
            "OPTIONS": dict(PG_OPTIONS if postgres else MYSQL_OPTIONS),
        },
        segment_seq,
    )


def take_one(row: str) -> int:
    from django.db import transaction

    from django_segment_seq import next_value
    from django_segment_seq.compat.sequences import get_next_value

    if row != GAPLESS:
        return next_value(row)
    with transaction.atomic():
        return get_next_value(row)


def take(out: str, stop: str) -> None:
    from django.db import close_old_connections

    go = os.environ.get("SEGMENT_SEQ_TEST_GO", "")
    marks = [path for path in os.environ.get("SEGMENT_SEQ_TEST_MARK", "").split(os.pathsep) if path]
    rate = float(os.environ.get("SEGMENT_SEQ_TEST_RATE") or 0)
    open(out + ".ready", "w").close()
    while go and not os.path.exists(go):
        time.sleep(0.005)
    numbers: dict[str, list[int]] = {row: [] for row in ROWS}
    # Per mark file, what it had got of each row when the file appeared.
    at_marks: list[dict[str, int] | None] = [None] * len(marks)
    errors: collections.Counter[str] = collections.Counter()
    messages: list[str] = []
    longest = {"cached": 0.0, "gapless": 0.0}
    last_at: dict[str, float] = {}
    rounds = 0
    went_on = False
    begun = time.monotonic()
    while not os.path.exists(stop):
        rounds += 1
        if rate and rounds % 100 == 0:
            time.sleep(max(0.0, rounds / rate - (time.monotonic() - begun)))
        for index, mark in enumerate(marks):
            if at_marks[index] is None and os.path.exists(mark):
                at_marks[index] = {row: len(got) for row, got in numbers.items()}
        if not went_on and at_marks and at_marks[0] is not None and len(numbers[PLAIN]) > at_marks[0][PLAIN]:
            open(out + ".went_on", "w").close()  # a number of the plain row after the first mark: the test may go on
            went_on = True
        for row in ROWS:
            if row == GAPLESS and rounds % GAPLESS_EVERY:
                continue
            started = time.monotonic()
            try:
                numbers[row].append(take_one(row))
                last_at[row] = time.monotonic()
            except Exception as exc:  # noqa: BLE001 - every kind is counted: the tests allow SequenceUnavailable only
                kind = f"{'gapless' if row == GAPLESS else 'cached'}:{type(exc).__name__}"
                errors[kind] += 1
                if len(messages) < 5 or errors[kind] == 1:
                    messages.append(f"{row}: {type(exc).__name__}: {exc}")
                close_old_connections()  # Django's own connection may be broken: the next call opens another
                time.sleep(0.01)
            kind = "gapless" if row == GAPLESS else "cached"
            longest[kind] = max(longest[kind], time.monotonic() - started)
    after_marks = [{row: len(got) - (at or {}).get(row, len(got)) for row, got in numbers.items()} for at in at_marks]
    after_mark = after_marks[0] if after_marks else {row: 0 for row in ROWS}
    with open(out, "w") as fh:
        json.dump(
            {"numbers": numbers, "errors": dict(errors), "messages": messages, "longest_call": max(longest.values()),
             "longest": longest, "after_mark": after_mark, "after_marks": after_marks, "last_at": last_at},
            fh,
        )  # fmt: skip


def migrate() -> None:
    from django.core.management import call_command

    from django_segment_seq.models import Sequence

    call_command("migrate", verbosity=0)
    for row in ROWS:
        Sequence.objects.create(name=row, step=1 if row == GAPLESS else STEP)


if __name__ == "__main__":
    mode, engine, hosts, ports, database, out, stop, segment_seq = sys.argv[1:9]
    configure(engine, hosts, ports, database, json.loads(segment_seq))
    if mode == "migrate":
        migrate()
    elif mode == "check":  # the ids of what `manage.py check --database default` reports, one a line
        from django.core import checks

        print("\n".join(message.id or "" for message in checks.run_checks(databases=["default"])))
    else:
        take(out, stop)
