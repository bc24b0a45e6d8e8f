"""Django test cases without the mixin: under pytest the plugin alone keeps the sequence state per test."""

from django.test import TestCase
from orders.models import Order

from django_segment_seq.models import Sequence


class PlainTestCase(TestCase):
    def test_a_first_use(self):
        self.assertEqual(Order.objects.create().order_no, 1)

    def test_b_own_row(self):
        Sequence.objects.create(name="order", step=10)
        self.assertEqual(Order.objects.create().order_no, 1)
