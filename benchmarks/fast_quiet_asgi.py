"""The fast path with the service's INFO log line off (its logger at WARNING), for benchmarks/service_paths.py: what
the one line per block costs on the hot path, for operators who weigh the audit line against throughput."""

from __future__ import annotations

import logging

from tests.service_project.fast_asgi import application

logging.getLogger("django_segment_seq.service").setLevel(logging.WARNING)

__all__ = ["application"]
