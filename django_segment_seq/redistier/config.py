"""What SEGMENT_SEQ["REDIS"] says, read once per settings change: which rows use the tier and how large their
super-segments are, and what is wrong with it (the system checks report those problems)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from django_segment_seq.conf import REDIS_DEFAULTS, REDIS_SETTINGS, SETTING_NAME, Setting, redis_settings

# The ways to name the server; exactly one is given (CLUSTER goes with LOCATION).
WHERE = ("LOCATION", "CACHE", "SENTINELS")
# Keyword arguments that would turn redis-py's retries back on: a re-sent INSTALL could place one
# super-segment in Redis twice.
RETRY_OPTIONS = frozenset({"retry", "retry_on_timeout", "retry_on_error", "cluster_error_retry_attempts"})


@dataclass(frozen=True)
class TierConfig:
    """The tier's settings, merged over their defaults."""

    patterns: tuple[str, ...]
    super_step: int
    super_steps: tuple[tuple[str, int], ...]
    max_block: int
    fallback: bool
    key_prefix: str
    refill_at: float
    retry_after: float
    raw: dict[str, Any]

    # Row names already matched against the patterns (bounded: rows per period grow without end).
    matched: dict[str, bool] = field(default_factory=dict, compare=False)

    def covers(self, name: str) -> bool:
        """Whether row `name` takes its blocks from Redis."""
        known = self.matched.get(name)
        if known is None:
            if len(self.matched) > 10_000:
                self.matched.clear()
            known = self.matched[name] = any(fnmatchcase(name, pattern) for pattern in self.patterns)
        return known

    def super_size(self, name: str) -> int:
        """The super-segment size of row `name`: its SUPER_STEPS entry, else SUPER_STEP."""
        return next((size for pattern, size in self.super_steps if fnmatchcase(name, pattern)), self.super_step)


_config: TierConfig | None = None


def tier_config() -> TierConfig | None:
    """The tier's settings, or None when SEGMENT_SEQ["REDIS"] is unset or has errors (the checks say which)."""
    global _config
    if _config is None:
        merged = redis_settings()
        if merged is None or problems(merged) or not redis_installed():
            return None
        _config = TierConfig(
            patterns=tuple(merged["SEQUENCES"]),
            super_step=merged["SUPER_STEP"],
            super_steps=tuple(merged["SUPER_STEPS"].items()),
            max_block=merged["MAX_BLOCK"],
            fallback=merged["FALLBACK"],
            key_prefix=merged["KEY_PREFIX"],
            refill_at=float(merged["REFILL_AT"]),
            retry_after=float(merged["RETRY_AFTER"]),
            raw=merged,
        )
    return _config


def redis_installed() -> bool:
    """Whether redis-py (the redis extra) can be imported."""
    return importlib.util.find_spec("redis") is not None


def problems(merged: dict[str, Any]) -> list[str]:
    """Every problem of the merged REDIS settings, as sentences; empty when the tier can run."""
    found = [f"unknown key {key!r}" for key in sorted(set(merged) - set(REDIS_DEFAULTS))]
    for setting in REDIS_SETTINGS:
        if not _valid(setting, merged.get(setting.name)):
            found.append(f"{setting.name} is {merged.get(setting.name)!r}: {setting.doc}")
    if found:
        return found
    return _where_problems(merged) + _size_problems(merged)


def _valid(setting: Setting, value: Any) -> bool:
    """The value's type and bounds (conf.Setting's rules, as checks.valid applies them to the top level)."""
    if isinstance(value, bool) and bool not in setting.kinds:
        return False
    if not isinstance(value, setting.kinds):
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == value and setting.low <= value and (setting.high is None or value <= setting.high)
    return True


def _where_problems(merged: dict[str, Any]) -> list[str]:
    """Exactly one of LOCATION, CACHE and SENTINELS (with SERVICE); CLUSTER with LOCATION; no retry options."""
    given = [key for key in WHERE if merged[key]]
    found = []
    if len(given) != 1:
        found.append(f"give exactly one of LOCATION, CACHE and SENTINELS, not {given or 'none'}")
    if merged["SENTINELS"] and not merged["SERVICE"]:
        found.append("SENTINELS needs SERVICE, the name of the master they watch")
    if merged["CLUSTER"] and not merged["LOCATION"]:
        found.append("CLUSTER needs LOCATION, the URL of one node of the cluster")
    cache = merged["CACHE"]
    if cache and "redis" not in str(getattr(django_settings, "CACHES", {}).get(cache, {}).get("BACKEND", "")).lower():
        found.append(f"CACHE names {cache!r}, which is not a Redis cache of CACHES")
    retry = sorted(RETRY_OPTIONS & set(merged["OPTIONS"]))
    if retry:
        found.append(f"OPTIONS may not set {retry}: the tier's requests are never re-sent")
    if "{" in merged["KEY_PREFIX"] or "}" in merged["KEY_PREFIX"]:
        found.append("KEY_PREFIX may not hold braces: they would move a row's keys to different Cluster slots")
    return found


def _size_problems(merged: dict[str, Any]) -> list[str]:
    """SEQUENCES are texts; every super-segment size is an int of at least MAX_BLOCK and at most 2**53."""
    found = []
    if not all(isinstance(pattern, str) for pattern in merged["SEQUENCES"]):
        found.append("SEQUENCES must list row names or fnmatch patterns (texts)")
    sizes = [merged["SUPER_STEP"], *merged["SUPER_STEPS"].values()]
    if not all(isinstance(size, int) and not isinstance(size, bool) and size <= 2**53 for size in sizes):
        found.append("SUPER_STEPS maps patterns to ints of at most 2**53")
    elif min(sizes) < merged["MAX_BLOCK"]:
        found.append(f"every super-segment size must be at least MAX_BLOCK ({merged['MAX_BLOCK']})")
    return found


@receiver(setting_changed)
def _forget(*, setting: str, **kwargs: Any) -> None:
    global _config
    if setting in (SETTING_NAME, "CACHES"):
        _config = None
