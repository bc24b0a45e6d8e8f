"""Benchmark models: the same row keyed by a SequenceField, by an AutoField, and by explicit ids."""

from django.db import models

from django_segment_seq import SequenceField, SequenceManager, SnowflakeField


class SeqKeyed(models.Model):
    id = SequenceField("bench-create", primary_key=True)
    note = models.CharField(max_length=20)


class AutoKeyed(models.Model):
    id = models.BigAutoField(primary_key=True)
    note = models.CharField(max_length=20)


class SeqBulk(models.Model):
    id = SequenceField("bench-bulk", primary_key=True)
    note = models.CharField(max_length=20)

    objects = SequenceManager()


class SeqBulkDefault(models.Model):
    """SeqBulk with the manager Django adds to a model that declares none."""

    id = SequenceField("bench-bulk-default", primary_key=True)
    note = models.CharField(max_length=20)


class OwnManager(models.Manager):
    """A project's own manager, not built from SequenceQuerySet: bulk_create numbers object by object."""


class SeqBulkOwnManager(models.Model):
    id = SequenceField("bench-bulk-own", primary_key=True)
    note = models.CharField(max_length=20)

    objects = OwnManager()


class AutoBulk(models.Model):
    id = models.BigAutoField(primary_key=True)
    note = models.CharField(max_length=20)


class CounterBulk(models.Model):
    """Keys from a plain in-memory counter: the floor cost of sending a key column."""

    id = models.BigIntegerField(primary_key=True)
    note = models.CharField(max_length=20)


def new_uuid():
    """uuid7 (time-ordered) where the interpreter has it, else uuid4: the UUID key the Snowflake benchmark compares."""
    import uuid

    return getattr(uuid, "uuid7", uuid.uuid4)()


class SnowflakeKeyed(models.Model):
    id = SnowflakeField(primary_key=True)
    note = models.CharField(max_length=20)


class UUIDKeyed(models.Model):
    id = models.UUIDField(primary_key=True, default=new_uuid)
    note = models.CharField(max_length=20)


class GapInteger(models.Model):
    """A million numbers with 1% missing, for the gap report's integer path (benchmarks/gaps.py)."""

    number = SequenceField("bench-gaps", db_index=True)


class GapText(models.Model):
    """The same numbers as yearly formatted texts, for the gap report's streaming path."""

    code = SequenceField("bench-gaps-text", format="INV{date:%Y}-{value:07d}", reset="yearly", db_index=True)
