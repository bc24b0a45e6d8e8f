"""fill_empty: empty values numbered in batches and primary-key order, resumable, leaving rows others filled alone."""

import pytest

from django_segment_seq import api, backfill
from django_segment_seq.backfill import count_empty, fill_empty
from tests.conftest import assert_unique
from tests.testapp.models import ImportedOrder, Invoice

pytestmark = pytest.mark.django_db(transaction=True)


def empty_rows(count: int) -> list[int]:
    # Values given, so the inserts take no numbers; then emptied, as rows from before the field look.
    ImportedOrder.objects.bulk_create([ImportedOrder(number=0, code="-", ref="-") for _ in range(count)])
    ImportedOrder.objects.update(number=None, code=None, ref="")
    return list(ImportedOrder.objects.order_by("pk").values_list("pk", flat=True))


def numbers() -> list[int]:
    return list(ImportedOrder.objects.order_by("pk").values_list("number", flat=True))


def test_fills_in_batches_in_primary_key_order():
    empty_rows(10)
    assert count_empty(ImportedOrder, "number") == 10
    picked = []
    result = fill_empty(
        ImportedOrder, "number", batch_size=3, progress=lambda rows, filled: picked.append((rows, filled))
    )
    assert (result.filled, result.skipped, result.batches) == (10, 0, 4)
    assert picked == [(3, 3), (3, 3), (3, 3), (1, 1)]
    first = numbers()[0]
    assert numbers() == list(range(first, first + 10))
    assert count_empty(ImportedOrder, "number") == 0


def test_one_allocation_per_batch_for_an_integer_field():
    empty_rows(10)
    fill_empty(ImportedOrder, "number", batch_size=5)
    assert api.sequence_stats()[("default", "imported-order")].handed_out == 10


def test_a_second_run_resumes_where_the_first_stopped():
    empty_rows(7)

    def stop_after_first_batch(rows: int, filled: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fill_empty(ImportedOrder, "number", batch_size=3, progress=stop_after_first_batch)
    assert count_empty(ImportedOrder, "number") == 4
    assert fill_empty(ImportedOrder, "number", batch_size=3).filled == 4
    assert_unique(numbers(), 7)


def test_rows_filled_by_others_meanwhile_are_left_alone(monkeypatch):
    pks = empty_rows(4)
    taken = api.next_values

    def next_values_while_the_site_writes(name, count, **kwargs):
        ImportedOrder.objects.filter(pk=pks[2]).update(number=99999)  # a request fills this row meanwhile
        return taken(name, count, **kwargs)

    monkeypatch.setattr(backfill, "next_values", next_values_while_the_site_writes)
    result = fill_empty(ImportedOrder, "number", sync=False)
    assert (result.filled, result.skipped) == (3, 1)
    assert numbers()[2] == 99999
    assert_unique(numbers(), 4)


def test_moves_past_stored_numbers_first():
    empty_rows(2)
    ImportedOrder.objects.create(number=700)
    fill_empty(ImportedOrder, "number")
    assert numbers() == [701, 702, 700]


def test_formatted_field_numbers_through_its_format(clock):
    empty_rows(3)
    ImportedOrder.objects.filter(pk=ImportedOrder.objects.order_by("pk")[0].pk).update(code="")
    result = fill_empty(ImportedOrder, "code", batch_size=2)
    assert result.filled == 3
    codes = list(ImportedOrder.objects.order_by("pk").values_list("code", flat=True))
    assert codes == ["IM20261122-00001", "IM20261122-00002", "IM20261122-00003"]


def test_callable_format_numbers_without_sync():
    empty_rows(2)
    assert fill_empty(ImportedOrder, "ref").filled == 2
    assert ImportedOrder.objects.order_by("pk").values_list("ref", flat=True)[0].startswith("PAY/")


@pytest.mark.parametrize("size", [0, -1])
def test_batch_size_below_one_is_refused(size):
    with pytest.raises(ValueError, match="batch_size"):
        fill_empty(ImportedOrder, "number", batch_size=size)


def test_primary_key_is_refused():
    with pytest.raises(ValueError, match="primary key"):
        fill_empty(Invoice, "id")
