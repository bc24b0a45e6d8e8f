"""A worker for the failover tests: takes numbers at full speed from a multi-host PostgreSQL until told to stop.

Run as `python -m tests.support.failover_worker MODE HOSTS PORTS DATABASE OUT STOP SETTINGS_JSON`; MODE `migrate`
creates the app's tables and the SEQUENCES rows (through the ORM, as a project makes them); `check` prints the ids
of what `check --database default` reports, with a gapless field declared when SEGMENT_SEQ_TEST_GAPLESS is set;
`take` (numbers of the sequence SEGMENT_SEQ_TEST_SEQUENCE) and `snowflake` (Snowflake ids) write {"numbers":
[...], "errors": {name: count}, "messages": {name: first message}, "longest_pause": s, "marked": n} to OUT.
A taker set up touches OUT.ready, then waits for the file SEGMENT_SEQ_TEST_GO if one is named, so its start is the
test's to choose; "marked" is how many numbers it had when the file SEGMENT_SEQ_TEST_MARK appeared (the test's crash
of the primary), or None, and "errors_before_fault" how many errors it met before the file SEGMENT_SEQ_TEST_FAULT
appeared (touched just before the crash: on a healthy primary no caller may be refused); once it has handed out more
than STEP numbers after that (a range of the new primary), it touches OUT.went_on. With SEGMENT_SEQ_TEST_NO_ROW_MEMORY
set, a taker keeps no memory of what it wrote to the rows, as a process restarted.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time

# The sequences a failover test takes numbers of, each with a step of STEP: many ranges, so the lost ones are many too.
SEQUENCES = ("used", "fresh")
STEP = 10


def configure_django(database: dict[str, object], segment_seq: dict[str, object]) -> None:
    """Django with the app alone on one database, as a cluster test's worker process needs it."""
    import django
    from django.conf import settings

    settings.configure(
        DATABASES={"default": database}, INSTALLED_APPS=["django_segment_seq"], USE_TZ=True, SEGMENT_SEQ=segment_seq
    )
    django.setup()


def configure(hosts: str, ports: str, database: str, segment_seq: dict[str, object]) -> None:
    configure_django(
        {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": hosts,  # libpq tries each host in turn and keeps the one that takes writes
            "PORT": ports,
            "USER": "postgres",
            "NAME": database,
            "OPTIONS": {"target_session_attrs": "read-write", "connect_timeout": 2, **session_options()},
        },
        segment_seq,
    )


def session_options() -> dict[str, str]:
    """libpq options for the session: SEGMENT_SEQ_TEST_SYNCHRONOUS_COMMIT sets synchronous_commit, as a project's
    OPTIONS can."""
    commit = os.environ.get("SEGMENT_SEQ_TEST_SYNCHRONOUS_COMMIT")
    return {"options": f"-c synchronous_commit={commit}"} if commit else {}


def check() -> None:
    """Print the ids of what `manage.py check --database default` reports, one a line."""
    from django.core import checks
    from django.db import models

    from django_segment_seq.fields import SequenceField

    if os.environ.get("SEGMENT_SEQ_TEST_GAPLESS"):

        class Invoice(models.Model):
            number = SequenceField("invoice", gapless=True)

            class Meta:
                app_label = "django_segment_seq"

    print("\n".join(message.id or "" for message in checks.run_checks(databases=["default"])))


def take(out: str, stop: str, snowflake: bool = False) -> None:
    from django_segment_seq import next_snowflake, next_value
    from django_segment_seq.allocator import seen

    forget = bool(os.environ.get("SEGMENT_SEQ_TEST_NO_ROW_MEMORY"))

    name = os.environ.get("SEGMENT_SEQ_TEST_SEQUENCE", "")
    go, mark = os.environ.get("SEGMENT_SEQ_TEST_GO"), os.environ.get("SEGMENT_SEQ_TEST_MARK", "")
    fault = os.environ.get("SEGMENT_SEQ_TEST_FAULT", "")
    before_fault = 0
    open(out + ".ready", "w").close()
    while go and not os.path.exists(go):  # set up, and waiting for the moment to begin
        time.sleep(0.005)
    numbers: list[int] = []
    errors: collections.Counter[str] = collections.Counter()
    messages: dict[str, str] = {}  # the first message of each kind of error, for a failing test to show
    marked: int | None = None
    last = time.monotonic()
    longest = 0.0
    went_on = False
    while not os.path.exists(stop):
        if marked is None and mark and os.path.exists(mark):
            marked = len(numbers)
        if not went_on and marked is not None and len(numbers) - marked > STEP:
            open(out + ".went_on", "w").close()
            went_on = True
        if forget:
            seen.forget()
        try:
            numbers.append(next_snowflake() if snowflake else next_value(name))
        except Exception as exc:  # noqa: BLE001 - every kind is counted: the test allows SequenceUnavailable only
            errors[type(exc).__name__] += 1
            messages.setdefault(type(exc).__name__, str(exc)[:500])
            if not (fault and os.path.exists(fault)):
                before_fault += 1
            continue
        now = time.monotonic()
        longest, last = max(longest, now - last), now
    with open(out, "w") as fh:
        json.dump(
            {
                "numbers": numbers,
                "errors": dict(errors),
                "longest_pause": longest,
                "marked": marked,
                "messages": messages,
                "errors_before_fault": before_fault,
            },
            fh,
        )


def create_sequences() -> None:
    from django_segment_seq.models import Sequence

    for name in SEQUENCES:
        Sequence.objects.create(name=name, step=STEP)


if __name__ == "__main__":
    mode, hosts, ports, database, out, stop, segment_seq = sys.argv[1:8]
    configure(hosts, ports, database, json.loads(segment_seq))
    if mode == "migrate":
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        create_sequences()
    elif mode == "check":
        check()
    else:
        take(out, stop, snowflake=mode == "snowflake")
