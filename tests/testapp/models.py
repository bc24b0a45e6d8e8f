"""Models that use SequenceField the ways users do."""

from django.db import models

from django_segment_seq import NumberRule, SequenceField, SequenceManager, SnowflakeField


class Order(models.Model):
    order_no = SequenceField("order")
    note = models.CharField(max_length=50, blank=True)


class Invoice(models.Model):
    id = SequenceField("invoice", primary_key=True)
    note = models.CharField(max_length=50, blank=True)


class Ticket(models.Model):
    code = SequenceField("ticket", unique=True)
    serial = SequenceField("ticket-serial", db_index=True)


class BulkItem(models.Model):
    """Created with bulk_create through SequenceManager: one allocation per sequence per call."""

    id = SequenceField("bulk-id", primary_key=True)
    serial = SequenceField("bulk-serial")
    note = models.CharField(max_length=50, blank=True)

    objects = SequenceManager()


class OwnManager(models.Manager):
    """A project's own manager class: left as it is, so its bulk_create numbers objects one by one."""


class OwnManagerItem(models.Model):
    number = SequenceField("own-manager-item")

    objects = OwnManager()


def payment_reference(value, instance, now):
    """A callable format: (value, instance, now) -> text."""
    return f"PAY/{now:%y}/{instance.currency}/{value}"


class DailyOrder(models.Model):
    order_no = SequenceField("daily-order", format="OD{date:%Y%m%d}{value:06d}", reset="daily", unique=True)


class KindTicket(models.Model):
    kind = models.CharField(max_length=2, choices=[("IS", "Issue"), ("RQ", "Request")])
    code = SequenceField("kind-ticket", format="{instance.kind}{date:%Y%m%d}{value:04d}", reset="daily", unique=True)


class MonthlyTicket(models.Model):
    code = SequenceField("monthly-ticket", format="M{date:%Y-%m}-{value:02d}", reset="monthly")


class GaplessInvoice(models.Model):
    number = SequenceField(
        "gapless-invoice", format="INV-{date:%Y}-{value:05d}", reset="yearly", gapless=True, unique=True
    )


class CountedInvoice(models.Model):
    number = SequenceField("counted-invoice", gapless=True)


class Payment(models.Model):
    currency = models.CharField(max_length=3, default="EUR")
    ref = SequenceField("payment", format=payment_reference)


class Parcel(models.Model):
    code = SequenceField("parcel", format="P{value:06d}", primary_key=True)
    note = models.CharField(max_length=50, blank=True)


def shift_period(moment):
    """A reset callable: three eight-hour shifts a day, "20261122A" (00-08h) to "20261122C" (16-24h)."""
    return f"{moment:%Y%m%d}{'ABC'[moment.hour // 8]}"


class IssuedInvoice(models.Model):
    """Counted in the month of its own date, not of the day it is saved."""

    issued_on = models.DateField(null=True, blank=True)
    number = SequenceField(
        "issued-invoice", format="INV-{date:%Y%m}-{value:05d}", reset="monthly", reset_on="issued_on", unique=True
    )


class Delivery(models.Model):
    received_at = models.DateTimeField(null=True, blank=True)
    code = SequenceField("delivery", format="D{date:%Y%m%d}-{value:04d}", reset="daily", reset_on="received_at")


class WeeklyOrder(models.Model):
    code = SequenceField("weekly-order", format="W{period}-{value:05d}", reset="weekly", unique=True)


class QuarterlyReport(models.Model):
    code = SequenceField("quarterly-report", format="Q{period}-{value:05d}", reset="quarterly", unique=True)


class FiscalInvoice(models.Model):
    """Gapless within a fiscal year that starts in April, counted by the invoice's own date."""

    issued_on = models.DateField(null=True, blank=True)
    number = SequenceField(
        "fiscal-invoice",
        format="INV-{period}-{value:05d}",
        reset="yearly",
        fiscal_year_start=4,
        reset_on="issued_on",
        gapless=True,
        unique=True,
    )


