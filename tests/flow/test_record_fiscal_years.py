"""A fiscal year that follows the record: each entity's own first month, read through a field path or a function,
and the fiscal year shown as its plain year ({period:%Y}) as well as FY2024."""

from datetime import date

import pytest
from django.db import models
from django.test.utils import isolate_apps

from django_segment_seq import NumberRule, SequenceField, next_text, next_value
from tests.conftest import assert_unique
from tests.testapp.models import Entity, EntityInvoice

pytestmark = pytest.mark.django_db(transaction=True)


def entity_start(record) -> int:
    return record["entity"].fy_start_month


BILLS = NumberRule(
    "entity-bill",
    format="B-{period:%Y}-{value:04d}",
    reset="yearly",
    fiscal_year_start=entity_start,
    scope={"entity": Entity},
)


def test_each_entity_counts_in_its_own_fiscal_year():
    april, july = Entity.objects.create(fy_start_month=4), Entity.objects.create(fy_start_month=7)
    made = [
        EntityInvoice.objects.create(entity=april, issued_on=date(2024, 5, 10)).number,  # FY2024, from April
        EntityInvoice.objects.create(entity=july, issued_on=date(2024, 5, 10)).number,  # FY2023, from July 2023
        EntityInvoice.objects.create(entity=april, issued_on=date(2025, 3, 31)).number,  # still FY2024
        EntityInvoice.objects.create(entity=april, issued_on=date(2025, 4, 1)).number,  # FY2025 starts
        EntityInvoice.objects.create(entity=july, issued_on=date(2024, 7, 1)).number,  # FY2024 starts
    ]
    assert made == [
        "I-2024-0000000001",
        "I-2023-0000000001",
        "I-2024-0000000002",
        "I-2025-0000000001",
        "I-2024-0000000001",
    ]


def test_code_and_the_field_share_an_entitys_fiscal_year():
    april = Entity.objects.create(fy_start_month=4)
    label = "testapp.EntityInvoice.number"
    first = EntityInvoice.objects.create(entity=april, issued_on=date(2024, 5, 10)).number
    by_code = next_text(label, scope={"entity": april}, at=date(2025, 2, 1))
    unsaved = next_text(label, instance=EntityInvoice(entity=april, issued_on=date(2024, 12, 24)))
    assert [first, by_code, unsaved] == ["I-2024-0000000001", "I-2024-0000000002", "I-2024-0000000003"]


def test_a_rule_made_in_code_reads_the_start_from_its_scope():
    april, july = Entity.objects.create(fy_start_month=4), Entity.objects.create(fy_start_month=7)
    texts = [
        next_text(BILLS, scope={"entity": april}, at=date(2025, 3, 1)),
        next_text(BILLS, scope={"entity": july}, at=date(2025, 3, 1)),
        next_text(BILLS, scope={"entity": april}, at=date(2025, 4, 1)),
    ]
    assert texts == ["B-2024-0001", "B-2024-0001", "B-2025-0001"]
    assert next_value(BILLS, scope={"entity": april}, at=date(2025, 4, 2)) == 2
    assert_unique(texts[::2])
    with pytest.raises(ValueError, match="not a month number"):
        next_text(BILLS, scope={"entity": Entity(pk=april.pk, fy_start_month=13)})


def test_a_start_path_the_scope_given_as_an_id_cannot_follow_is_a_clear_error():
    april = Entity.objects.create(fy_start_month=4)
    with pytest.raises(ValueError, match="give the record"):
        next_text("testapp.EntityInvoice.number", scope={"entity": april.pk}, at=date(2025, 2, 1))


def test_the_checks_take_a_path_and_refuse_one_the_model_lacks():
    assert [m.id for m in EntityInvoice._meta.get_field("number").check()] == []
    with isolate_apps("tests.testapp"):

        class Lost(models.Model):
            entity = models.ForeignKey(Entity, on_delete=models.CASCADE)
            number = SequenceField(
                "lost-invoice", format="{period}-{value:04d}", reset="yearly", fiscal_year_start="company.start"
            )
            dated = SequenceField(
                "lost-dated", format="{date:%Y}-{value:04d}", reset="yearly", fiscal_year_start="entity.fy_start_month"
            )

            class Meta:
                app_label = "testapp"

        assert "django_segment_seq.E022" in [m.id for m in Lost._meta.get_field("number").check()]
        # {date:%Y} cannot tell one entity's fiscal years apart: refused as for a fixed fiscal start
        assert "django_segment_seq.E015" in [m.id for m in Lost._meta.get_field("dated").check()]


def test_the_shape_records_where_the_start_comes_from():
    assert EntityInvoice._meta.get_field("number").rule.shape.reset == "yearly from month entity.fy_start_month"
    assert BILLS.shape.reset == "yearly from month tests.flow.test_record_fiscal_years.entity_start"


def test_sync_reads_each_entitys_fiscal_year_from_its_plain_year_and_seeds_that_row():
    """`{period:%Y}` shows "2024" of the key FY2024: seeding must move the row the numbers count in, not a new one."""
    from io import StringIO

    from django.core.management import call_command

    april, july = Entity.objects.create(fy_start_month=4), Entity.objects.create(fy_start_month=7)
    EntityInvoice.objects.create(entity=april, issued_on=date(2024, 5, 1), number="I-2024-0000000005")
    EntityInvoice.objects.create(entity=july, issued_on=date(2024, 5, 1), number="I-2023-0000000003")
    out = StringIO()
    call_command("segment_seq", "sync", "testapp.EntityInvoice.number", stdout=out)
    assert f"entity-invoice@entity={april.pk}/FY2024" in out.getvalue()
    made = [
        EntityInvoice.objects.create(entity=april, issued_on=date(2024, 6, 1)).number,
        EntityInvoice.objects.create(entity=july, issued_on=date(2024, 6, 1)).number,
    ]
    assert made == ["I-2024-0000000006", "I-2023-0000000004"]
    assert_unique([(e, n) for e, n in EntityInvoice.objects.values_list("entity", "number")])
