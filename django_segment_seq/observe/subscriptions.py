"""What listens to the cache's range fetches: the log records always, the Prometheus export while METRICS is on.

AppConfig.ready() subscribes them; `override_settings` of SEGMENT_SEQ turns the export on and off.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from django_segment_seq.cache import events
from django_segment_seq.conf import SETTING_NAME
from django_segment_seq.observe.logs import log_fetch

logger = logging.getLogger("django_segment_seq")

METRICS_MODULE = "django_segment_seq.observe.metrics"


def subscribe_all() -> None:
    """Subscribe the log records and, as the setting says, the Prometheus export."""
    events.subscribe(log_fetch)
    apply_metrics_setting()


def apply_metrics_setting() -> None:
    """Subscribe the Prometheus export while METRICS is on and prometheus_client is installed; unsubscribe it when off.

    Without prometheus_client nothing is exported and a warning says so; `manage.py check` reports it
    as django_segment_seq.E006. Read from the raw setting: one that is not even a dict is for check E001
    to report, not for startup to crash on.
    """
    configured = getattr(settings, SETTING_NAME, None)
    if isinstance(configured, dict) and configured.get("METRICS") is True:
        try:
            # Imported only when on: prometheus_client is an optional dependency (the `prometheus` extra).
            metrics = importlib.import_module(METRICS_MODULE)
        except ImportError as exc:
            logger.warning(
                "%s['METRICS'] is on but prometheus_client cannot be imported (%s): no metrics are exported. "
                "Install django-segment-seq[prometheus].",
                SETTING_NAME,
                exc,
            )
            return
        metrics.register()
    elif METRICS_MODULE in sys.modules:
        sys.modules[METRICS_MODULE].unregister()


@receiver(setting_changed)
def _follow_metrics_setting(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:
        apply_metrics_setting()