class ShiftTicket(models.Model):
    code = SequenceField("shift-ticket", format="S{period}-{value:04d}", reset=shift_period, unique=True)


class Event(models.Model):
    """Keyed by a Snowflake id, with a second one that fits a JavaScript number."""

    id = SnowflakeField(primary_key=True)
    public_id = SnowflakeField(layout="js53", unique=True)
    note = models.CharField(max_length=50, blank=True)


class ImportedOrder(models.Model):
    """Rows whose numbers may be empty or imported: what sync and backfill work on."""

    number = SequenceField("imported-order", null=True)
    code = SequenceField("imported-code", format="IM{date:%Y%m%d}-{value:05d}", reset="daily", null=True)
    ref = SequenceField("imported-ref", format=payment_reference, null=True)
    currency = models.CharField(max_length=3, default="EUR")


class Company(models.Model):
    code = models.CharField(max_length=10)


class CompanyInvoice(models.Model):
    """Numbered per company and year: every company's invoices count from min_value each year."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    number = SequenceField(
        "company-invoice",
        scope=["company"],
        format="INV-{instance.company.code}-{date:%Y}-{value:05d}",
        reset="yearly",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["company", "number"], name="company_invoice_number")]


class ScopedTicket(models.Model):
    """An integer counter per company and kind, created in bulk through SequenceManager."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    kind = models.CharField(max_length=10)
    number = SequenceField("scoped-ticket", scope=["company", "kind"])

    objects = SequenceManager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["company", "kind", "number"], name="scoped_ticket_number")]


class CompanyOrder(models.Model):
    """An integer number per company from cached ranges: what the concurrency test saves from many processes."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    number = SequenceField("company-order", scope="company")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["company", "number"], name="company_order_number")]


class CompanyReceipt(models.Model):
    """Gapless per company: each company's committed receipts run min_value, min_value + 1, ..."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    number = SequenceField("company-receipt", scope=["company"], gapless=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["company", "number"], name="company_receipt_number")]


class LabelledItem(models.Model):
    """Scoped by free text, which may be empty or too long for a row name."""

    owner = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - None: the empty scope refused
    number = SequenceField("labelled-item", scope=["owner"])


class CompanyDelivery(models.Model):
    """Deliveries imported with their numbers, or with none yet: numbered per company and per period of their date."""

    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    received_on = models.DateField(null=True, blank=True)
    code = SequenceField(
        "company-delivery",
        scope="company",
        format="D{date:%Y%m%d}-{value:04d}",
        reset="daily",
        reset_on="received_on",
        null=True,
    )
    number = SequenceField("company-delivery-number", scope="company", null=True)
    monthly = SequenceField(
        "monthly-delivery", format="M{date:%Y%m%d}-{value:04d}", reset="monthly", reset_on="received_on", null=True
    )


class Shift(models.Model):
    """Tickets counted per shift, a shift named by the instant it starts."""

    starts_at = models.DateTimeField()
    number = SequenceField("shift-number", scope="starts_at")


class Slot(models.Model):
    """Tickets counted per slot and kind: scopes of a date, a decimal-free boolean and a UUID."""

    day = models.DateField()
    urgent = models.BooleanField(default=False)
    token = models.UUIDField()
    number = SequenceField("slot-number", scope=["day", "urgent", "token"])


class EditableTicket(models.Model):
    """Numbers shown on forms (editable=True): an emptied field must keep them."""

    note = models.CharField(max_length=40, blank=True)
    number = SequenceField("editable-ticket", editable=True)
    code = SequenceField("editable-code", format="T{value:04d}", editable=True)


class CheckedInvoice(models.Model):
    """An invoice reference a person types back: Luhn over its digits catches one wrong digit."""

    number = SequenceField("checked-invoice", format="INV-{date:%Y}-{value:06d}", reset="yearly", check_digits="luhn")


