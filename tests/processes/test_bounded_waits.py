"""No unbounded waits: one stuck sequence must not hold up another, nor a stuck background fetch hold up callers."""

import threading
import time
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.db import connections
from django.test import override_settings

from django_segment_seq import SequenceError, next_value, wait_for_prefetch
from django_segment_seq.cache import range_cache as cache
from django_segment_seq.models import Sequence
from tests.conftest import assert_unique
from tests.support.scenarios import run_scenario

pytestmark = pytest.mark.django_db(transaction=True)

LOCK_TIMEOUT = 1.0


@pytest.mark.skipif(settings.BACKEND == "sqlite", reason="row locks (SQLite locks the whole file)")
def test_a_sequence_stuck_behind_a_row_lock_does_not_delay_another():
    """Another session holds row "a" for 8 s; the process's fetch of "a" waits for it.

    150 numbers of "b" (step 10: several fetches, prefetch and adaptive step on) must not queue
    behind that fetch: they take well under the lock holder's time.
    """
    Sequence.objects.create(name="a", step=10)
    Sequence.objects.create(name="b", step=10)
    result = run_scenario("unrelated-sequence", 150, timeout=60, SEGMENT_SEQ_TEST_PREFETCH="1")
    assert_unique(result["a"])
    assert_unique(result["b"], 150)
    assert result["elapsed"] < 3, f"150 numbers of 'b' took {result['elapsed']:.1f} s while 'a' was locked"


@override_settings(
    SEGMENT_SEQ={"PREFETCH": True, "PREFETCH_AT": 0.2, "ADAPTIVE_STEP": False, "LOCK_TIMEOUT": LOCK_TIMEOUT}
)
def test_a_caller_does_not_wait_forever_for_a_stuck_background_fetch(monkeypatch):
    """The background fetch hangs; the caller that runs out must fetch itself or get a SequenceError.

    Either within LOCK_TIMEOUT plus a margin, never by waiting for the stuck fetch to end.
    """
    Sequence.objects.create(name="s", step=10)
    release = threading.Event()
    real = cache.ranges.source.allocate

    def stuck_in_background(*args, **kwargs):
        if threading.current_thread() is not caller:
            release.wait(30)
        return real(*args, **kwargs)

    got: list[int] = []
    outcome: list[str] = []

    def take() -> None:
        try:
            for _ in range(25):
                got.append(next_value("s"))
            outcome.append("numbers")
        except SequenceError as exc:
            outcome.append(f"error: {exc}")
        finally:
            connections.close_all()  # this thread's own connections, if it opened any

    monkeypatch.setattr(cache.ranges, "source", SimpleNamespace(allocate=stuck_in_background))
    caller = threading.Thread(target=take, daemon=True)
    started = time.monotonic()
    caller.start()
    try:
        caller.join(LOCK_TIMEOUT + 4)
        elapsed = time.monotonic() - started
        finished = not caller.is_alive()
    finally:
        release.set()
        caller.join(30)
        wait_for_prefetch(30)
    assert finished, f"the caller still waited for the stuck background fetch after {elapsed:.1f} s"
    assert outcome
    assert_unique(got + [next_value("s") for _ in range(25)])
