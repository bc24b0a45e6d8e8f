"""Room in a rate's window, for tests that count a client's requests exactly: the service counts fixed windows from
the epoch, so requests that straddle a window's end are counted in two windows, and a third of a "2/m" passes."""

from __future__ import annotations

import time


def window_of(seconds: int) -> int:
    """The number of the current window of `seconds`, as the service names it."""
    return int(time.time() // seconds)


def room_in_window(seconds: int, room: float) -> int:
    """Once the current window of `seconds` has at least `room` seconds left (sleeping into the next if not), its
    number."""
    left = seconds - time.time() % seconds
    if left < room:
        time.sleep(left + 0.01)
    return window_of(seconds)
