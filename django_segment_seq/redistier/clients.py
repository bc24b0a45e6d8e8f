"""The one redis-py client of this process, made from SEGMENT_SEQ["REDIS"], with redis-py's retries turned off.

redis-py re-sends a command up to ten times by default after a connection error, and its RedisCluster
(5.x) re-sends one `cluster_error_retry_attempts` times more whatever its connections' retry says; a
re-sent INSTALL could place one super-segment in Redis twice. Here nothing is re-sent, at either level,
on any release: a lost reply is a gap. The
client is made on first use and again after a settings change; redis-py drops a forked parent's
connections itself.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from django_segment_seq.conf import SETTING_NAME
from django_segment_seq.redistier import scripts
from django_segment_seq.redistier.config import RETRY_OPTIONS

# Short timeouts: an unreachable Redis sends the process to the table (FALLBACK) within a fraction of a second.
DEFAULT_OPTIONS = {"socket_timeout": 0.5, "socket_connect_timeout": 0.5}


class Tier:
    """A client and the tier's scripts registered on it."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.take = client.register_script(scripts.TAKE)
        self.install = client.register_script(scripts.INSTALL)
        self.read = client.register_script(scripts.READ)
        self.retire = client.register_script(scripts.RETIRE)


_tier: Tier | None = None
_lock = threading.Lock()


def tier(raw: dict[str, Any]) -> Tier:
    """This process's client for the settings `raw` (SEGMENT_SEQ["REDIS"] merged over its defaults)."""
    global _tier
    if _tier is None:
        with _lock:
            if _tier is None:
                _tier = Tier(make_client(raw))
    return _tier


def make_client(raw: dict[str, Any]) -> Any:
    """A redis-py client for LOCATION, CACHE, SENTINELS or CLUSTER, never re-sending a command."""
    import redis  # the redis extra: imported only when the tier is configured
    from redis.backoff import NoBackoff  # the redis extra, as above
    from redis.retry import Retry  # the redis extra, as above

    given = {**cache_options(raw), **raw["OPTIONS"]}
    options: dict[str, Any] = {**DEFAULT_OPTIONS, **given, "retry": Retry(NoBackoff(), 0)}
    if raw["SENTINELS"]:
        from redis.sentinel import Sentinel  # the redis extra, as above

        sentinels = [tuple(address) for address in raw["SENTINELS"]]
        sentinel_options = {key: options[key] for key in DEFAULT_OPTIONS}
        sentinel = Sentinel(sentinels, sentinel_kwargs=sentinel_options, **options)  # type: ignore[no-untyped-call]
        return sentinel.master_for(raw["SERVICE"])  # type: ignore[no-untyped-call]
    url = location(raw)
    if raw["CLUSTER"]:
        return cluster_client(url, options)
    return redis.Redis.from_url(url, **options)


def cluster_client(url: str, options: dict[str, Any]) -> Any:
    """A RedisCluster whose own loop re-sends nothing either: redis-py 5.x re-sends a command that met a timeout
    `cluster_error_retry_attempts` times (3) whatever `retry` says; 6.0 and later count the `retry` given here."""
    from redis.cluster import RedisCluster  # the redis extra, as above

    client = RedisCluster.from_url(url, **options)
    if hasattr(client, "cluster_error_retry_attempts"):
        client.cluster_error_retry_attempts = 0
    return client


def location(raw: dict[str, Any]) -> str:
    """The URL of the server: LOCATION, or the LOCATION of the CACHES alias CACHE (its first server)."""
    where = raw["LOCATION"] or django_settings.CACHES[raw["CACHE"]]["LOCATION"]
    if isinstance(where, (list, tuple)):
        where = where[0]
    return str(where) if "://" in str(where) else f"redis://{where}"


# Options of a CACHES alias that are the cache's own business, not redis-py's: Django's RedisCache
# (pool_class, parser_class, serializer) and django-redis (the upper-case ones, read below).
CACHE_ONLY = frozenset({"pool_class", "parser_class", "serializer"})
# django-redis's names for redis-py's options.
DJANGO_REDIS_NAMES = {"PASSWORD": "password", "SOCKET_TIMEOUT": "socket_timeout"}
DJANGO_REDIS_NAMES["SOCKET_CONNECT_TIMEOUT"] = "socket_connect_timeout"


def cache_options(raw: dict[str, Any]) -> dict[str, Any]:
    """The redis-py options of the CACHES alias CACHE (database, password, TLS and the like), never its retries.

    Django's RedisCache hands its OPTIONS to redis-py's ConnectionPool; django-redis names a few in capitals and
    the rest in CONNECTION_POOL_KWARGS. The tier's own OPTIONS come on top of these.
    """
    if not raw["CACHE"]:
        return {}
    given = dict(django_settings.CACHES[raw["CACHE"]].get("OPTIONS") or {})
    found = {DJANGO_REDIS_NAMES[key]: value for key, value in given.items() if key in DJANGO_REDIS_NAMES}
    found.update(given.get("CONNECTION_POOL_KWARGS") or {})
    found.update({key: value for key, value in given.items() if key.islower() and key not in CACHE_ONLY})
    return {key: value for key, value in found.items() if key not in RETRY_OPTIONS}


def forget() -> None:
    """Close and drop the client: the next use makes one from the settings of then."""
    global _tier
    with _lock:
        if _tier is not None:
            with contextlib.suppress(Exception):  # closing a client that is gone anyway
                _tier.client.close()
        _tier = None


@receiver(setting_changed)
def _forget_client(*, setting: str, **kwargs: Any) -> None:
    if setting in (SETTING_NAME, "CACHES"):
        forget()
