"""Background range fetches, each on a short-lived thread of its own: a slow or locked row never holds up others.

At most one fetch per sequence is in flight (the cache sees to that), so the threads are few. None
is started in a fork child for the parent's work, and none is started once the interpreter exits.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable


class Prefetcher:
    """Runs fetch jobs in daemon threads and knows which are still running."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._running: set[threading.Thread] = set()
        self._closed = False

    def submit(self, job: Callable[[], None]) -> bool:
        """Start a job; False when the process is shutting down (the caller then fetches itself later)."""
        with self._lock:
            if self._closed:
                return False
            thread = threading.Thread(target=self._run, args=(job,), name="segment-seq-prefetch", daemon=True)
            self._running.add(thread)
        thread.start()
        return True

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no job is running; True if that happened within `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._running:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def shutdown(self, timeout: float = 2.0) -> None:
        """Refuse new jobs (callers then fetch in the foreground); wait at most `timeout` seconds for running ones."""
        with self._lock:
            self._closed = True
        self.drain(timeout)

    def _run(self, job: Callable[[], None]) -> None:
        try:
            job()
        except BaseException:  # noqa: BLE001 - jobs record their own failures
            pass
        finally:
            with self._lock:
                self._running.discard(threading.current_thread())
                self._changed.notify_all()


prefetcher = Prefetcher()
# In a child, the parent's threads do not exist and their jobs belong to the parent's cache.
os.register_at_fork(after_in_child=prefetcher._reset)
atexit.register(prefetcher.shutdown)
