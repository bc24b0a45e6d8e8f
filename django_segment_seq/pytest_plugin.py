"""pytest plugin (registered through the pytest11 entry point): sequence state per test, no open connection at teardown.

For every test that uses the database (pytest-django's `django_db`, Django's test case classes) the
process's cached ranges are forgotten before it runs, and after it the rows it left committed
outside its transaction are removed and the rest reset. Before pytest-django drops the test
databases, the private allocation connections are closed (PostgreSQL refuses to drop a database
someone is connected to). In a project that has the package installed but not the app in INSTALLED_APPS, it does
nothing.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import pytest


def _uses_database(item: pytest.Item) -> bool:
    return item.get_closest_marker("django_db") is not None or _is_django_test_case(item)


def _is_django_test_case(item: pytest.Item) -> bool:
    """A test of one of Django's test case classes (TestCase and TransactionTestCase and their subclasses)."""
    cls = getattr(item, "cls", None)
    if cls is None:
        return False
    try:
        from django.test import TransactionTestCase  # pytest loads plugins before Django is set up
    except ImportError:  # pragma: no cover - the plugin is installed with the app, so Django is there
        return False
    return issubclass(cls, TransactionTestCase)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, None]:
    if _uses_database(item) and _app_ready():
        from django_segment_seq.testing import begin_test  # pytest loads plugins before Django is set up

        begin_test()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, None]:
    # A Django test case class's setUpClass (with setUpTestData, in the class's transaction) ran in the
    # setup of its first test: the test itself begins now, and only what is committed outside that
    # transaction from here on is its to clean up.
    if _is_django_test_case(item) and _app_ready():
        from django_segment_seq.testing import begin_test  # pytest loads plugins before Django is set up

        begin_test()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, None]:
    yield
    # The test's fixtures are gone: its transaction is rolled back (or its tables flushed). After the
    # session's last test, _segment_seq_session has done this already, before the databases were dropped.
    if _uses_database(item) and _app_ready():
        from django_segment_seq.testing import end_test  # pytest loads plugins before Django is set up

        blocker = _blocker(item)
        if blocker is None:
            end_test()
        else:
            with blocker.unblock():
                end_test()


def _blocker(item: pytest.Item) -> Any:
    try:
        from pytest_django.plugin import blocking_manager_key  # pytest loads plugins before Django is set up

        return item.config.stash[blocking_manager_key]
    except (ImportError, KeyError):  # pragma: no cover - older pytest-django
        try:
            from pytest_django import plugin  # pytest loads plugins before Django is set up
        except ImportError:
            return None
        return getattr(plugin, "_blocking_manager", None)  # a module global before the stash key


def _app_ready() -> bool:
    """Django is set up with the app installed; in a project that has the package but not the app, nothing is done."""
    try:
        from django_segment_seq.testcase_hooks import app_installed  # pytest loads plugins before Django is set up
    except ImportError:  # pragma: no cover - the plugin is installed with the app, so Django is there
        return False
    return app_installed()


@pytest.fixture(autouse=True)
def _segment_seq_test(request: pytest.FixtureRequest) -> None:
    """Makes a database test depend on _segment_seq_session, so that is torn down before the databases."""
    if _uses_database(request.node) and _app_ready():
        request.getfixturevalue("_segment_seq_session")


@pytest.fixture(scope="session")
def _segment_seq_session(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    """Set up after pytest-django's test databases, so torn down before them: closes the private connections."""
    yield
    from django_segment_seq.api import close_connections  # pytest loads plugins before Django is set up
    from django_segment_seq.testing import end_test  # pytest loads plugins before Django is set up

    with django_db_blocker.unblock():
        end_test()
        close_connections()


@pytest.fixture
def segment_seq_reset(request: pytest.FixtureRequest) -> None:
    """Every sequence starts at its minimum in this test (rows reset inside the test's transaction, cache forgotten)."""
    if not _uses_database(request.node):
        request.getfixturevalue("db")
    from django_segment_seq.testing import reset_sequences  # pytest loads plugins before Django is set up

    reset_sequences()
