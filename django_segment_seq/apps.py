"""App configuration: registers the settings checks."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SegmentSeqConfig(AppConfig):
    name = "django_segment_seq"
    verbose_name = _("Sequences")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the checks