class CreditorReference(models.Model):
    number = SequenceField("creditor-ref", format="RF{value:08d}", check_digits="mod97-10", unique=True)


class ShopOrder(models.Model):
    """Order numbers that do not reveal how many orders the shop takes."""

    number = SequenceField("shop-order", format="SO{value:08d}", conceal=True, check_digits="damm", unique=True)


class ConcealedTicket(models.Model):
    number = SequenceField("concealed-ticket", format="T{date:%y}{value:07d}", reset="yearly", conceal=True)


class KeyedInvoice(models.Model):
    """A number inside a composite primary key: (company, number), each company counting from min_value."""

    pk = models.CompositePrimaryKey("company", "number")
    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    number = SequenceField("keyed-invoice", scope=["company"])


class KeyedCredit(models.Model):
    """A formatted number inside a composite primary key, with a field outside the key that saves can change."""

    pk = models.CompositePrimaryKey("company", "code")
    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    code = SequenceField("keyed-credit", format="CR-{value:06d}", scope=["company"])
    note = models.CharField(max_length=50, blank=True)


class KeyedLine(models.Model):
    """An unscoped number inside a composite primary key: one counter for the table, so sync can move it."""

    pk = models.CompositePrimaryKey("company", "line")
    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    line = SequenceField("keyed-line")


class IsoWeekTicket(models.Model):
    """A weekly series whose {date} shows the ISO week only, which names no single day."""

    code = SequenceField("iso-week-ticket", format="T{date:%G-W%V}-{value:04d}", reset="weekly")


class LegacyOrder(models.Model):
    """Orders numbered before the app came, or by code: plain columns a sequence is seeded from (sync --sequence)."""

    number = models.CharField(max_length=20, blank=True)
    serial = models.IntegerField(null=True)
    placed_on = models.DateField(null=True)


# One rule for the model's field and for numbers made in code before a row exists (next_text).
SITE_ORDER = NumberRule("site-order", format="{date:%Y}-{value:06d}", reset="yearly", scope="site")


class SiteOrder(models.Model):
    site = models.IntegerField()
    number = SequenceField.from_rule(SITE_ORDER, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "number"], name="site_order_number")]


# A rule scoped by a foreign key's attname, shared with a field: code and the field's save name one counter.
COMPANY_BILL = NumberRule("company-bill", format="BILL-{value:05d}", scope="company_id")


class CompanyBill(models.Model):
    company = models.ForeignKey(Company, on_delete=models.CASCADE)
    number = SequenceField.from_rule(COMPANY_BILL)


# A rule scoped by a UUID and a boolean, shared with a field: "1", "True" and True are one flag in both paths.
TENANT_TICKET = NumberRule("tenant-ticket", format="TT-{value:04d}", scope=["tenant", "urgent"])


class TenantTicket(models.Model):
    tenant = models.UUIDField()
    urgent = models.BooleanField(default=False)
    number = SequenceField.from_rule(TENANT_TICKET)


class Entity(models.Model):
    """A ledger's entity, with the month its own fiscal year starts in."""

    fy_start_month = models.PositiveSmallIntegerField(default=1)


class EntityInvoice(models.Model):
    """Invoices per entity and per the entity's own fiscal year, labelled by the plain year: I-2024-0000000001."""

    entity = models.ForeignKey(Entity, on_delete=models.CASCADE)
    issued_on = models.DateField()
    number = SequenceField(
        "entity-invoice",
        format="I-{period:%Y}-{value:010d}",
        reset="yearly",
        fiscal_year_start="entity.fy_start_month",
        reset_on="issued_on",
        scope="entity",
    )


# A rule made only in code, with a reset: its name counts in period rows, so the ID service serves it to no client.
CODE_YEARLY = NumberRule("code-yearly", format="{date:%Y}-{value:04d}", reset="yearly")
