"""Bulk numbering: one allocation per sequence per bulk_create, contiguous blocks as ranges."""

import pytest
from django.db import transaction
from django.test import override_settings

from django_segment_seq import fill_sequences, next_values, sequence_stats
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.testapp.models import BulkItem, Order

pytestmark = pytest.mark.django_db(transaction=True)


def fetched(name: str) -> int:
    return sequence_stats()[("default", name)].ranges_fetched


def test_bulk_create_allocates_once_per_sequence():
    Sequence.objects.create(name="bulk-id", step=10)
    Sequence.objects.create(name="bulk-serial", step=10)
    items = BulkItem.objects.bulk_create([BulkItem(note=str(i)) for i in range(3000)])
    assert [i.pk for i in items] == list(range(1, 3001))
    assert [i.serial for i in items] == list(range(1, 3001))
    assert fetched("bulk-id") == 1 and fetched("bulk-serial") == 1
    assert_unique(BulkItem.objects.values_list("pk", flat=True), 3000)
    assert_unique(BulkItem.objects.values_list("serial", flat=True), 3000)


def test_bulk_create_keeps_explicit_values_and_numbers_the_rest():
    items = BulkItem.objects.bulk_create([BulkItem(id=500, serial=7), BulkItem(), BulkItem(serial=9)])
    assert [(i.pk, i.serial) for i in items] == [(500, 7), (1, 1), (2, 9)]


def test_bulk_create_inside_a_writing_transaction():
    """On SQLite the transaction holds the write lock: still one allocation, and no wait per number."""
    Sequence.objects.create(name="bulk-id", step=10)
    with transaction.atomic():
        BulkItem.objects.create(id=10_000)
        items = BulkItem.objects.bulk_create([BulkItem() for _ in range(2000)])
    assert_unique([i.pk for i in items] + [10_000], 2001)
    assert_unique(BulkItem.objects.values_list("serial", flat=True), 2001)


def test_fill_sequences_groups_models_and_fields_per_sequence():
    objs = [Order() for _ in range(5)] + [BulkItem() for _ in range(5)]
    assert fill_sequences(objs) == 15
    assert [o.order_no for o in objs[:5]] == [1, 2, 3, 4, 5]
    assert fetched("order") == 1 and fetched("bulk-id") == 1 and fetched("bulk-serial") == 1


@override_settings(SEGMENT_SEQ={"PREFETCH": True, "ADAPTIVE_STEP": True})
def test_large_next_values_is_one_round_of_allocation_and_a_range():
    Sequence.objects.create(name="big", step=100)
    first = next_values("big", 10)
    numbers = next_values("big", 250_000)
    assert isinstance(numbers, range) and len(numbers) == 250_000
    assert numbers.start > first.stop - 1
    assert sequence_stats()[("default", "big")].foreground_fetches == 2


def test_gapless_fields_are_left_to_the_locked_path():
    """fill_sequences must not hand a gapless field numbers from a cached range."""
    from tests.testapp.models import CountedInvoice

    objs = [CountedInvoice() for _ in range(3)]
    assert fill_sequences(objs) == 0
    assert [obj.number for obj in objs] == [None, None, None]
    with transaction.atomic():
        CountedInvoice.objects.bulk_create(objs)
    assert sorted(CountedInvoice.objects.values_list("number", flat=True)) == [1, 2, 3]
