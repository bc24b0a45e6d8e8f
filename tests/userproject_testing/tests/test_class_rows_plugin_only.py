"""The rows of setUpTestData in Django test cases without the mixin: under pytest the plugin alone does the cleanup."""

from django.test import TestCase

from .test_class_rows import ClassOrdersTests, ClassResetTests, ClassRowTests


class PlainClassRowTestCase(ClassRowTests, TestCase):
    pass


class PlainClassResetTestCase(ClassResetTests, TestCase):
    pass


class PlainClassOrdersTestCase(ClassOrdersTests, TestCase):
    pass
