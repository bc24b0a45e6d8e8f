"""A project's own database tests, with the package installed but not in INSTALLED_APPS (USERPROJECT_WITHOUT_APP):
the plugin and the runner's hooks must leave them alone."""

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.test import TestCase, TransactionTestCase


def test_the_app_is_not_installed():
    assert not apps.is_installed("django_segment_seq")


@pytest.mark.django_db
def test_a_database_test():
    Group.objects.create(name="staff")
    assert Group.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_transactional_database_test():
    Group.objects.create(name="staff")
    assert Group.objects.count() == 1


class ShopTests(TestCase):
    def test_a_group(self):
        Group.objects.create(name="staff")
        self.assertEqual(Group.objects.count(), 1)


class ShopTransactionTests(TransactionTestCase):
    def test_a_group(self):
        Group.objects.create(name="staff")
        self.assertEqual(Group.objects.count(), 1)
