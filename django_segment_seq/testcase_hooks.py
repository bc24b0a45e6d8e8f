"""Django's TransactionTestCase (and so TestCase) hooked by the app's test runner, so every database test and test
class it runs is cleaned up after as SequenceTestCaseMixin does, as Django's own setup_test_environment()
instruments templates.

Imports no model: a parallel worker Django spawns hooks the classes before Django is set up. What the hooks call
is looked up when a test runs, by its dotted path.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.test import TransactionTestCase
from django.utils.module_loading import import_string

APP = "django_segment_seq"
TESTING = "django_segment_seq.testing"
ROUTING = "django_segment_seq.db.routing"

# What hook_test_cases() replaced on TransactionTestCase, to put back: the attribute, or None if it had none.
_hooked: dict[str, Any] = {}


def hook_test_cases() -> None:
    """Every TransactionTestCase and TestCase that uses the sequence database calls begin_test() before each test
    and test class and end_test() after (classes with SequenceTestCaseMixin are left to it), until unhooked."""
    if _hooked:
        return
    for name in ("setUpClass", "tearDownClass", "_setup_and_call"):
        _hooked[name] = TransactionTestCase.__dict__.get(name)
    # The bound classmethods Django defines; their functions are called with each test class.
    set_up_class, tear_down_class = TransactionTestCase.setUpClass, TransactionTestCase.tearDownClass
    setup_and_call = getattr(TransactionTestCase, "_setup_and_call")  # noqa: B009 - not in django-stubs

    def hooked_set_up_class(cls: type[TransactionTestCase]) -> None:
        if _hooks_apply(cls):
            _call("begin_test")
        getattr(set_up_class, "__func__")(cls)  # noqa: B009 - the function under the bound classmethod

    def hooked_tear_down_class(cls: type[TransactionTestCase]) -> None:
        try:
            getattr(tear_down_class, "__func__")(cls)  # noqa: B009 - the function under the bound classmethod
        finally:
            if _hooks_apply(cls):
                _call("end_test")  # the class's transaction is rolled back now

    def hooked_setup_and_call(test: TransactionTestCase, *args: Any, **kwargs: Any) -> None:
        applies = _hooks_apply(type(test))
        if applies:
            _call("begin_test")
        setup_and_call(test, *args, **kwargs)
        if applies:
            _call("end_test")  # after _post_teardown: the test's transaction is rolled back, or its tables flushed

    setattr(TransactionTestCase, "setUpClass", classmethod(hooked_set_up_class))  # noqa: B010 - as above
    setattr(TransactionTestCase, "tearDownClass", classmethod(hooked_tear_down_class))  # noqa: B010
    setattr(TransactionTestCase, "_setup_and_call", hooked_setup_and_call)  # noqa: B010


def unhook_test_cases() -> None:
    """Put TransactionTestCase back as hook_test_cases() found it."""
    for name, original in _hooked.items():
        if original is None:
            delattr(TransactionTestCase, name)
        else:
            setattr(TransactionTestCase, name, original)
    _hooked.clear()


def app_installed() -> bool:
    """Whether Django is set up with the app in INSTALLED_APPS: the pytest plugin loads in every project that has the
    package installed, and it and these hooks do nothing in one that has not added the app (yet)."""
    return apps.ready and apps.is_installed(APP)


def process_setup(*args: Any) -> None:
    """ParallelTestSuite's process_setup: Django calls the bare function in each spawned worker, with no argument."""
    hook_test_cases()


def _call(name: str) -> None:
    import_string(f"{TESTING}.{name}")()


def _hooks_apply(cls: type[TransactionTestCase]) -> bool:
    """The class uses the sequence database and has no SequenceTestCaseMixin doing the same."""
    if not app_installed():
        return False
    if issubclass(cls, import_string(f"{TESTING}.SequenceTestCaseMixin")):
        return False
    databases = getattr(cls, "databases", ())
    return databases == "__all__" or import_string(f"{ROUTING}.sequence_database")() in databases
