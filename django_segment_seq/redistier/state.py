"""What Redis holds for one row, read for the admin, and dropping it (a gap, never a repeat: the next
super-segment comes from the table, above everything Redis ever held)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django_segment_seq.redistier import clients
from django_segment_seq.redistier.config import tier_config
from django_segment_seq.redistier.source import pad, state_keys


@dataclass(frozen=True)
class HeldState:
    """The super-segment Redis hands out for a row, and whether this server process installed it (else unused)."""

    first: int
    last: int
    left: int
    pending: tuple[int, int] | None
    valid: bool
    run_id: str


def on_tier(name: str) -> bool:
    config = tier_config()
    return config is not None and config.covers(name)


def held(alias: str, name: str) -> HeldState | None:
    """The row's state in Redis, None when it holds none; redis-py's errors go to the caller."""
    config = tier_config()
    if config is None:
        return None
    tier = clients.tier(config.raw)
    # Lua's false is None in RESP2 and False in RESP3 ("protocol": 3): both mean "no such field".
    run, server, base, used, size, pbase, psize = [
        None if value is None or value is False else value
        for value in tier.read(keys=[state_keys(config, alias, name)[0]])
    ]
    if run is None or base is None:
        return None
    first, size_, used_ = int(base) + 1, int(size or 0), int(used or 0)
    pending = None if pbase is None else (int(pbase) + 1, int(pbase) + int(psize or 0))
    if size_ == 0 and pending is None:
        return None  # emptied (segment_seq advance, a restore): nothing to hand out
    return HeldState(first, first + size_ - 1, size_ - used_, pending, _text(run) == _text(server), _text(run))


def retire(alias: str, floors: dict[str, int]) -> list[str]:
    """Empty the Redis states of the rows of `floors` on the tier, and refuse any super-segment at or below each
    row's floor there from now on (one reserved before `segment_seq advance` moved the row). The names retired."""
    config = tier_config()
    if config is None:
        return []
    tier = clients.tier(config.raw)
    done = []
    for name, floor in floors.items():
        if config.covers(name):
            tier.retire(keys=[state_keys(config, alias, name)[0]], args=[pad(floor)])
            done.append(name)
    return done


def drop(alias: str, name: str) -> bool:
    """Delete the row's state: its unused numbers become a gap. True if there was one."""
    config = tier_config()
    if config is None:
        return False
    return bool(clients.tier(config.raw).client.delete(state_keys(config, alias, name)[0]))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
