"""`segment_seq redis-check`: whether the configured Redis can carry the tier safely, before use.

Asked of the server itself: a script may call INFO and finds a run_id (the fence needs both), the
eviction policy, DEBUG, and whether a Django cache shares the database (its clear() costs a refill).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import CommandError

from django_segment_seq.conf import redis_settings
from django_segment_seq.management.subcommands.base import Subcommand
from django_segment_seq.redistier import clients
from django_segment_seq.redistier.config import problems, redis_installed


class RedisCheck(Subcommand):
    name = "redis-check"
    help = "Whether the Redis of SEGMENT_SEQ['REDIS'] can carry the tier safely: asked of the server itself."
    database_help = None

    def handle(self, **options: Any) -> None:
        found = findings()
        for level, sentence in found:
            self.stdout.write(f"{level.upper()}: {sentence}")
        if any(level == "error" for level, _ in found):
            raise CommandError("This Redis cannot carry the tier (see above).")


RUN_ID_SCRIPT = (
    "return (string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or '') .. ':' .. "
    "(string.match(redis.call('INFO', 'replication'), 'master_replid:(%x+)') or '')"
)


def findings() -> list[tuple[str, str]]:
    """(level, sentence) pairs, level "ok", "warning" or "error"."""
    merged = redis_settings()
    if merged is None:
        return [("error", "SEGMENT_SEQ['REDIS'] is not set: there is no Redis tier to check.")]
    found = [("error", f"SEGMENT_SEQ['REDIS']: {problem}.") for problem in problems(merged)]
    if not redis_installed():
        found.append(("error", "redis-py is not installed: pip install django-segment-seq[redis]."))
    if found:
        return found
    try:
        return _server_findings(clients.make_client(merged), merged)
    except Exception as exc:  # noqa: BLE001 - whatever the server or network says, it is the finding
        return [("error", f"Redis could not be asked: {exc}.")]


def _server_findings(client: Any, merged: dict[str, Any]) -> list[tuple[str, str]]:
    run_id = client.eval(RUN_ID_SCRIPT, 0)
    run_id, _, replid = (run_id.decode() if isinstance(run_id, bytes) else str(run_id)).partition(":")
    if len(run_id) != 40 or len(replid) != 40:
        return [
            ("error", "a script calling INFO finds no run_id or master_replid: the tier cannot fence, do not use it.")
        ]
    found = [("ok", f"scripts may call INFO; this server process's run_id is {run_id[:12]}…")]
    found.append(_eviction(client))
    try:
        debug = client.config_get("enable-debug-command").get("enable-debug-command", "no")
    except Exception:  # noqa: BLE001 - CONFIG refused (a managed service): unknown
        debug = "unknown"
    if debug not in ("no", "unknown"):
        found.append(("warning", "DEBUG is enabled: DEBUG RELOAD would bring an older state back under one run_id."))
    found += _shared_caches(merged)
    return found


def _eviction(client: Any) -> tuple[str, str]:
    try:
        policy = client.config_get("maxmemory-policy").get("maxmemory-policy", "unknown")
    except Exception:  # noqa: BLE001 - CONFIG refused (a managed service)
        return ("warning", "the eviction policy could not be read (CONFIG refused): make sure it is not allkeys-*.")
    if str(policy).startswith("allkeys"):
        return ("warning", f"maxmemory-policy is {policy}: evicted states cost a super-segment each (gaps).")
    return ("ok", f"maxmemory-policy is {policy}: the tier's keys (no TTL) are never evicted.")


def _shared_caches(merged: dict[str, Any]) -> list[tuple[str, str]]:
    """CACHES aliases on the same Redis database: their clear() runs FLUSHDB, which drops every state."""
    if merged["SENTINELS"]:
        return []
    mine = clients.location({**merged, "OPTIONS": {}})
    found = []
    for alias, cache in getattr(settings, "CACHES", {}).items():
        if "redis" not in str(cache.get("BACKEND", "")).lower():
            continue
        theirs = clients.location({"LOCATION": cache.get("LOCATION"), "CACHE": None})
        if _same_database(mine, theirs):
            found.append(
                ("warning", f"the cache {alias!r} uses this Redis database: its clear() drops the tier's states "
                 "(each costs a super-segment, a gap). Give the tier a database of its own (/1, /2 ...).")
            )  # fmt: skip
    return found


def _same_database(one: str, other: str) -> bool:
    a, b = urlsplit(one), urlsplit(other)
    return (a.hostname, a.port or 6379, (a.path or "/0").strip("/") or "0") == (
        b.hostname,
        b.port or 6379,
        (b.path or "/0").strip("/") or "0",
    )
