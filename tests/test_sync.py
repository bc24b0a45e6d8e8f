"""sync_sequence: the sequence moves past values imported into its column, forward only; the local cache is dropped."""

import pytest

from django_segment_seq import next_value, next_values
from django_segment_seq.flow.parsing import UnparseableFormat
from django_segment_seq.models import Sequence
from django_segment_seq.sync import sync_sequence
from tests.testapp.models import ImportedOrder, Order

pytestmark = pytest.mark.django_db(transaction=True)


def test_moves_past_the_highest_imported_number():
    ImportedOrder.objects.bulk_create([ImportedOrder(number=n) for n in (17, 500, 42)])
    (result,) = sync_sequence(ImportedOrder, "number").rows
    assert (result.row_name, result.highest, result.after, result.moved) == ("imported-order", 500, 500, True)
    assert Sequence.objects.get(name="imported-order").value == 500
    assert ImportedOrder.objects.create().number == 501


def test_forgets_the_ranges_this_process_cached():
    assert next_value("order") == 1  # this process now holds 1..1000
    Order.objects.create(order_no=5000)
    sync_sequence(Order, "order_no")
    assert Order.objects.create().order_no == 5001


def test_never_moves_backwards():
    next_values("imported-order", 2000)
    ImportedOrder.objects.create(number=10)
    (result,) = sync_sequence(ImportedOrder, "number").rows
    assert (result.before, result.after, result.moved) == (2000, 2000, False)
    assert Sequence.objects.get(name="imported-order").value == 2000


def test_an_empty_column_changes_nothing():
    report = sync_sequence(ImportedOrder, "number")
    assert report.highest is None and not report.rows
    assert not Sequence.objects.filter(name="imported-order").exists()


def test_formatted_field_moves_the_row_of_every_period_its_texts_show(clock):
    ImportedOrder.objects.bulk_create(
        [ImportedOrder(code=text) for text in ("IM20261122-00042", "IM20261122-00007", "IM20261121-00999", "legacy-1")]
    )
    report = sync_sequence(ImportedOrder, "code")
    assert [(row.row_name, row.highest, row.after, row.created) for row in report.rows] == [
        ("imported-code@2026-11-21", 999, 999, True),
        ("imported-code@2026-11-22", 42, 42, True),
    ]
    assert report.unreadable == 1
    row = Sequence.objects.get(name="imported-code@2026-11-22")
    assert (row.base_name, row.period, row.max_value) == ("imported-code", "2026-11-22", 99999)
    assert ImportedOrder.objects.create().code == "IM20261122-00043"


def test_texts_of_another_shape_are_counted_and_ignored(clock):
    ImportedOrder.objects.bulk_create([ImportedOrder(code=text) for text in ("IM20261122-00005", "IM20261122-x")])
    report = sync_sequence(ImportedOrder, "code")
    assert (report.highest, report.unreadable) == (5, 1)


def test_callable_format_is_refused():
    ImportedOrder.objects.create(ref="PAY/26/EUR/9")
    with pytest.raises(UnparseableFormat, match="callable"):
        sync_sequence(ImportedOrder, "ref")


def test_highest_above_the_maximum_is_refused_and_changes_nothing():
    Sequence.objects.create(name="imported-order", step=10, max_value=100)
    ImportedOrder.objects.create(number=101)
    with pytest.raises(ValueError, match="above the row's maximum 100"):
        sync_sequence(ImportedOrder, "number")
    assert Sequence.objects.get(name="imported-order").value == 0


@pytest.mark.parametrize("field, message", [("nope", "has no field 'nope'"), ("currency", "not a SequenceField")])
def test_other_fields_are_refused(field, message):
    with pytest.raises(ValueError, match=message):
        sync_sequence(ImportedOrder, field)
