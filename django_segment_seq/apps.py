"""App configuration: registers the settings checks and, when SEGMENT_SEQ["METRICS"] is on, the Prometheus export."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SegmentSeqConfig(AppConfig):
    name = "django_segment_seq"
    verbose_name = _("Sequences")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django_segment_seq import checks  # noqa: F401 - registers the checks
        from django_segment_seq.cache.events import apply_metrics_setting

        apply_metrics_setting()
