"""One warning per outage: the first failure of a kind is logged as a warning of one line (no traceback: an outage
is expected, not a bug), the rest at DEBUG, and the first success after it says the outage ended and how long it
lasted in failures, so a database or cache that stops answering is two lines in the log, not a flood."""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("django_segment_seq.service")


class Outage:
    """Failures of one kind (`what`: "numbers cannot be handed out") since the last success."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.lock = threading.Lock()
        self.failing = False
        self.failures = 0

    def failed(self, about: str, exc: BaseException) -> None:
        """Note a failure: a warning line for the first of an outage, DEBUG for the rest."""
        with self.lock:
            first, self.failing = not self.failing, True
            self.failures += 1
        said = " ".join(str(exc).split())  # one line: a driver's message may span several (PostgreSQL's hint)
        if first:
            logger.warning("ID service: %s (%s): %s: %s", self.what, about, type(exc).__name__, said)
        else:
            logger.debug("ID service: (still) %s (%s): %s", self.what, about, said)

    def ended(self) -> int | None:
        """Note a success: the failures of the outage it ends (and reset), None when there was none."""
        if not self.failing:
            return None
        with self.lock:
            ended, failures, self.failing, self.failures = self.failing, self.failures, False, 0
        return failures if ended else None
