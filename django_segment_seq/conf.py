"""The SEGMENT_SEQ settings: each declared once, in SETTINGS, with its default, type, bounds and one-line doc;
`app_settings()` merges the project's dict over the defaults and follows override_settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

SETTING_NAME = "SEGMENT_SEQ"
NoneType = type(None)


@dataclass(frozen=True)
class Setting:
    """One key of SEGMENT_SEQ. A number must be finite and within [low, high]; `doc` is its line in docs/settings.md."""

    name: str
    default: Any
    kinds: tuple[type, ...]
    doc: str
    low: float = 0
    high: float | None = None
    # An instant in Unix milliseconds that must not lie in the future.
    past_instant: bool = False

    @property
    def is_flag(self) -> bool:
        return self.kinds == (bool,)


SETTINGS: tuple[Setting, ...] = (
    Setting("DATABASE", None, (str, NoneType), "alias holding the Sequence table; None asks the router (db_for_write)"),
    Setting("DEFAULT_STEP", 1000, (int,), "step of rows created on first use", low=1),
    Setting("MAX_RETRIES", 100, (int,), "lost compare-and-sets before SequenceContention"),
    Setting("CONNECTION_RETRIES", 5, (int,), "database errors in a row before SequenceUnavailable"),
    Setting("MAX_BACKOFF", 0.5, (int, float), "seconds, ceiling of the jittered back-off"),
    Setting(
        "LOCK_TIMEOUT",
        2.0,
        (int, float),
        "seconds a row held by another transaction is waited for; then SequenceUnavailable",
        low=0.001,
    ),
    Setting(
        "SERVERS",
        None,
        (dict, NoneType),
        'per alias, the MariaDB Galera nodes ("host:port") that private connections try in turn; None: HOST and PORT',
    ),
    Setting(
        "CLUSTER_PAUSE",
        20.0,
        (int, float),
        "seconds a Galera cluster that stopped its writes (a node lost, not yet evicted) is waited for",
        low=0.001,
    ),
    Setting(
        "CLUSTER_LOST",
        7.0,
        (int, float),
        "seconds a call waits while no server of SERVERS answers and may take a range (a caller cut off with a "
        "minority node); then SequenceUnavailable",
        low=0.001,
    ),
    Setting(
        "FAILOVER_SKIP",
        10_000_000,
        (int,),
        "numbers a row skips when its last range was taken on another server history or table (a failover or restore)",
    ),
    Setting(
        "STANDBYS",
        None,
        (dict, NoneType),
        "per alias, PostgreSQL standbys that must confirm the primary's writes before it hands out numbers; "
        "an alias not named: 1 when HOST lists several hosts, else 0",
    ),
    Setting(
        "STANDBY_LAG",
        5.0,
        (int, float),
        "seconds within which those standbys must have answered and flushed the primary's writes",
        low=0.001,
    ),
    Setting(
        "CONCEAL_KEY",
        None,
        (str, NoneType),
        "hex AES key (32, 48 or 64 hex digits) of the fields with conceal=True; read it from the environment",
    ),
    Setting(
        "CONCEAL_KEY_FALLBACKS",
        [],
        (list, tuple),
        "former CONCEAL_KEYs, so texts concealed under them are still revealed (as Django's SECRET_KEY_FALLBACKS)",
    ),
    Setting("CONNECTION_MAX_IDLE", 30.0, (int, float), "seconds an unused private connection stays open"),
    Setting("CREATE_ON_FIRST_USE", True, (bool,), "False: a missing row raises SequenceNotFound"),
    Setting("PREFETCH", True, (bool,), "fetch the next range in the background before this one runs out"),
    Setting("PREFETCH_AT", 0.2, (int, float), "share of a range used (0.0-1.0) when the next one is fetched", high=1),
    Setting("ADAPTIVE_STEP", True, (bool,), "size ranges to the demand, between the row's step and MAX_STEP"),
    Setting("MAX_STEP", 1_000_000, (int,), "ceiling of the adaptive range size", low=1),
    Setting("STEP_TARGET_SECONDS", 60.0, (int, float), "how long a range should last at the current pace", low=0.001),
    Setting("METRICS", False, (bool,), "export sequence_stats() to Prometheus (the prometheus extra)"),
    Setting(
        "LOG_RETRIES_AT",
        10,
        (int, NoneType),
        "log a range fetch that lost this many compare-and-sets; None: never",
        low=1,
    ),
    Setting(
        "LOG_USED_SHARE_AT",
        0.8,
        (int, float, NoneType),
        "log a sequence passing this share (0.01-1.0) of its numbers; None: never",
        low=0.01,
        high=1,
    ),
    Setting(
        "GIVE_BACK_UNUSED", True, (bool,), "a clean exit gives unused cached numbers back, if nobody allocated since"
    ),
    Setting(
        "SERVICE_USER_MAX_COUNT",
        1000,
        (int,),
        "largest count a logged-in user with the use_id_service permission may take from the ID service",
        low=1,
    ),
    Setting(
        "SERVICE_MAX_COUNT",
        10_000,
        (int,),
        "largest count any ID service client may be given (the OpenAPI document's maximum of count)",
        low=1,
    ),
    Setting(
        "SERVICE_USER_RATE",
        "10/s",
        (str, NoneType),
        "requests per window of each logged-in user of the ID service, e.g. 10/s; None: no limit",
    ),
    Setting(
        "SERVICE_AUTH_FAILURE_RATE",
        "30/m",
        (str, NoneType),
        "failed authentications per client address and window before the ID service answers 429 unread",
    ),
    Setting(
        "SERVICE_CACHED_NAMES",
        1000,
        (int,),
        "sequence names an ID service process keeps a range of; past it the least recently used is dropped",
        low=1,
    ),
    Setting(
        "SNOWFLAKE_EPOCH_MS",
        1_767_225_600_000,
        (int,),
        "Snowflake ids count time from here (Unix ms; 2026-01-01T00:00:00Z)",
        past_instant=True,
    ),
    Setting(
        "SNOWFLAKE_LEASE_SECONDS",
        60.0,
        (int, float),
        "a worker id lease not renewed this long is free again",
        low=1,
    ),
    Setting(
        "SNOWFLAKE_CLOCK_TOLERANCE",
        0.1,
        (int, float),
        "seconds a clock may be behind the last id and be waited out",
        high=10,
    ),
    Setting(
        "SNOWFLAKE_MAX_WORKERS",
        None,
        (int, NoneType),
        "worker ids handed out, from 0; None: all the layout allows",
        low=1,
        high=1024,
    ),
    Setting(
        "REDIS",
        None,
        (dict, NoneType),
        "the Redis tier in front of the table (the redis extra; its keys: docs/redis.md); None: off",
    ),
)

# The keys of SEGMENT_SEQ["REDIS"], checked as the top-level ones are (E060 for a wrong key or value).
REDIS_SETTINGS: tuple[Setting, ...] = (
    Setting("LOCATION", None, (str, list, tuple, NoneType), "a redis:// URL (a list: the first one); or CACHE, ..."),
    Setting("CACHE", None, (str, NoneType), "a CACHES alias (Django's RedisCache or django-redis) whose server to use"),
    Setting("SENTINELS", None, (list, tuple, NoneType), "Sentinels as (host, port) pairs, with SERVICE"),
    Setting("SERVICE", None, (str, NoneType), "the master's name the Sentinels watch"),
    Setting("CLUSTER", False, (bool,), "LOCATION names a node of a Redis Cluster"),
    Setting("SEQUENCES", [], (list, tuple), "row names (fnmatch patterns) that take their blocks from Redis"),
    Setting("SUPER_STEP", 100_000, (int,), "numbers the table lends Redis at a time", low=1, high=2**53),
    Setting("SUPER_STEPS", {}, (dict,), "per row-name pattern, a SUPER_STEP of its own (first match wins)"),
    Setting("MAX_BLOCK", 100, (int,), "the most numbers a process takes from Redis at a time", low=1, high=2**53),
    Setting("FALLBACK", True, (bool,), "Redis unreachable: blocks straight from the table"),
    Setting("OPTIONS", {}, (dict,), "keyword arguments to redis-py (never its retries: those stay off)"),
    Setting("KEY_PREFIX", "segseq:", (str,), "prefix of every key the tier writes"),
    Setting("REFILL_AT", 0.5, (int, float), "share of a super-segment left when the next one is reserved", high=1),
    Setting("RETRY_AFTER", 5.0, (int, float), "seconds Redis is left alone after an error"),
)
REDIS_DEFAULTS: dict[str, Any] = {setting.name: setting.default for setting in REDIS_SETTINGS}

SETTINGS_BY_NAME = {setting.name: setting for setting in SETTINGS}
DEFAULTS: dict[str, Any] = {setting.name: setting.default for setting in SETTINGS}

_cache: dict[str, Any] | None = None
_redis_cache: dict[str, Any] | None = None


def app_settings() -> dict[str, Any]:
    """The merged settings; unknown keys are reported by the system check, not here."""
    global _cache
    if _cache is None:
        merged = dict(DEFAULTS)
        merged.update(getattr(django_settings, SETTING_NAME, None) or {})
        _cache = merged
    return _cache


def redis_settings() -> dict[str, Any] | None:
    """SEGMENT_SEQ["REDIS"] merged over its defaults; None when the tier is off (or the setting is not a dict)."""
    global _redis_cache
    if _redis_cache is None:
        configured = app_settings()["REDIS"]
        if not isinstance(configured, dict):
            return None
        _redis_cache = {**REDIS_DEFAULTS, **configured}
    return _redis_cache


@receiver(setting_changed)
def _forget_settings(*, setting: str, **kwargs: Any) -> None:
    global _cache, _redis_cache
    if setting == SETTING_NAME:
        _cache = None
        _redis_cache = None
