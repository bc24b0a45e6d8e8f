"""Orders numbered by the "order" sequence, and receipts whose primary key comes from the "receipt" sequence."""

from django.db import models

from django_segment_seq import SequenceField


class Order(models.Model):
    """A customer's order; `order_no` is filled from the "order" sequence when the row is inserted."""

    order_no = SequenceField("order")
    customer = models.CharField(max_length=100)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Order {self.order_no}"


class Receipt(models.Model):
    """A receipt for an order; its primary key is taken from the "receipt" sequence."""

    id = SequenceField("receipt", primary_key=True)
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="receipts")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Receipt {self.id}"
