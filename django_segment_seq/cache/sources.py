"""Which BlockSource serves a row: the Redis tier's for the rows it covers, the Sequence table's for all others."""

from __future__ import annotations

from django_segment_seq.allocator.request import Allocation, BlockRequest
from django_segment_seq.allocator.source import BlockSource
from django_segment_seq.redistier.source import RedisSource, redis_source

__all__ = ["TieredSource", "tiered"]


class TieredSource:
    """A BlockSource that asks `redis` for the rows it serves and `table` for every other row."""

    def __init__(self, table: BlockSource, redis: RedisSource) -> None:
        self.table = table
        self.redis = redis

    def allocate(self, request: BlockRequest) -> Allocation:
        """The block from the source that serves this row (Redis: on the tier and at most MAX_BLOCK numbers)."""
        source: BlockSource = self.redis if self.redis.serves(request) else self.table
        return source.allocate(request)


# The cache's source unless it is given another (tests give it a MemorySource).
tiered = TieredSource(redis_source.table, redis_source)
