"""The one background thread per process that renews every generator's worker lease, ahead of its expiry."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable

logger = logging.getLogger("django_segment_seq.snowflake")

# Shortest pause between two renewal rounds of the background thread.
MIN_RENEW_PAUSE = 0.2


class Renewer:
    """The process's one background thread that renews every generator's lease."""

    def __init__(self, renewals: Callable[[], list[Callable[[], None]]]) -> None:
        self._renewals = renewals  # each generator's renew_in_background, as they stand at each round
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._interval = math.inf
        self.paused = False

    def ensure_running(self, interval: float) -> None:
        with self._lock:
            self._interval = min(self._interval, interval)
            if self._thread is not None or self.paused:
                return
            self._stop = threading.Event()
            self._wake = threading.Event()
            self._thread = threading.Thread(
                target=self._run, args=(self._stop, self._wake), name="snowflake-leases", daemon=True
            )
            self._thread.start()

    def wake(self) -> None:
        """Renew now rather than at the next interval (a caller was refused)."""
        self._wake.set()

    def _run(self, stop: threading.Event, wake: threading.Event) -> None:
        while not stop.is_set():
            wake.wait(self._interval)
            wake.clear()
            if stop.is_set():
                return
            for renew in self._renewals():
                try:
                    renew()
                except Exception:
                    logger.exception("Snowflake lease renewal failed")
            stop.wait(min(MIN_RENEW_PAUSE, self._interval))  # refused callers wake it often; the database is spared

    def stop(self, pause: bool = True) -> None:
        with self._lock:
            self.paused = pause
            thread, self._thread = self._thread, None
            self._stop.set()
            self._wake.set()
            self._interval = math.inf
        if thread is not None and thread is not threading.current_thread():
            thread.join(2)

    def after_fork(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = None
        self._interval = math.inf
        self.paused = False
