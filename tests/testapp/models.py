"""Models that use SequenceField the ways users do."""

from django.db import models

from django_segment_seq import SequenceField, SequenceManager


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
