"""SequenceRouter: the Sequence table in its own SQLite file, independent of the caller's transactions."""

import pytest
from django.conf import settings
from django.db import transaction
from django.test import override_settings

from django_segment_seq import clear_cache, next_value, sequence_stats
from django_segment_seq.models import Sequence
from django_segment_seq.routers import SequenceRouter
from tests.conftest import assert_unique
from tests.testapp.models import Invoice, Order

pytestmark = [
    pytest.mark.skipif(settings.BACKEND != "sqlite", reason="the second database is a SQLite file"),
    pytest.mark.django_db(transaction=True, databases=["default", "sequences"]),
]


class Boom(Exception):
    pass


@pytest.fixture
def separate_file():
    with override_settings(
        SEGMENT_SEQ={**settings.SEGMENT_SEQ, "DATABASE": "sequences"},
        DATABASE_ROUTERS=["django_segment_seq.routers.SequenceRouter"],
    ):
        clear_cache()
        yield
    clear_cache()


def test_router_sends_only_the_app_to_the_named_database(separate_file):
    router = SequenceRouter()
    assert router.db_for_write(Sequence) == "sequences"
    assert router.db_for_read(Sequence) == "sequences"
    assert router.db_for_write(Order) is None
    assert router.allow_migrate("sequences", "django_segment_seq") is True
    assert router.allow_migrate("default", "django_segment_seq") is False
    assert router.allow_migrate("default", "testapp") is None


def test_rollback_inside_a_writing_transaction_repeats_nothing(separate_file):
    """The caller holds the data file's write lock; the Sequence file is free, so ranges commit on their own."""
    Sequence.objects.create(name="order", step=3)
    kept: list[int] = []
    for _ in range(4):
        with pytest.raises(Boom), transaction.atomic():
            Invoice.objects.create(id=10_000)  # the caller now holds the data file's lock
            kept.extend(Order.objects.create().order_no for _ in range(5))
            kept.append(next_value("order"))
            raise Boom
    after = [Order.objects.create().order_no for _ in range(10)]
    assert_unique(kept + after, 34)
    stats = sequence_stats()[("sequences", "order")]
    assert stats.fetched_in_caller_transaction == 0
    assert Sequence.objects.using("sequences").get(name="order").value >= max(kept + after)
    assert not Sequence.objects.using("default").filter(name="order").exists()
