"""Seeding a row on the Redis tier (`segment_seq sync LABEL --sequence NAME`): what Redis held of the row, lent by
the table before the seed and below the seeded value, is emptied, so no process takes numbers below it from Redis."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from django_segment_seq import next_value
from django_segment_seq.redistier import state
from tests.conftest import assert_unique
from tests.redis.conftest import tier
from tests.testapp.models import LegacyOrder

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_seed_empties_what_redis_holds_below_it(settings, redis_server):
    settings.SEGMENT_SEQ = {**settings.SEGMENT_SEQ, "REDIS": tier(redis_server.url)}
    before = [next_value("r-seed") for _ in range(5)]  # Redis holds the rest of the super-segment it was lent
    assert state.held("default", "r-seed") is not None
    LegacyOrder.objects.bulk_create([LegacyOrder(number=str(n)) for n in range(100001, 100011)])
    out = StringIO()
    call_command("segment_seq", "sync", "testapp.LegacyOrder.number", "--sequence", "r-seed", stdout=out)
    after = [next_value("r-seed") for _ in range(50)]  # blocks from Redis, refilled from the table above the seed
    assert_unique(before + after)
    assert min(after) > 100010
    assert "to 100010, the highest value stored" in out.getvalue()
    assert "its Redis state was emptied" in out.getvalue()
