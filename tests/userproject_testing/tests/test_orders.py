"""The shop's own tests, as a user writes them: each starts from a fresh "order" sequence and expects order 1."""

import pytest
from django.test import TestCase, TransactionTestCase
from orders.models import Order

from django_segment_seq import sequence_stats
from django_segment_seq.models import Sequence
from django_segment_seq.testing import SequenceTestCaseMixin


@pytest.mark.django_db
def test_first_use_creates_the_row():
    # No row yet: the first allocation creates it on a private connection, outside this test's
    # transaction (on SQLite too: Django's in-memory test database is shared with that connection).
    assert Order.objects.create().order_no == 1
    assert sequence_stats()[("default", "order")].fetched_in_caller_transaction == 0


@pytest.mark.django_db
def test_own_row_with_a_small_step():
    Sequence.objects.create(name="order", step=10)
    assert [Order.objects.create().order_no for _ in range(12)] == list(range(1, 13))


@pytest.mark.django_db
def test_own_row_again():
    Sequence.objects.create(name="order", step=10)
    assert Order.objects.create().order_no == 1


@pytest.mark.django_db(transaction=True)
def test_transactional_own_row():
    Sequence.objects.create(name="order", step=10)
    assert [Order.objects.create().order_no for _ in range(3)] == [1, 2, 3]


@pytest.mark.django_db(transaction=True)
def test_transactional_first_use():
    assert Order.objects.create().order_no == 1


@pytest.mark.django_db
def test_reset_fixture(segment_seq_reset):
    assert Order.objects.create().order_no == 1


class OrderTestCase(SequenceTestCaseMixin, TestCase):
    def test_a_first_use(self):
        self.assertEqual(Order.objects.create().order_no, 1)

    def test_b_own_row(self):
        Sequence.objects.create(name="order", step=10)
        self.assertEqual([Order.objects.create().order_no for _ in range(3)], [1, 2, 3])

    def test_c_first_use_again(self):
        self.assertEqual(Order.objects.create().order_no, 1)

    def test_d_own_row_again(self):
        Sequence.objects.create(name="order", step=10)
        self.assertEqual(Order.objects.create().order_no, 1)


class OrderTransactionTestCase(SequenceTestCaseMixin, TransactionTestCase):
    def test_a_own_row(self):
        Sequence.objects.create(name="order", step=10)
        self.assertEqual([Order.objects.create().order_no for _ in range(3)], [1, 2, 3])

    def test_b_first_use(self):
        self.assertEqual(Order.objects.create().order_no, 1)

    def test_c_own_row_again(self):
        Sequence.objects.create(name="order", step=10)
        self.assertEqual(Order.objects.create().order_no, 1)
