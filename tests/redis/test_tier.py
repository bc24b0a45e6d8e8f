"""The tier in this process against one real Redis: blocks inside super-segments, fencing, refills, fallback."""

from __future__ import annotations

import pytest

from django_segment_seq import next_value, next_values, sequence_stats
from django_segment_seq.allocator.request import BlockRequest
from django_segment_seq.api import clear_cache
from django_segment_seq.cache.sources import tiered
from django_segment_seq.models import Sequence
from django_segment_seq.redistier.config import tier_config
from django_segment_seq.redistier.source import state_keys
from tests.conftest import assert_unique
from tests.redis.conftest import tier

allocate = tiered.allocate  # the cache's source: Redis for rows on the tier, else the table

pytestmark = pytest.mark.django_db(transaction=True)


def key_of(name: str) -> str:
    config = tier_config()
    assert config is not None
    return state_keys(config, "default", name)[0]


def figures(name: str) -> dict[str, int]:
    stats = sequence_stats()[("default", name)]
    return {
        field: getattr(stats, field) for field in ("redis_takes", "redis_refills", "redis_fenced", "redis_fallbacks")
    }


def test_blocks_come_from_redis_inside_one_super_segment(settings, redis_server):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    numbers = [next_value("r1") for _ in range(95)] + list(next_values("r1", 5))
    assert_unique(numbers, 100)
    # The first super-segment, before this process knows the row's limits, is MAX_BLOCK under the row's step
    # (1,000): [1, 1000], blocks of 10 taken in order, one table write.
    assert numbers == list(range(1, 101))
    assert Sequence.objects.get(name="r1").value == 1000
    assert figures("r1") == {"redis_takes": 10, "redis_refills": 1, "redis_fenced": 0, "redis_fallbacks": 0}


def test_rows_off_the_tier_and_large_counts_use_the_table(settings, redis_server):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    Sequence.objects.create(name="plain", step=7)
    assert next_value("plain") == 1 and Sequence.objects.get(name="plain").value == 7
    assert list(next_values("r2", 50)) == list(range(1, 51))  # over MAX_BLOCK: straight from the table
    assert redis_server.client().keys("*") == []


def test_a_foreign_run_id_is_dropped_and_the_refill_lands_above_the_table(settings, redis_server):
    """A state whose run_id is another server process's (a restart from an old RDB, a promoted replica)."""
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    assert next_value("r3") == 1
    redis_server.client().hset(key_of("r3"), mapping={"run": "ab" * 20, "used": 0})  # as an older copy would be
    clear_cache()
    assert next_value("r3") == 1001  # above the table's value, never the old state's next numbers
    assert figures("r3")["redis_fenced"] == 1


@pytest.mark.parametrize("fault", ["flushall", "delete"])
def test_a_state_lost_is_refilled_above_the_table(settings, redis_server, fault):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    first = [next_value("r4") for _ in range(30)]
    client = redis_server.client()
    client.flushall() if fault == "flushall" else client.delete(key_of("r4"))
    clear_cache()
    after = [next_value("r4") for _ in range(30)]
    assert_unique(first + after, 60)
    assert min(after) == 1001


def test_a_restarted_redis_is_refilled_above_the_table(settings, redis_server):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    first = [next_value("r5") for _ in range(25)]
    redis_server.restart()
    clear_cache()
    after = [next_value("r5") for _ in range(25)]  # the first TAKE fails (the old connection): from the table
    assert_unique(first + after, 50)


def test_redis_down_falls_back_to_the_table(settings, redis_server):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    first = [next_value("r6") for _ in range(15)]
    redis_server.kill()
    clear_cache()
    after = [next_value("r6") for _ in range(15)]
    assert_unique(first + after, 30)
    assert min(after) > 1000 and figures("r6")["redis_fallbacks"] >= 1


def test_without_fallback_redis_down_is_an_error(settings, redis_server):
    from django_segment_seq.exceptions import SequenceUnavailable

    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url, FALLBACK=False)}
    redis_server.kill()
    with pytest.raises(SequenceUnavailable):
        next_value("r7")


def test_a_block_taken_in_the_callers_transaction_never_goes_to_redis(settings, redis_server):
    from django.db import transaction

    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    with transaction.atomic():
        Sequence.objects.create(name="r8", step=5)  # this transaction holds the new row
        allocation = allocate(BlockRequest("default", "r8", 1))
        assert allocation.provisional
    assert redis_server.client().keys("*r8*") == []


def test_two_deployments_sharing_one_redis_use_their_own_keys(settings, redis_server):
    """The key names the deployment (the database), not only KEY_PREFIX: another database, other keys."""
    from django_segment_seq.redistier import deployment_id

    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    mine = key_of("r9")
    deployment_id._known["default"] = "000000000000"  # as another deployment's processes name it
    try:
        assert key_of("r9") != mine
    finally:
        deployment_id._known.clear()


def test_numbers_above_2_to_the_53_stay_exact(settings, redis_server):
    """Lua numbers are doubles: the state keeps an exact decimal base and small offsets, so big rows work."""
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    start = 2**62 + 12_345
    Sequence.objects.create(name="r-big", value=start)
    numbers = [next_value("r-big") for _ in range(25)]
    assert numbers == list(range(start + 1, start + 26))


def test_the_server_of_a_django_cache_alias(settings, redis_server):
    """CACHE names a CACHES alias: the tier uses its server (with a client of its own, retries off)."""
    settings.CACHES = {
        **settings.CACHES,
        "shared": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": [redis_server.url]},
    }
    redis = {key: value for key, value in tier().items()} | {"CACHE": "shared"}
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": redis}
    assert [next_value("r-cache") for _ in range(3)] == [1, 2, 3]
    assert redis_server.client().keys("segseq:*")


def test_a_four_digit_daily_field_lends_redis_a_small_share_of_its_day(settings, redis_server):
    """A daily row capped at 9999 by its format: super-segments of at most a 64th of the day (156)."""
    from tests.testapp.models import KindTicket

    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url, SEQUENCES=["kind-ticket@*"])}
    Sequence.objects.create(name="kind-ticket", step=10)  # its days take this step, the floor of a super-segment
    codes = [KindTicket.objects.create(kind="IS").code for _ in range(400)]
    assert len(set(codes)) == 400 and codes[0].endswith("0001")
    [row] = Sequence.objects.filter(base_name="kind-ticket")
    assert row.max_value == 9999
    assert row.value <= 400 + 2 * 156  # never the whole day: what a Redis fault could cost stays small
    assert figures(row.name)["redis_takes"] >= 40
