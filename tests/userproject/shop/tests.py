"""The user project's own tests, run by `manage.py test` on the test database Django makes from the throw-away one."""

from django.test import TransactionTestCase

from django_segment_seq import clear_cache

from .models import Customer, Order


class NumbersTests(TransactionTestCase):
    def setUp(self) -> None:
        clear_cache()  # tables are emptied between tests, so ranges cached by an earlier test must go

    def test_customer_and_order_get_numbers(self) -> None:
        customer = Customer.objects.create(name="a")
        order = Order.objects.create(customer=customer)
        self.assertEqual((customer.number, customer.code[-6:], order.order_no), (1, "000001", 1))
