"""Numbers the customers that existed before 0002 added the columns; 0004 then makes them unique and not null."""

from django.db import migrations

from django_segment_seq.operations import FillSequenceField


class Migration(migrations.Migration):
    # Each batch commits on its own: an interrupted run resumes where it stopped, and on SQLite the
    # allocator's own connection never waits for a write lock this migration would hold to its end.
    atomic = False

    dependencies = [
        ("shop", "0002_customer_numbers"),
        # The Sequence table must exist before numbers can be taken.
        ("django_segment_seq", "__latest__"),
    ]

    operations = [
        FillSequenceField("customer", "number"),
        FillSequenceField("customer", "code", batch_size=500),
    ]
