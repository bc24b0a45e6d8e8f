"""The one redis-py client of this process, made from SEGMENT_SEQ["REDIS"], with redis-py's retries turned off.

redis-py re-sends a command up to ten times by default after a connection error; a re-sent INSTALL
could place one super-segment in Redis twice. Here nothing is re-sent: a lost reply is a gap. The
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

# Short timeouts: an unreachable Redis sends the process to the table (FALLBACK) within a fraction of a second.
DEFAULT_OPTIONS = {"socket_timeout": 0.5, "socket_connect_timeout": 0.5}


class Tier:
    """A client and the tier's scripts registered on it."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.take = client.register_script(scripts.TAKE)
        self.install = client.register_script(scripts.INSTALL)
        self.release = client.register_script(scripts.RELEASE)
        self.read = client.register_script(scripts.READ)


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
    """A redis-py client for LOCATION, CACHE, SENTINELS or CLUSTER, never retrying a command."""
    import redis  # the redis extra: imported only when the tier is configured
    from redis.backoff import NoBackoff  # the redis extra, as above
    from redis.retry import Retry  # the redis extra, as above

    options: dict[str, Any] = {**DEFAULT_OPTIONS, **raw["OPTIONS"], "retry": Retry(NoBackoff(), 0)}
    if raw["SENTINELS"]:
        from redis.sentinel import Sentinel  # the redis extra, as above

        sentinels = [tuple(address) for address in raw["SENTINELS"]]
        sentinel_options = {key: options[key] for key in DEFAULT_OPTIONS}
        sentinel = Sentinel(sentinels, sentinel_kwargs=sentinel_options, **options)  # type: ignore[no-untyped-call]
        return sentinel.master_for(raw["SERVICE"])  # type: ignore[no-untyped-call]
    url = location(raw)
    if raw["CLUSTER"]:
        from redis.cluster import RedisCluster  # the redis extra, as above

        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, **options)


def location(raw: dict[str, Any]) -> str:
    """The URL of the server: LOCATION, or the LOCATION of the CACHES alias CACHE (its first server)."""
    where = raw["LOCATION"] or django_settings.CACHES[raw["CACHE"]]["LOCATION"]
    if isinstance(where, (list, tuple)):
        where = where[0]
    return str(where) if "://" in str(where) else f"redis://{where}"


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
