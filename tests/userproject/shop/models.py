"""A shop whose customers existed before they had numbers, and orders numbered from the start."""

from django.db import models

from django_segment_seq import SequenceField


class Customer(models.Model):
    """Numbers added to a table with rows in it: migrations 0002-0004 add, fill, then constrain them."""

    name = models.CharField(max_length=100)
    number = SequenceField("customer", unique=True)
    code = SequenceField("customer-code", format="C{date:%Y}-{value:06d}", reset="yearly", unique=True)

    def __str__(self) -> str:
        return f"{self.code} {self.name}"


class Order(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="orders")
    order_no = SequenceField("order", unique=True)

    def __str__(self) -> str:
        return f"Order {self.order_no}"


class Invoice(models.Model):
    """Numbered from 100000: migration 0006 creates its sequence row and the first invoices in one go."""

    customer = models.ForeignKey(Customer, on_delete=models.CASCADE, related_name="invoices")
    number = SequenceField("invoice", unique=True)

    def __str__(self) -> str:
        return f"Invoice {self.number}"
