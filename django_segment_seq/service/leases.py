"""Counts of a client's rate window taken from the shared count ahead of use, so most requests are counted in memory.

The segment idea, applied to rates: a process raises the window's shared count by a lease of several requests at
once, then admits that many from memory. The shared count still bounds every process together (a lease is counted
before it is used), so a client never gets more than its limit; what a process leased and did not use by the
window's end is lost, so a client may get fewer. A lease is sized to what the process would serve of that client in
LEASE_SECONDS at the pace it used its last lease, at most 1/LEASE_SHARE of the limit: a client seen rarely is counted
one request at a time, as before, and one that turns busy has leases of its pace from its second lease on.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from operator import length_hint

# A lease lasts about this long at the rate the process serves its client (each costs a write of the shared count).
LEASE_SECONDS = 0.5
# A lease is at most this share of the limit, and at most LEASE_MOST requests. Each lease costs a worker of the fast
# path more than its write: every statement the counting thread sends takes the GIL back from the busy event loop.
# With at most 1,024, a worker serving 9,000 requests a second took nine leases a second, and a rated client ran
# 15 % below one without a rate; now about two. What a process may lose at a window's end stays within the share.
LEASE_SHARE = 100
LEASE_MOST = 8192
# A lease used this fast or faster counts as used in this time (its pace is past any limit a lease may reach).
SHORTEST_ELAPSED = 1e-6
# The leases of this many clients at most are kept; past it, all are forgotten (their counts stay spent).
LEASES_KEPT = 10_000


# A rate's window: its length in seconds and its number since the epoch (a lease of another length is another count).
Window = tuple[int, int]


@dataclass
class Lease:
    """What is left of the lease of one client in one window, and how fast it was used. Its tickets count down, one
    a request: each says how many are left after it."""

    window: Window
    tickets: Iterator[int]
    size: int
    taken_at: float
    running_low: bool = False
    # The requests it admits: its size, and what was left of the lease before it in the same window.
    count: int = 0


class Leases:
    """The leases of this process, per client. Taking a ticket needs no lock: next() on a range's iterator is one
    step of C under the GIL, so no two threads (or a thread and the event loop) get the same ticket."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held: dict[str, Lease] = {}
        # The leases of the window after the current one, taken before it began (see coming_due()).
        self.coming: dict[str, Lease] = {}
        # The clients whose lease is down to half, so their next is best taken now, ahead of use.
        self.low: set[str] = set()
        # The window each client was last found past its limit in, with that limit: a shared count only rises
        # within its window, so the client's requests are refused from memory until it ends (see is_full()).
        self.full: dict[str, tuple[Window, int]] = {}

    def take(self, key: str, window: Window) -> bool:
        """Admit one request of `key` in `window` from its lease; False when there is none left to take."""
        lease = self.held.get(key)
        if lease is None or lease.window != window:
            lease = self.coming.get(key)
            if lease is None or lease.window != window:
                return False
            self.held[key] = lease  # its window has begun
        left = next(lease.tickets, None)
        if left is None:
            return False
        if 2 * left <= lease.size and not lease.running_low:  # once a lease: the next is taken ahead once
            lease.running_low = True
            self.low.add(key)
        return True

    def size(self, key: str, limit: int) -> int:
        """How many requests of `key` to reserve next: 1 for a client not seen lately, else what LEASE_SECONDS at the
        pace of its last lease would use. (Doubling from 1 took a client that turned busy thirteen leases to reach
        LEASE_MOST, each awaited by the requests that had used up the one before: a tenth of a second or more of
        stalled requests on a busy worker, at each start of a burst.)"""
        most = max(1, min(LEASE_MOST, limit // LEASE_SHARE))
        lease = self.held.get(key)
        if lease is None:
            return 1
        used = lease.count - length_hint(lease.tickets)
        elapsed = max(time.monotonic() - lease.taken_at, SHORTEST_ELAPSED)
        return max(1, min(most, round(used * LEASE_SECONDS / elapsed)))

    def add(self, key: str, window: Window, reserved: int, used: int) -> None:
        """Keep what is left of `reserved` requests counted in `window`'s shared count, `used` of them used now, with
        what is left of the lease before it in the same window (drained from it here: each ticket is taken once)."""
        with self.lock:
            if len(self.held) >= LEASES_KEPT and key not in self.held:
                self.held.clear()
                self.coming.clear()
                self.low.clear()
            lease = self.held.get(key)
            left = reserved - used
            if lease is not None and lease.window == window:
                left += sum(1 for _ in lease.tickets)
            self.held[key] = Lease(window, iter(range(left - 1, -1, -1)), reserved, time.monotonic(), count=left + used)
            self.low.discard(key)

    def add_coming(self, key: str, window: Window, reserved: int) -> None:
        """Keep `reserved` requests counted in the shared count of `window`, which has not begun yet."""
        with self.lock:
            if len(self.coming) >= LEASES_KEPT and key not in self.coming:
                self.coming.clear()
            self.coming[key] = Lease(
                window, iter(range(reserved - 1, -1, -1)), reserved, time.monotonic(), count=reserved
            )

    def note_full(self, key: str, window: Window, limit: int) -> None:
        """`key`'s shared count of `window` was found at `limit`: nothing more is admitted in that window."""
        if len(self.full) >= LEASES_KEPT and key not in self.full:
            self.full.clear()
        self.full[key] = (window, limit)

    def is_full(self, key: str, window: Window, limit: int) -> bool:
        """Whether `key`'s count of `window` was found at `limit` (a limit changed since is asked of the count)."""
        return self.full.get(key) == (window, limit)

    def has_coming(self, key: str, window: Window) -> bool:
        """Whether `key`'s lease for `window` (not begun yet) is taken."""
        lease = self.coming.get(key)
        return lease is not None and lease.window == window

    def clear(self) -> None:
        """Forget every lease (its tickets stay counted in the shared count, unused)."""
        self.lock = threading.Lock()  # in a fork child, the parent's may be held by a thread that is not there
        self.held = {}
        self.coming = {}
        self.low = set()
        self.full = {}


leases = Leases()
# A child's requests must not use the tickets its parent may still use: they were counted once, for the parent.
os.register_at_fork(after_in_child=leases.clear)
