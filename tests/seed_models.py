"""Models and rules of numbers made in code (next_text) into plain columns, as a ledger adopting the app has them:
seeded by `segment_seq sync --rule`, audited by `gaps --rule`, filled by `backfill --rule`.

Imported by the tests that use them, before the test database is made, so their tables are made with testapp's.
"""

import uuid

from django.db import models

from django_segment_seq import NumberRule

# Gapless invoice numbers per entity and fiscal year, the year passed by hand as a scope value: "I-2024-0000000001".
LEDGER_INVOICE = NumberRule(
    "djl-invoice", format="I-{instance.fiscal_year}-{value:010d}", scope=["e", "fy"], gapless=True
)
# The pattern that reads the ledger's texts: the fiscal year from the text, the entity from a column.
LEDGER_PATTERN = r"I-(?P<fy>[0-9]{4})-(?P<value>[0-9]+)"
# Documents counted per calendar year: "2026-000001".
YEARLY_DOC = NumberRule("yearly-doc", format="{date:%Y}-{value:06d}", reset="yearly")
# One counter for every year, the year only shown: "2025-000900", "2026-000901".
CODE_ORDER = NumberRule("code-order-by-year", format="{date:%Y}-{value:06d}")
# A formatted rule per entity, the entity shown in the text: "E7-00012".
ENTITY_ORDER = NumberRule("entity-order", format="E{instance.entity}-{value:05d}", scope="entity")


class LedgerEntity(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    name = models.CharField(max_length=40, default="")

    class Meta:
        app_label = "testapp"


class LedgerInvoice(models.Model):
    entity_model = models.ForeignKey(LedgerEntity, on_delete=models.CASCADE)
    fiscal_year = models.IntegerField()
    number = models.CharField(max_length=30, blank=True, default="")

    class Meta:
        app_label = "testapp"


class YearlyDoc(models.Model):
    number = models.CharField(max_length=20, blank=True, default="")
    entity = models.IntegerField(default=0)
    serial = models.IntegerField(null=True)

    class Meta:
        app_label = "testapp"
