"""A worker for the failover tests: takes numbers at full speed from a multi-host PostgreSQL until told to stop.

Run as `python -m tests.support.failover_worker MODE HOSTS PORTS DATABASE OUT STOP SETTINGS_JSON`; MODE `migrate`
creates the app's tables, `take` (sequence numbers) and `snowflake` (Snowflake ids) write
{"numbers": [...], "errors": {name: count}, "longest_pause": s} to OUT.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time


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
            "OPTIONS": {"target_session_attrs": "read-write", "connect_timeout": 2},
        },
        segment_seq,
    )


def take(out: str, stop: str, snowflake: bool = False) -> None:
    from django_segment_seq import next_snowflake, next_value

    go = os.environ.get("SEGMENT_SEQ_TEST_GO")
    while go and not os.path.exists(go):  # started ahead, set up, and waiting for the moment to begin
        time.sleep(0.005)
    numbers: list[int] = []
    errors: collections.Counter[str] = collections.Counter()
    last = time.monotonic()
    longest = 0.0
    while not os.path.exists(stop):
        try:
            numbers.append(next_snowflake() if snowflake else next_value("failover"))
        except Exception as exc:  # noqa: BLE001 - every kind is counted: the test allows SequenceUnavailable only
            errors[type(exc).__name__] += 1
            continue
        now = time.monotonic()
        longest, last = max(longest, now - last), now
    with open(out, "w") as fh:
        json.dump({"numbers": numbers, "errors": dict(errors), "longest_pause": longest}, fh)


if __name__ == "__main__":
    mode, hosts, ports, database, out, stop, segment_seq = sys.argv[1:8]
    configure(hosts, ports, database, json.loads(segment_seq))
    if mode == "migrate":
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
    else:
        take(out, stop, snowflake=mode == "snowflake")
