"""Who takes a client's next lease of its rate on the fast path (leases.py): on the process's counting thread
(kept_thread.py), ahead of its requests once the lease is down to half, or for a request that found it used up while
the others wait."""

from __future__ import annotations

import asyncio
import os

from django.core.exceptions import SynchronousOnlyOperation
from django.http import HttpResponse

from django_segment_seq.conf import app_settings
from django_segment_seq.service import throttle
from django_segment_seq.service.admission import RateCount, rate_refusal
from django_segment_seq.service.authentication import Caller
from django_segment_seq.service.kept_thread import counting_thread
from django_segment_seq.service.tokens import Rate


class LeaseTakers:
    """At most one lease of a caller taken at a time per event loop, of at least as many requests as wait for one
    then; the requests that find the lease used up meanwhile wait for it on the loop, so no request in flight waits
    for more than one lease (before, a client whose lease is one request, under a hundred a window, was counted
    one waiting request at a time, and on a loaded machine the last waiters outlasted LOCK_TIMEOUT and went
    through uncounted)."""

    def __init__(self) -> None:
        self.forget()
        os.register_at_fork(after_in_child=self.forget)

    def forget(self) -> None:
        """No lease being taken (in a child: the parent's loop and its tasks are not here)."""
        self.taking: dict[tuple[asyncio.AbstractEventLoop, str], asyncio.Future[None]] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        # The requests of each caller waiting in counted() now.
        self.waiting: dict[tuple[asyncio.AbstractEventLoop, str], int] = {}

    async def counted(self, caller: Caller) -> HttpResponse | None:
        """rate_refusal() for a request the lease in memory could not admit."""
        loop = asyncio.get_running_loop()
        key, deadline = (loop, caller.rate_key), loop.time() + app_settings()["LOCK_TIMEOUT"]
        self.waiting[key] = self.waiting.get(key, 0) + 1
        try:
            return await self.counted_within(caller, key, deadline)
        finally:
            self.waiting[key] -= 1
            if not self.waiting[key]:
                del self.waiting[key]

    async def counted_within(
        self, caller: Caller, key: tuple[asyncio.AbstractEventLoop, str], deadline: float
    ) -> HttpResponse | None:
        loop = asyncio.get_running_loop()
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
                wanted = RateCount(at_least=self.waiting.get(key, 1))
                counting = asyncio.ensure_future(counting_thread.run(rate_refusal, caller, wanted))
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
        """Start taking the caller's next lease when its lease is down to half, or its lease of the next window when
        the current one is about to end, unless one is being taken."""
        assert caller.rate is not None
        coming = None
        if not throttle.lease_runs_low(caller.rate_key):
            coming = throttle.next_window_due(caller.rate_key, caller.rate)
            if coming is None:
                return
        loop = asyncio.get_running_loop()
        key = (loop, caller.rate_key)
        if key in self.taking:
            return
        self.taking[key] = loop.create_future()
        task = loop.create_task(self.take_ahead(key, caller.rate_key, caller.rate, coming))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def take_ahead(
        self, key: tuple[asyncio.AbstractEventLoop, str], rate_key: str, rate: Rate, coming: int | None
    ) -> None:
        try:
            await counting_thread.run(throttle.lease_ahead, rate_key, rate, coming)
        finally:
            self.taking.pop(key).set_result(None)


leases = LeaseTakers()
