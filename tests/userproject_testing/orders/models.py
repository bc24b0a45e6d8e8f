"""An order numbered by django-segment-seq, as a user's model would be."""

from django.db import models

from django_segment_seq import SequenceField


class Order(models.Model):
    order_no = SequenceField("order", unique=True)
