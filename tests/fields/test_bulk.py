"""Bulk numbering: one allocation per sequence per bulk_create, contiguous blocks as ranges."""

import pytest
from django.db import models, transaction
from django.test import override_settings
from django.test.utils import isolate_apps

from django_segment_seq import SequenceField, SequenceManager, fill_sequences, next_values, sequence_stats
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.testapp.models import BulkItem, ImportedOrder, Invoice, Order, OwnManager, OwnManagerItem, Parcel

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


def test_plain_managers_get_sequence_managers_bulk_create_and_others_are_kept():
    """The manager Django adds, and a plain one a model declares, number a whole call; a project's own is kept."""
    assert type(Invoice.objects) is SequenceManager and type(Invoice._default_manager) is SequenceManager
    assert type(Order.objects) is SequenceManager
    assert Invoice.objects.auto_created and Invoice.objects.name == "objects"
    assert type(OwnManagerItem.objects) is OwnManager
    assert type(Parcel.objects).__name__ == "Manager"  # formatted fields only: numbered in pre_save, as before


@isolate_apps("tests.testapp")
def test_which_managers_are_switched():
    def meta(**options):
        return type("Meta", (), {"app_label": "testapp", **options})

    class Base(models.Model):
        objects = models.Manager()
        Meta = meta(abstract=True)

    class Declared(models.Model):
        number = SequenceField("declared")
        items = models.Manager()
        Meta = meta()

    class Inherited(Base):
        number = SequenceField("inherited")
        Meta = meta()

    class Migrated(models.Model):
        number = SequenceField("migrated")
        objects = models.Manager()
        objects.use_in_migrations = True
        Meta = meta()

    class Gapless(models.Model):
        number = SequenceField("gapless-only", gapless=True)
        Meta = meta()

    class Proxy(Declared):
        Meta = meta(proxy=True)

    assert type(Declared.items) is SequenceManager and type(Proxy.items) is SequenceManager
    assert type(Inherited.objects) is models.Manager  # the abstract base's instance, shared with its siblings
    assert type(Base._meta.local_managers[0]) is models.Manager
    assert type(Migrated.objects) is models.Manager
    assert type(Gapless.objects) is models.Manager  # gapless numbers are locked one by one in pre_save


def test_default_manager_bulk_create_allocates_once_per_call():
    Sequence.objects.create(name="invoice", step=10)
    Sequence.objects.create(name="order", step=10)
    invoices = Invoice.objects.bulk_create([Invoice(note=str(i)) for i in range(3000)])
    orders = Order.objects.bulk_create(Order() for _ in range(2500))  # a generator works too
    assert [i.pk for i in invoices] == list(range(1, 3001))
    assert [o.order_no for o in orders] == list(range(1, 2501))
    assert fetched("invoice") == 1 and fetched("order") == 1
    assert_unique(Invoice.objects.values_list("pk", flat=True), 3000)
    assert_unique(Order.objects.values_list("order_no", flat=True), 2500)


def test_own_manager_numbers_one_by_one():
    """The per-object path stays correct: every number from the cached ranges, none repeated."""
    Sequence.objects.create(name="own-manager-item", step=10)
    items = OwnManagerItem.objects.bulk_create([OwnManagerItem() for _ in range(300)] + [OwnManagerItem(number=7)])
    assert [i.number for i in items] == [*range(1, 301), 7]
    assert fetched("own-manager-item") > 1  # ranges of at least 10, each fetched on its own


def test_default_manager_keeps_explicit_values_and_numbers_the_rest():
    invoices = Invoice.objects.bulk_create([Invoice(id=500), Invoice(), Invoice(id=7), Invoice()])
    assert [i.pk for i in invoices] == [500, 1, 7, 2]
    orders = Order.objects.bulk_create([Order(order_no=100), Order(), Order(order_no=0)])
    assert [o.order_no for o in orders] == [100, 1, 0]
    assert sorted(Order.objects.values_list("order_no", flat=True)) == [0, 1, 100]


def test_default_manager_numbers_integer_and_formatted_fields_together(clock):
    """The integer field in one allocation; the formatted ones in pre_save, by their own periods and formats."""
    Sequence.objects.create(name="imported-order", step=10)
    rows = ImportedOrder.objects.bulk_create(
        [ImportedOrder(currency="USD") for _ in range(40)] + [ImportedOrder(number=900, code="IMX", ref="R")]
    )
    assert [r.number for r in rows] == [*range(1, 41), 900]
    assert fetched("imported-order") == 1
    assert [r.code for r in rows] == [f"IM20261122-{n:05d}" for n in range(1, 41)] + ["IMX"]
    assert [r.ref for r in rows] == [f"PAY/26/USD/{n}" for n in range(1, 41)] + ["R"]
    stored = ImportedOrder.objects.order_by("pk").values_list("number", "code", "ref")
    assert list(stored) == [(r.number, r.code, r.ref) for r in rows]


@pytest.mark.parametrize("model", [Invoice, BulkItem], ids=["default-manager", "SequenceManager"])
def test_rolled_back_bulk_create_in_a_writing_transaction_leaves_no_repeat(model):
    """On SQLite the numbers come from a block the transaction holds; its rollback must not let them out twice."""
    name = "invoice" if model is Invoice else "bulk-id"
    Sequence.objects.create(name=name, step=1000)  # blocks larger than a call: the rest is held for the transaction
    with pytest.raises(RuntimeError), transaction.atomic():
        model.objects.create(id=100_000)
        model.objects.bulk_create([model() for _ in range(500)])
        raise RuntimeError
    kept = model.objects.bulk_create([model() for _ in range(500)])
    with transaction.atomic():
        model.objects.create(id=100_001)
        kept += model.objects.bulk_create([model() for _ in range(500)])
    kept += model.objects.bulk_create([model() for _ in range(500)])
    assert_unique([obj.pk for obj in kept], 1500)
    assert_unique(model.objects.values_list("pk", flat=True), 1501)


@pytest.mark.parametrize("mode", ["bulk-default", "bulk-default-atomic"])
def test_processes_bulk_creating_through_the_default_manager_never_repeat(run_workers, mode):
    """Four processes, each bulk_create one allocation or none (in transactions, some rolled back): every key once.

    Calls of 137 (37 and 113 in transactions) leave ranges partly used, so calls straddle their ends.
    """
    Sequence.objects.create(name="invoice", step=50)
    results = run_workers([(mode, "invoice", 2000)] * 4, timeout=240)
    got = assert_unique(n for part in results for n in part)
    stored = assert_unique(Invoice.objects.values_list("pk", flat=True))
    assert sorted(stored) == sorted(got)
