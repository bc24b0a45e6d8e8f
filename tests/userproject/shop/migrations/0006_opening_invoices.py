"""A data migration as projects write them: the sequence row and the first invoices, through historical models.

The historical Sequence model has none of the model's own save() logic, and on PostgreSQL the whole
migration is one transaction, so the invoices are numbered from a row this transaction created.
"""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def open_invoicing(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    Sequence = apps.get_model("django_segment_seq", "Sequence")
    Customer = apps.get_model("shop", "Customer")
    Invoice = apps.get_model("shop", "Invoice")
    Sequence.objects.create(name="invoice", min_value=100000)
    for customer in Customer.objects.order_by("pk")[:3]:
        Invoice.objects.create(customer=customer)


class Migration(migrations.Migration):
    dependencies = [
        ("shop", "0005_invoice"),
        ("django_segment_seq", "__latest__"),
    ]

    operations = [migrations.RunPython(open_invoicing, migrations.RunPython.noop)]
