"""Who takes a client's next lease of its rate on the fast path (leases.py): on the process's one rate thread, ahead
of its requests once the lease is down to half, or for a request that found it used up while the others wait."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async
from django.core.exceptions import SynchronousOnlyOperation
from django.db import connections
from django.http import HttpResponse

from django_segment_seq.conf import app_settings
from django_segment_seq.service import throttle
from django_segment_seq.service.admission import RateCount, rate_refusal
from django_segment_seq.service.authentication import Caller
from django_segment_seq.service.thread_connections import replace_failed_connections

# Seconds the rate thread keeps its connections open unused: a busy client takes a lease every fraction of a
# second on them; a quiet process holds none.
IDLE_SECONDS = 1.0


class RateThread:
    """The process's one thread for the counts of rates, whose connections stay open between leases (those that
    failed replaced, all closed once idle), so a lease costs one query, no new thread or connection."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.forget()
        os.register_at_fork(after_in_child=self.forget)

    def forget(self) -> None:
        """No thread yet (in a child: the parent's does not exist here)."""
        self.executor: ThreadPoolExecutor | None = None
        self.closer: threading.Timer | None = None
        self.last_used = 0.0

    def run(self, function: Callable[..., Any], *args: Any) -> Awaitable[Any]:
        """`function(*args)` on the rate thread, awaited on the loop."""
        with self.lock:
            if self.executor is None:
                self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="segment-seq-rates")
            executor = self.executor
        return sync_to_async(partial(self.job, function), thread_sensitive=False, executor=executor)(*args)

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
        """Close the rate thread's connections (on it: they are its own) once unused for IDLE_SECONDS."""
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

    def close(self) -> None:
        """Close the rate thread's connections now (before a test database is dropped)."""
        with self.lock:
            executor = self.executor
        if executor is not None:
            executor.submit(connections.close_all).result(timeout=30)


class LeaseTakers:
    """At most one lease of a caller taken at a time per event loop; the requests that find the lease used up
    meanwhile wait for it on the loop, so no request in flight waits for more than one lease."""

    def __init__(self) -> None:
        self.thread = RateThread()
        self.forget()
        os.register_at_fork(after_in_child=self.forget)

    def forget(self) -> None:
        """No lease being taken (in a child: the parent's loop and its tasks are not here)."""
        self.taking: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Future[None]] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    async def counted(self, caller: Caller) -> HttpResponse | None:
        """rate_refusal() for a request the lease in memory could not admit."""
        loop = asyncio.get_running_loop()
        key, deadline = (loop, caller.rate_key), loop.time() + app_settings()["LOCK_TIMEOUT"]
        try:
            while (taken := self.taking.get(key)) is not None:
                await asyncio.wait_for(asyncio.shield(taken), deadline - loop.time())
                try:
                    return rate_refusal(caller, RateCount(in_memory=True))
                except SynchronousOnlyOperation:
                    pass  # the lease taken meanwhile is used up too (or none was left): wait for the next, or take it
            mine = loop.create_future()
            self.taking[key] = mine
            try:
                counting = asyncio.ensure_future(self.thread.run(rate_refusal, caller, RateCount()))
                refusal: HttpResponse | None = await asyncio.wait_for(asyncio.shield(counting), deadline - loop.time())
                return refusal
            finally:
                del self.taking[key]
                mine.set_result(None)
        except TimeoutError:
            # A count that did not come within LOCK_TIMEOUT (a RateWindow row held by another session, a cache that
            # does not answer): the request goes through, as when the cache fails, and is never held longer.
            timeout = TimeoutError(f"no lease within LOCK_TIMEOUT ({app_settings()['LOCK_TIMEOUT']} s)")
            throttle.counting.failed(repr(caller.rate_key), timeout)
            return None

    def ahead(self, caller: Caller) -> None:
        """Start taking the caller's next lease when its lease is down to half and no one is taking one."""
        assert caller.rate is not None
        loop = asyncio.get_running_loop()
        key = (loop, caller.rate_key)
        if key in self.taking or not throttle.lease_runs_low(caller.rate_key, caller.rate):
            return
        self.taking[key] = loop.create_future()
        task = loop.create_task(self.take_ahead(key, caller))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def take_ahead(self, key: tuple[asyncio.AbstractEventLoop, str], caller: Caller) -> None:
        assert caller.rate is not None
        try:
            await self.thread.run(throttle.lease_ahead, caller.rate_key, caller.rate)
        finally:
            self.taking.pop(key).set_result(None)


leases = LeaseTakers()
