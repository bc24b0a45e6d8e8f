"""Random interleavings of takes, refills, kills, flushes, deleted keys, foreign states and stale reloads against
one real Redis: every block is disjoint from every other, and the table's value stays above all of them."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from django_segment_seq.allocator.request import BlockRequest
from django_segment_seq.cache.sources import tiered
from django_segment_seq.models import Sequence
from django_segment_seq.redistier.config import tier_config
from django_segment_seq.redistier.source import state_keys
from tests.redis.conftest import tier

allocate = tiered.allocate  # the cache's source: Redis for rows on the tier, else the table

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("take"), st.integers(1, 10)),
        st.tuples(
            st.sampled_from(["save", "restart", "restart-from-save", "flushall", "delete", "foreign"]), st.just(0)
        ),
    ),
    min_size=1,
    max_size=25,
)
rows = itertools.count()


@hypothesis_settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(steps=STEPS)
def test_random_interleavings_never_repeat(settings, redis_server, steps):
    settings.SEGMENT_SEQ = {
        **settings.SEGMENT_SEQ,
        "REDIS": tier(redis_server.url, SUPER_STEP=30, SUPER_STEPS={}, REFILL_AT=0.5, RETRY_AFTER=0),
    }
    name = f"r-prop-{next(rows)}"
    config = tier_config()
    assert config is not None
    key = state_keys(config, "default", name)[0]
    held: list[tuple[int, int]] = []
    for action, count in steps:
        if action == "take":
            block = allocate(BlockRequest("default", name, count, prefer=count)).block
            assert block.size >= count
            held.append((block.first, block.last))
            assert Sequence.objects.get(name=name).value >= block.last  # the table stays above Redis
        else:
            disturb(redis_server, action, key)
    held.sort()
    for (_, last), (first, _) in itertools.pairwise(held):
        assert first > last, f"blocks overlap: {held}"


def disturb(server, action: str, key: str) -> None:
    client = server.client()
    if action == "save":
        client.save()
    elif action == "restart":
        (server.dir / "dump.rdb").unlink(missing_ok=True)
        server.restart()  # kill -9, nothing persisted
    elif action == "restart-from-save":
        server.restart()  # kill -9, the last SAVE loaded: an older state, if one was saved
    elif action == "flushall":
        client.flushall()
    elif action == "delete":
        client.delete(key)
    elif client.exists(key):
        client.hset(key, "run", "0" * 40)  # a foreign server process's state
