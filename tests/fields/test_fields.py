"""SequenceField on real models: filled at insert, explicit values kept, primary keys, bulk_create, migrations."""

import pytest
from django.core import checks
from django.core.management import call_command
from django.db import models
from django.test.utils import isolate_apps

from django_segment_seq import SequenceField
from django_segment_seq.models import Sequence
from tests.testapp.models import Invoice, Order, Ticket

pytestmark = pytest.mark.django_db(transaction=True)


def test_create_fills_the_number():
    assert [Order.objects.create().order_no for _ in range(3)] == [1, 2, 3]
    assert list(Order.objects.order_by("pk").values_list("order_no", flat=True)) == [1, 2, 3]


def test_save_of_new_instance_fills_the_number():
    order = Order(note="a")
    assert order.order_no is None
    order.save()
    assert order.order_no == 1
    assert Order.objects.get(pk=order.pk).order_no == 1


def test_explicit_value_is_kept_and_takes_no_number():
    assert Order.objects.create(order_no=777).order_no == 777
    assert not Sequence.objects.filter(name="order").exists()
    assert Order.objects.create().order_no == 1


def test_update_never_changes_the_number():
    order = Order.objects.create()
    order.note = "changed"
    order.save()
    Order.objects.filter(pk=order.pk).update(note="again")
    order.refresh_from_db()
    assert order.order_no == 1
    assert Order.objects.create().order_no == 2


def test_primary_key_sequence_field():
    first = Invoice.objects.create(note="a")
    second = Invoice(note="b")
    second.save()
    assert (first.pk, second.pk) == (1, 2)
    assert Invoice.objects.get(pk=2).note == "b"
    second.note = "b2"
    second.save()
    assert Invoice.objects.count() == 2 and Invoice.objects.get(pk=2).note == "b2"


def test_explicit_primary_key_is_kept():
    assert Invoice.objects.create(id=500).pk == 500
    assert Invoice.objects.create().pk == 1


def test_unique_and_indexed_fields_from_two_sequences():
    tickets = [Ticket.objects.create() for _ in range(3)]
    assert [(t.code, t.serial) for t in tickets] == [(1, 1), (2, 2), (3, 3)]
    assert Sequence.objects.filter(name__in=["ticket", "ticket-serial"]).count() == 2


@pytest.mark.parametrize("size", [5, 2500])
def test_bulk_create_fills_every_number(size):
    Sequence.objects.create(name="order", step=1000)
    Sequence.objects.create(name="invoice", step=1000)
    orders = Order.objects.bulk_create([Order(note=str(i)) for i in range(size)])
    invoices = Invoice.objects.bulk_create([Invoice(note=str(i)) for i in range(size)])
    assert sorted(o.order_no for o in orders) == list(range(1, size + 1))
    assert sorted(i.pk for i in invoices) == list(range(1, size + 1))
    assert sorted(Order.objects.values_list("order_no", flat=True)) == list(range(1, size + 1))
    assert sorted(Invoice.objects.values_list("pk", flat=True)) == list(range(1, size + 1))


def test_bulk_create_keeps_explicit_values():
    objs = Order.objects.bulk_create([Order(order_no=100), Order(), Order(order_no=200)])
    assert sorted(o.order_no for o in objs) == [1, 100, 200]


def test_deconstruct_round_trips():
    field = SequenceField("order", unique=True)
    _, path, args, kwargs = field.deconstruct()
    assert path == "django_segment_seq.fields.SequenceField"
    assert kwargs == {"sequence_name": "order", "unique": True}
    rebuilt = SequenceField(*args, **kwargs)
    assert rebuilt.sequence_name == "order" and rebuilt.unique and rebuilt.blank
    assert SequenceField("x", blank=False).deconstruct()[3]["blank"] is False


def test_migrations_are_up_to_date():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


@isolate_apps("tests.testapp")
@pytest.mark.parametrize("bad", ["", "y" * 101, 42])
def test_invalid_sequence_name_is_a_system_check_error(bad):
    class Model(models.Model):
        number = SequenceField(bad)

        class Meta:
            app_label = "testapp"

    errors = [e for e in Model._meta.get_field("number").check() if e.id == "django_segment_seq.E010"]
    assert len(errors) == 1 and isinstance(errors[0], checks.Error)
