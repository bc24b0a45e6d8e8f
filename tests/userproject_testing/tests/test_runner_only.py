"""Django test cases without the mixin, as a project writes them with `reset_sequences()` in setUp: the app's
DiscoverRunner alone (or the pytest plugin) keeps the sequence state per test and per class.

The classes run in the order of their names (A to E; reversed with --reverse). Each first use of "order"
commits its row on a private connection, outside the test's transaction; without a cleanup after each test
and each class, the next class that creates that row itself fails with IntegrityError (MariaDB, PostgreSQL).
"""

from django.test import TestCase, TransactionTestCase
from orders.models import Order

from django_segment_seq import next_value
from django_segment_seq.models import Sequence
from django_segment_seq.testing import reset_sequences


class Reset:
    def setUp(self):
        reset_sequences()


class AFirstUseTests(Reset, TestCase):
    def test_first_use(self):
        self.assertEqual(Order.objects.create().order_no, 1)


class BOwnRowTests(Reset, TestCase):
    def test_own_row(self):
        Sequence.objects.create(name="order", step=10)
        self.assertEqual([Order.objects.create().order_no for _ in range(3)], [1, 2, 3])


class CFirstUseInSetUpTestDataTests(Reset, TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.first = next_value("order")  # the row is committed outside the class's transaction

    def test_first_number(self):
        self.assertEqual(self.first, 1)


class DOwnRowAfterAClassTests(Reset, TestCase):
    def test_own_row(self):
        Sequence.objects.create(name="order", step=10, min_value=100)
        self.assertEqual(Order.objects.create().order_no, 100)


class ETransactionTests(Reset, TransactionTestCase):
    def test_a_first_use(self):
        self.assertEqual(Order.objects.create().order_no, 1)

    def test_b_own_row(self):
        Sequence.objects.create(name="order", step=10)
        self.assertEqual(Order.objects.create().order_no, 1)
