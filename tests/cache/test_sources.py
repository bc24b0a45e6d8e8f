"""The cache takes its blocks from the BlockSource it is given: the same cache over a source in memory hands out
every number once, and never touches the Sequence table."""

import threading

import pytest
from django.test import override_settings

from django_segment_seq.allocator.request import BlockRequest
from django_segment_seq.allocator.source import MemorySource, TableSource
from django_segment_seq.cache.range_cache import RangeCache, ranges
from django_segment_seq.cache.sources import TieredSource
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_cache_over_a_memory_source_hands_out_each_number_once():
    cache = RangeCache(MemorySource(step=50))
    taken: list[list[int]] = [[] for _ in range(4)]

    def work(mine: list[int]) -> None:
        mine.extend(cache.take("default", "in-memory") for _ in range(2000))

    with override_settings(SEGMENT_SEQ={"PREFETCH": False, "ADAPTIVE_STEP": False}):
        threads = [threading.Thread(target=work, args=(mine,)) for mine in taken]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    numbers = [number for mine in taken for number in mine]
    assert len(numbers) == 8000
    assert_unique(numbers)
    assert max(numbers) <= 8000 + 50  # blocks of 50 from 1, one slot: at most one block's rest unused
    assert not Sequence.objects.filter(name="in-memory").exists()


def test_the_process_cache_asks_the_table_for_rows_off_the_redis_tier():
    assert isinstance(ranges.source, TieredSource) and isinstance(ranges.source.table, TableSource)
    block = ranges.source.allocate(BlockRequest("default", "off-tier", 3)).block
    assert block.size >= 3 and Sequence.objects.get(name="off-tier").value >= block.last
