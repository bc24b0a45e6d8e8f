"""The fast path's background threads, two per process: for the reads and writes the event loop may not make (the
leases of rates and the tokens read again; the usage counts), on connections kept open between them, so each costs
a query, not a new thread and a new connection. Two, so a client row another session holds delays the usage counts
alone, and a held rate window the leases and tokens alone."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections

from django_segment_seq.service.thread_connections import replace_failed_connections

# Seconds the thread keeps its connections open unused: a busy process uses them every fraction of a second; a quiet
# one holds none.
IDLE_SECONDS = 1.0


class KeptThread:
    """One thread whose connections stay open between jobs (those that failed replaced, all closed once idle)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.forget()
        os.register_at_fork(after_in_child=self.forget)

    def forget(self) -> None:
        """No thread yet (in a child: the parent's does not exist here)."""
        self.executor: ThreadPoolExecutor | None = None
        self.closer: threading.Timer | None = None
        self.last_used = 0.0

    def run(self, function: Callable[..., Any], *args: Any) -> Awaitable[Any]:
        """`function(*args)` on the thread, awaited on the loop."""
        return sync_to_async(partial(self.job, function), thread_sensitive=False, executor=self.started())(*args)

    def submit(self, function: Callable[[], None]) -> Future[None] | None:
        """`function()` on the thread, awaited by no one; None when the thread is shut down (the interpreter's exit)."""
        try:
            return self.started().submit(self.job, function)
        except RuntimeError:
            return None

    def started(self) -> ThreadPoolExecutor:
        with self.lock:
            if self.executor is None:
                self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self.name)
            return self.executor

    def job(self, function: Callable[..., Any], *args: Any) -> Any:
        replace_failed_connections()
        try:
            return function(*args)
        finally:
            self.last_used = time.monotonic()
            self.close_later()

    def close_later(self) -> None:
        with self.lock:
            if self.closer is None:
                self.closer = threading.Timer(IDLE_SECONDS, self.close_if_idle)
                self.closer.daemon = True
                self.closer.start()

    def close_if_idle(self) -> None:
        """Close the thread's connections (on it: they are its own) once unused for IDLE_SECONDS."""
        with self.lock:
            self.closer = None
            executor = self.executor
        if executor is None:
            return
        if time.monotonic() - self.last_used < IDLE_SECONDS:
            self.close_later()
            return
        with contextlib.suppress(RuntimeError):  # shut down at the interpreter's exit
            executor.submit(connections.close_all)

    def wait(self, timeout: float = 30) -> None:
        """Return once every job submitted before has run (for a reader of what they wrote: a test)."""
        with self.lock:
            executor = self.executor
        if executor is not None:
            executor.submit(lambda: None).result(timeout=timeout)

    def close(self) -> None:
        """Close the thread's connections now (before a test database is dropped)."""
        with self.lock:
            executor = self.executor
        if executor is not None:
            executor.submit(connections.close_all).result(timeout=30)


counting_thread = KeptThread("segment-seq-counting")
usage_thread = KeptThread("segment-seq-usage")
