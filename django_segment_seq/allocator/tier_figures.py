"""What the Redis tier did to produce one block: the figures an Allocation carries up to SequenceStats."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class TierFigures:
    """Counted per block by the Redis source; the cache adds them up as SequenceStats' redis_* figures."""

    # Blocks taken from Redis.
    takes: int = 0
    # Super-segments installed in Redis.
    refills: int = 0
    # Redis states found made by another server process (a restart, a promoted replica, a moved slot): dropped.
    fenced: int = 0
    # Super-segments whose INSTALL got no clear answer: never offered again, a gap.
    abandoned: int = 0
    # Blocks taken from the table because Redis failed or was being left alone (RETRY_AFTER).
    fallbacks: int = 0
