"""One background worker thread per process that runs range fetches for every sequence, so callers rarely wait.

The thread is a daemon started on first use, restarted if it died, replaced by an empty worker in a
fork child (jobs of the parent are never run there), and stopped at interpreter exit.
"""

from __future__ import annotations

import atexit
import collections
import os
import threading
import time
from collections.abc import Callable


class Prefetcher:
    """A queue of fetch jobs served by a single daemon thread; never one thread per sequence."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._jobs: collections.deque[Callable[[], None]] = collections.deque()
        self._busy = 0  # jobs queued or running
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, job: Callable[[], None]) -> bool:
        """Queue a job; False when the process is shutting down (the caller then fetches itself later)."""
        with self._lock:
            if self._closed:
                return False
            self._jobs.append(job)
            self._busy += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="segment-seq-prefetch", daemon=True)
                self._thread.start()
            self._changed.notify_all()
        return True

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no job is queued or running; True if that happened within `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._busy:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def shutdown(self, timeout: float = 2.0) -> None:
        """Refuse new jobs (callers then fetch in the foreground) and wait at most `timeout` seconds for queued ones."""
        with self._lock:
            self._closed = True
            self._changed.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._jobs and not self._closed:
                    self._changed.wait()
                if not self._jobs:
                    self._busy = 0
                    self._changed.notify_all()
                    return
                job = self._jobs.popleft()
            try:
                job()
            except BaseException:  # noqa: BLE001 - jobs record their own failures; the worker must live on
                pass
            finally:
                with self._lock:
                    self._busy = max(0, self._busy - 1)
                    self._changed.notify_all()


prefetcher = Prefetcher()
# In a child, the parent's thread does not exist and its queued jobs belong to the parent's cache.
os.register_at_fork(after_in_child=prefetcher._reset)
atexit.register(prefetcher.shutdown)
