"""Blocks for the rows REDIS["SEQUENCES"] names, taken from Redis inside super-segments the table lent it.

RedisSource is a BlockSource (allocator/source.py) for the rows the cache finds it serves (cache/sources.py
sends the others to the table's source). A row on the tier takes a block of at most MAX_BLOCK numbers
with one script call (TAKE). When Redis holds nothing valid for it, or has REFILL_AT of its
super-segment left, one process (a lease in Redis) reserves the next super-segment from the row with
the table's source, so its compare-and-set, retries, bounds, SERVERS and failover fence all
apply, and offers it to Redis once (INSTALL, never re-sent). The table's value is thus above every
number Redis ever held, and a Redis that lost or went back in its state is refilled above it: a gap,
never a repeat. Redis failing sends the process to the table for RETRY_AFTER seconds (FALLBACK).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from django.core.signals import setting_changed
from django.db import DatabaseError, InterfaceError
from django.dispatch import receiver

from django_segment_seq.allocator.blocks import Block
from django_segment_seq.allocator.request import Allocation, BlockRequest
from django_segment_seq.allocator.source import BlockSource, TableSource
from django_segment_seq.allocator.tier_figures import TierFigures
from django_segment_seq.conf import SETTING_NAME, app_settings
from django_segment_seq.exceptions import SequenceMisconfigured, SequenceRedisUnavailable
from django_segment_seq.redistier import clients, table
from django_segment_seq.redistier.config import TierConfig, tier_config
from django_segment_seq.redistier.deployment_id import deployment

__all__ = ["RedisSource", "pad", "redis_source", "state_keys"]

logger = logging.getLogger("django_segment_seq")

# Shifts a BIGINT into 0..2**64, written with 20 digits: how INSTALL compares numbers exactly (Lua has doubles).
BIGINT_OFFSET = 2**63


@dataclass(frozen=True, slots=True)
class _Call:
    """One call of RedisSource.allocate: the cache's request, unchanged, with what the tier brings to it."""

    request: BlockRequest
    config: TierConfig
    figures: TierFigures
    # The block taken from Redis, with the figures and the costs of any reservation made for it.
    result: Allocation

    @property
    def name(self) -> str:
        return self.request.name

    @property
    def row(self) -> tuple[str, str]:
        return (self.request.alias, self.request.name)


# With FALLBACK on, how long a process that finds the row empty waits for another process's refill before it
# takes its block from the table: an orphaned lease or a late INSTALL reply costs callers this, not the lease.
REFILL_WAIT = 0.25
# And for how long that row's blocks then come from the table in that process, before Redis is asked again.
STALL_SKIP = 1.0


