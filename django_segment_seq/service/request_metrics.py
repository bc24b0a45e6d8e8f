"""segment_seq_service_requests_total{client, status}: the ID service's answers, when SEGMENT_SEQ["METRICS"] is on."""

from __future__ import annotations

import threading
from typing import Any

from django_segment_seq.conf import app_settings

_counter: Any = None
_lock = threading.Lock()


def requests_counter() -> Any:
    """The Prometheus counter, made on first use; None when metrics are off or prometheus_client is missing."""
    global _counter
    if _counter is None and app_settings()["METRICS"]:
        with _lock:
            if _counter is None:
                try:
                    from prometheus_client import Counter  # the optional prometheus extra, imported only when on
                except ImportError:
                    return None
                _counter = Counter(
                    "segment_seq_service_requests",
                    "Requests to the ID service, by client (- when unknown) and HTTP status.",
                    ("client", "status"),
                )
    return _counter


def count_request(client: str, status: int) -> None:
    counter = requests_counter()
    if counter is not None:
        counter.labels(client, str(status)).inc()
