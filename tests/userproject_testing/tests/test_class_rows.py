"""Rows made in setUpTestData: every test sees them exactly as setUpTestData left them, in any order.

TestCase keeps one transaction open around a whole class, so these rows are uncommitted (or locked)
while the tests run; the cleanup after each test must leave them to that transaction's rollback.
"""

from django.test import TestCase
from orders.models import Order

from django_segment_seq import next_value
from django_segment_seq.models import Sequence
from django_segment_seq.testing import SequenceTestCaseMixin, reset_sequences


class ClassRowTests:
    """setUpTestData creates the row: its minimum is the first number of every test."""

    @classmethod
    def setUpTestData(cls):
        Sequence.objects.create(name="order", min_value=100, step=10)

    def test_a_first_order(self):
        self.assertEqual(Order.objects.create().order_no, 100)

    def test_b_orders_past_a_range(self):
        self.assertEqual([Order.objects.create().order_no for _ in range(12)], list(range(100, 112)))

    def test_c_row_as_created(self):
        row = Sequence.objects.get(name="order")
        self.assertEqual((row.value, row.min_value, row.step), (99, 100, 10))
        self.assertEqual(next_value("order"), 100)


class ClassResetTests:
    """setUpTestData uses the sequence (its row is created and a range committed outside), then resets it."""

    @classmethod
    def setUpTestData(cls):
        cls.used = [next_value("order") for _ in range(3)]
        reset_sequences("order")

    def test_a_first_order(self):
        self.assertEqual(self.used, [1, 2, 3])
        self.assertEqual(Order.objects.create().order_no, Sequence.objects.get(name="order").min_value)

    def test_b_orders_past_a_range(self):
        self.assertEqual([Order.objects.create().order_no for _ in range(3)], [1, 2, 3])

    def test_c_first_number(self):
        self.assertEqual(next_value("order"), 1)


class ClassOrdersTests:
    """setUpTestData creates the row and two orders: every test continues from the row as they left it."""

    @classmethod
    def setUpTestData(cls):
        Sequence.objects.create(name="order", min_value=100, step=10)
        cls.orders = [Order.objects.create().order_no for _ in range(2)]
        cls.left_at = Sequence.objects.get(name="order").value

    def test_a_next_order(self):
        self.assertEqual(self.orders, [100, 101])
        self.assertGreaterEqual(self.left_at, 101)
        self.assertEqual(Order.objects.create().order_no, self.left_at + 1)

    def test_b_next_orders(self):
        first = self.left_at + 1
        self.assertEqual([Order.objects.create().order_no for _ in range(12)], list(range(first, first + 12)))

    def test_c_row_as_left(self):
        self.assertEqual(Sequence.objects.get(name="order").value, self.left_at)
        self.assertEqual(next_value("order"), self.left_at + 1)


class ClassRowTestCase(SequenceTestCaseMixin, ClassRowTests, TestCase):
    pass


class ClassResetTestCase(SequenceTestCaseMixin, ClassResetTests, TestCase):
    pass


class ClassOrdersTestCase(SequenceTestCaseMixin, ClassOrdersTests, TestCase):
    pass