class Learned:
    """What this process learned of the tier and its rows: forgotten at fork and when the settings change."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        # Monotonic time before which Redis is not asked (after an error).
        self.skip_until = 0.0
        # Per row, monotonic time before which its blocks come from the table: a refill elsewhere was slow or stuck.
        self.stalled: dict[tuple[str, str], float] = {}
        # Rows found cycling: off the tier in this process (the system check refuses them too).
        self.refused: set[tuple[str, str]] = set()
        # Per row, the most numbers its limits allow in one super-segment (a 64th of min..max) and its step.
        self.caps: dict[tuple[str, str], int] = {}
        self.steps: dict[tuple[str, str], int] = {}


class RedisSource:
    """Blocks from Redis for the rows on the tier, in super-segments reserved from `table` (which also serves
    while Redis fails, with FALLBACK on)."""

    def __init__(self, table: BlockSource) -> None:
        self.table = table
        self.learned = Learned()

    def serves(self, request: BlockRequest) -> bool:
        """Whether this row's block comes from Redis: on the tier, at most MAX_BLOCK, and the deployment known."""
        config = tier_config()
        if config is None or not config.covers(request.name) or request.wanted > config.max_block:
            return False
        if (request.alias, request.name) in self.learned.refused:
            return False
        try:
            deployment(
                request.alias
            )  # read once per process: the database down, the table path says so as it always has
        except (DatabaseError, InterfaceError):
            return False
        return True

    def allocate(self, request: BlockRequest) -> Allocation:
        """A block from Redis for a row it serves(); the table's while Redis is left alone (FALLBACK)."""
        import redis  # the redis extra: tier_config() is None without it

        alias, name = request.alias, request.name
        config = tier_config()
        if config is None or not config.covers(name):
            raise SequenceMisconfigured(name, "it is not on the Redis tier (REDIS['SEQUENCES'])")
        figures = TierFigures()
        call = _Call(request, config, figures, Allocation(tier=figures))
        learned = self.learned
        if time.monotonic() < max(learned.skip_until, learned.stalled.get((alias, name), 0.0)):
            if not config.fallback:
                error = redis.ConnectionError(f"it failed less than RETRY_AFTER ({config.retry_after:g} s) ago")
                raise SequenceRedisUnavailable(name, alias, error, config.retry_after)
            return self._from_table(call)
        try:
            return self._from_redis(call)
        except redis_errors() as exc:
            return self._after_error(call, exc)

    def _from_redis(self, call: _Call) -> Allocation:
        """TAKE until Redis hands out a block, refilling it when it holds nothing valid; the table if a refill
        stalls."""
        config, result = call.config, call.result
        learned = self.learned
        tier = clients.tier(config.raw)
        key, lease = state_keys(config, call.request.alias, call.name)
        want = min(max(call.request.wanted, call.request.prefer or config.max_block), config.max_block)
        # A refill in flight elsewhere is waited for a moment with FALLBACK on (then the table serves this call, and
        # this row's next calls while the lease can last), else as long as its lease can last.
        deadline = time.monotonic() + (REFILL_WAIT if config.fallback else _lease_seconds())
        pause = 0.001
        while True:
            reply = tier.take(keys=[key], args=[call.request.wanted, want, config.refill_at])
            code = int(reply[0])
            if code == 1:
                base = int(reply[1])
                result.block = Block(base + int(reply[2]), base + int(reply[3]))
                result.step = learned.steps.get(call.row, 0)
                call.figures.takes += 1
                if int(reply[4]):
                    self._refill_ahead(call, tier, key, lease)
                return result
            if code == -2:
                call.figures.fenced += 1
                logger.warning(
                    "Sequence %r: Redis held a state made by another server process or history (%s): dropped, "
                    "refilled from the table (its unused numbers are a gap).",
                    call.name, _text(reply[1])[:12],
                )  # fmt: skip
            installed, own = self._refill(call, tier, key, lease, urgent=True)
            if own is not None:
                return own
            if installed:
                continue
            if time.monotonic() >= deadline:
                if config.fallback:  # another process's refill is slow or stuck: the table serves meanwhile
                    learned.stalled[call.row] = time.monotonic() + STALL_SKIP
                return self._from_table(call)
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def _refill(
        self, call: _Call, tier: clients.Tier, key: str, lease: str, *, urgent: bool
    ) -> tuple[bool, Allocation | None]:
        """Reserve a super-segment from the table and offer it to Redis once, under the row's lease.

        Returns (installed, own): `own` is an allocation to hand out directly instead (a block taken in the
        caller's transaction, or a cycling row). A super-segment Redis refused is never handed out: the same
        INSTALL sent twice finds its own super-segment there, which other processes take blocks of.
        """
        # redis-py's Lock: SET NX PX with a token of its own, released only by its holder, never waited for here.
        held = tier.client.lock(lease, timeout=_lease_seconds(), thread_local=False)
        if not held.acquire(blocking=False):
            return False, None
        try:
            if not urgent and tier.client.hexists(key, "pbase"):
                return False, None  # another process's refill came first
            reservation = self.table.allocate(call.request.preferring(self._super_size(call)))
            if self._keep_off_redis(call, reservation):
                return False, _merged(reservation, call.result)
            _add_costs(call.result, reservation)
            if _skipped(reservation):  # the table's fence skipped (a restore or failover): Redis's states are older
                why = "the table skipped ahead (a restore or failover)"
                _retire(call, tier, key, reservation.block.first - 1, why)
            return _install(call, tier, key, reservation.block), None
        finally:
            with contextlib.suppress(Exception):  # the lease expires by itself (LockNotOwnedError: it did)
                held.release()

    def _refill_ahead(self, call: _Call, tier: clients.Tier, key: str, lease: str) -> None:
        """The refill Redis asked for with a block in hand: its failure costs that block nothing, it is only logged."""
        try:
            self._refill(call, tier, key, lease, urgent=False)
        except Exception as exc:  # noqa: BLE001 - the next TAKE that finds Redis empty refills, or fails, itself
            if type(exc).__module__.startswith("redis"):
                self.learned.skip_until = time.monotonic() + call.config.retry_after
            logger.warning("Sequence %r: reserving the next super-segment for Redis failed: %s", call.name, exc)

    def _keep_off_redis(self, call: _Call, reservation: Allocation) -> bool:
        """A block taken inside the caller's transaction (it may roll back), or a cycling row, never goes to Redis."""
        row, key = reservation.row, call.row
        if row is not None:
            self.learned.caps[key] = max(1, (row.max_value - row.min_value + 1) // 64)
            self.learned.steps[key] = row.step
            if row.cycle:
                self.learned.refused.add(key)
                logger.warning("Sequence %r cycles: it takes its blocks from the table, not from Redis.", call.name)
                return True
        return reservation.provisional

    def _super_size(self, call: _Call) -> int:
        """SUPER_STEP (or the row's SUPER_STEPS entry), at most a 64th of the row's limits.

        Until this process has seen the row's limits, MAX_BLOCK: a four-digit daily row must not lend its
        whole day to Redis at its first refill, where a fault would cost all of it.
        """
        size = call.config.super_size(call.name)
        cap = self.learned.caps.get(call.row)
        return min(size, call.config.max_block if cap is None else cap)

    def _after_error(self, call: _Call, error: Exception) -> Allocation:
        """Redis failed: leave it alone for RETRY_AFTER seconds and take the block from the table (FALLBACK)."""
        config = call.config
        self.learned.skip_until = time.monotonic() + config.retry_after
        if not config.fallback:
            raise SequenceRedisUnavailable(call.name, call.request.alias, error, config.retry_after) from error
        logger.warning(
            "Sequence %r: Redis failed (%s): blocks come from the table for %g s.",
            call.name, error, config.retry_after,
        )  # fmt: skip
        return self._from_table(call)

    def _from_table(self, call: _Call) -> Allocation:
        """Today's path, counted as a fallback; never a larger block than a super-segment."""
        prefer = min(call.request.prefer, self._super_size(call))
        allocation = self.table.allocate(call.request.preferring(prefer))
        call.figures.fallbacks += 1
        return _merged(allocation, call.result)


def redis_errors() -> tuple[type[Exception], ...]:
    """What redis-py raises when Redis fails: its RedisError, and RedisClusterException (a cluster it cannot
    reach), which is not one."""
    from redis.exceptions import RedisClusterException, RedisError  # the redis extra, as in allocate()

    return (RedisError, RedisClusterException)


def state_keys(config: TierConfig, alias: str, name: str) -> tuple[str, str]:
    """The row's state hash and refill lease: one hash tag, so one Cluster slot; named after the deployment."""
    tag = f"{config.key_prefix}{{{deployment(alias)}:{name}}}"
    return tag, f"{tag}:lease"


def pad(number: int) -> str:
    """A BIGINT as 20 digits that compare as the numbers do."""
    return f"{number + BIGINT_OFFSET:020d}"


def _install(call: _Call, tier: clients.Tier, key: str, block: Block) -> bool:
    """INSTALL the super-segment, once; no clear answer abandons it (a gap) before the error goes on.

    True when Redis holds it now. A super-segment not above what Redis holds was lent by the table again: unless
    a later reservation came first, the table went back (a restore) while Redis kept what it had lent before.
    """
    try:
        reply = tier.install(keys=[key], args=[str(block.first - 1), block.size, pad(block.first), pad(block.last)])
    except Exception:
        _abandon(call, block, "Redis gave no clear answer to its INSTALL")
        raise
    code = int(reply[0])
    if code == 1 and len(reply) > 1:
        call.figures.fenced += 1
        logger.warning(
            "Sequence %r: Redis held a state made by another server process or history (%s): replaced.",
            call.name, _text(reply[1])[:12],
        )  # fmt: skip
    if code in (1, 2, 3):
        call.figures.refills += int(code != 3)
        return True
    if code == 0:
        top = int(_text(reply[1])) - BIGINT_OFFSET
        if _caught_up(call, top):
            _retire(call, tier, key, top, f"the table stood below {top}, the top of what it had lent Redis")
            _abandon(call, block, "the table went back below what Redis holds (a restore?): moved past it")
            return False
    _abandon(call, block, "Redis refused it (another process's refill came first)")
    return False


def _caught_up(call: _Call, top: int) -> bool:
    """Whether the row stood below `top` and was moved up to it; a database error leaves that to the next refill."""
    try:
        return table.catch_up(call.request.alias, call.name, top)
    except (DatabaseError, InterfaceError) as exc:
        logger.warning(
            "Sequence %r: moving the row up to %d, the top of Redis's state, failed: %s", call.name, top, exc
        )
        return False


def _skipped(reservation: Allocation) -> bool:
    """Whether the table's fence skipped numbers before this reservation (a restore or failover it saw)."""
    row = reservation.row
    return row is not None and reservation.block.first - 1 > max(row.value, row.min_value - 1)


def _retire(call: _Call, tier: clients.Tier, key: str, floor: int, why: str) -> None:
    """Empty the row's state in Redis and refuse any super-segment at or below `floor` there from now on."""
    tier.retire(keys=[key], args=[pad(floor)])
    call.figures.fenced += 1
    logger.warning("Sequence %r: the Redis state was emptied (its unused numbers are a gap): %s.", call.name, why)


def _lease_seconds() -> float:
    """How long a refill may hold the row's lease: its compare-and-set waits at most LOCK_TIMEOUT per try."""
    return 2 * float(app_settings()["LOCK_TIMEOUT"]) + 1


def _abandon(call: _Call, block: Block, why: str) -> None:
    call.figures.abandoned += 1
    logger.warning(
        "Sequence %r: super-segment %d to %d abandoned, never offered again (a gap): %s.",
        call.name, block.first, block.last, why,
    )  # fmt: skip


def _add_costs(result: Allocation, allocation: Allocation) -> None:
    result.retries += allocation.retries
    result.failures += allocation.failures
    result.busy += allocation.busy
    result.round_trips += allocation.round_trips


def _merged(allocation: Allocation, result: Allocation) -> Allocation:
    """The table's allocation with the tier's figures (and the costs of any reservation made before it)."""
    _add_costs(allocation, result)
    allocation.tier = result.tier
    return allocation


redis_source = RedisSource(TableSource())
os.register_at_fork(after_in_child=redis_source.learned.reset)


@receiver(setting_changed)
def _forget(*, setting: str, **kwargs: Any) -> None:
    """New settings may name another server: what this process learned of the old one no longer holds."""
    if setting in (SETTING_NAME, "CACHES"):
        redis_source.learned.reset()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
