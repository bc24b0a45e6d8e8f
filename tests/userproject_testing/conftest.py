"""`--reverse-order`: the tests run in the opposite order (pytest-django still puts TestCase classes first)."""

import pytest


def pytest_addoption(parser):
    parser.addoption("--reverse-order", action="store_true", help="run the collected tests in reverse order")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    # Before every other implementation: pytest-django's stable sort by kind then keeps the reversal within each kind.
    if config.getoption("reverse_order"):
        items.reverse()
    return (yield)
