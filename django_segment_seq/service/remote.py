"""A client of the ID service for Python programs that are not Django: standard library only, no Django import
(nor does the service package's __init__ import any, so this module loads without Django).

RemoteSequence keeps a block of numbers in memory and fetches the next block in a background thread when
a share of the current one is used, as the in-process cache does. A request that fails is retried a bounded
number of times, each with a timeout; the service may have handed out the lost answer's block, which is
then a gap, never a repeat.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

__all__ = ["RemoteError", "RemoteSequence", "RemoteUnavailable"]

# Statuses worth asking again: the service is busy, restarting or its database is away.
RETRIED = frozenset({429, 502, 503, 504})


class RemoteError(Exception):
    """The service refused the request for good (401, 403, 400, 404, 409): retrying would not help."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        super().__init__(f"ID service answered {status}: {body.get('detail', body)}")


class RemoteUnavailable(Exception):
    """No block after every attempt: the service or its database stayed away."""


class RemoteSequence:
    """Numbers of one sequence of an ID service: `next()` from a block held in memory, fetched ahead of time.

    `url` is where the service is mounted ("https://ids.example.com/ids/"), `token` a client token,
    `name` the sequence. `count` numbers are taken per request (at most the client's largest count);
    the next block is fetched once `prefetch_at` of the current one is used. Each request waits at
    most `timeout` seconds and is tried `retries` more times after a failure.
    """

    def __init__(
        self,
        url: str,
        token: str,
        name: str,
        *,
        count: int = 100,
        timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.2,
        max_wait: float = 5.0,
        prefetch_at: float = 0.2,
    ) -> None:
        self.endpoint = url.rstrip("/") + "/" + quote(name, safe="") + "/next"
        self.token, self.name, self.count = token, name, count
        self.timeout, self.retries, self.backoff, self.max_wait = timeout, retries, backoff, max_wait
        self.prefetch_at = prefetch_at
        self.lock = threading.Lock()
        self.block: Iterator[int] = iter(())
        self.left = 0
        self.ahead: _Ahead | None = None

    def next(self) -> int:
        """The next number: from memory, or from the block fetched ahead, or fetched now."""
        with self.lock:
            if self.left == 0:
                self.install(self.take_ahead() or self.fetch())
            self.left -= 1
            number = next(self.block)
            if self.ahead is None and self.left <= self.count * (1 - self.prefetch_at) and self.prefetch_at < 1:
                self.ahead = _Ahead.started(self)
            return number

    def __iter__(self) -> Iterator[int]:
        return self

    def __next__(self) -> int:
        return self.next()

    def install(self, numbers: range) -> None:
        self.block, self.left = iter(numbers), len(numbers)

    def take_ahead(self) -> range | None:
        """The block fetched in the background, waited for; None when none was started or it failed."""
        ahead, self.ahead = self.ahead, None
        return ahead.result() if ahead is not None else None

    def fetch(self) -> range:
        """One block from the service, with bounded retries; RemoteError or RemoteUnavailable when there is none.

        Any failure but a refusal is an outage, whatever raised it (a reset, a reply cut short or not HTTP at all),
        so no other exception leaves here, and each wait between attempts is finite and at most `max_wait`.
        """
        problem = ""
        for attempt in range(self.retries + 1):
            try:
                return self.request()
            except RemoteError:
                raise
            except _Busy as exc:
                problem, wait = exc.problem, exc.wait or self.pause(attempt)
            except Exception as exc:  # noqa: BLE001 - http.client's errors, OSError, a reply that is not a block
                problem, wait = f"{type(exc).__name__}: {exc}", self.pause(attempt)
            if attempt < self.retries:
                time.sleep(_bounded(wait, self.max_wait))
        raise RemoteUnavailable(f"{self.endpoint}: no block after {self.retries + 1} attempts; last: {problem}")

    def pause(self, attempt: int) -> float:
        """Exponential back-off with jitter."""
        return float(self.backoff * 2**attempt * (0.5 + random.random()))

    def request(self) -> range:
        """One attempt: the block of a 200; RemoteError for a refusal, _Busy for a status worth asking again."""
        data = json.dumps({"count": self.count}).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        request = urllib.request.Request(self.endpoint, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            body, wait = _error_body(exc), _seconds(exc.headers.get("Retry-After"))
            if exc.code not in RETRIED:
                raise RemoteError(exc.code, body) from None
            raise _Busy(f"HTTP {exc.code}: {body.get('detail', '')}", wait) from None
        return _block(raw)


class _Busy(Exception):
    """A status worth asking again (RETRIED), with the seconds its Retry-After asked for (None: none usable)."""

    def __init__(self, problem: str, wait: float | None) -> None:
        super().__init__(problem)
        self.problem, self.wait = problem, wait


class _Ahead:
    """A block being fetched in a daemon thread; result() waits for it, None when the fetch failed."""

    def __init__(self, owner: RemoteSequence) -> None:
        self.done = threading.Event()
        self.numbers: range | None = None
        self.thread = threading.Thread(target=self.run, args=(owner,), daemon=True, name="RemoteSequence ahead")
        self.thread.start()

    @classmethod
    def started(cls, owner: RemoteSequence) -> _Ahead | None:
        """A fetch ahead, or None when no thread can be started now (the block is then fetched when needed)."""
        try:
            return cls(owner)
        except RuntimeError:
            return None

    def run(self, owner: RemoteSequence) -> None:
        try:
            self.numbers = owner.fetch()
        except Exception:  # noqa: BLE001 - the caller fetches in the foreground and sees the error itself, no traceback
            self.numbers = None
        finally:
            self.done.set()

    def result(self) -> range | None:
        self.done.wait()
        return self.numbers


class MalformedBlock(ValueError):
    """A 200 whose body is not a block of numbers (a proxy's page, a server of another kind): retried as an outage."""


def _block(raw: bytes) -> range:
    """The block a 200 answered, from `first` to `last`, whole numbers in order; MalformedBlock for anything else."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    first, last = (body.get("first"), body.get("last")) if isinstance(body, dict) else (None, None)
    if type(first) is not int or type(last) is not int or last < first:
        raise MalformedBlock(f"a 200 without a block of numbers: {raw[:100].decode('utf-8', 'replace')!r}")
    return range(first, last + 1)


def _json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError:
        return {"detail": raw[:200].decode("utf-8", "replace")}
    return body if isinstance(body, dict) else {"detail": str(body)}


def _error_body(error: urllib.error.HTTPError) -> dict[str, Any]:
    """The JSON body of an answer other than 200; a detail saying so when it was cut short or could not be read."""
    try:
        return _json(error.read())
    except Exception as exc:  # noqa: BLE001 - IncompleteRead, a reset: the status alone says what happened
        return {"detail": f"(body not read: {type(exc).__name__})"}
    finally:
        error.close()


def _seconds(header: str | None) -> float | None:
    """Retry-After's delay in seconds, at least 0 (a negative one is taken as 0, which leaves the wait to the
    back-off); None when it is not a number (an HTTP date, garbage, NaN), so the back-off applies."""
    try:
        seconds = float(header) if header else None
    except ValueError:
        return None
    if seconds is None or math.isnan(seconds):
        return None
    return max(0.0, seconds)


def _bounded(wait: float, most: float) -> float:
    """A wait time.sleep() accepts: finite, from 0 to `most` (an infinite Retry-After waits `most`)."""
    bounded = min(wait, most)
    return bounded if math.isfinite(bounded) and bounded > 0 else 0.0
