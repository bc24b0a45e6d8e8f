"""App configuration: registers the system checks and subscribes the logs and, when on, the Prometheus export."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SegmentSeqConfig(AppConfig):
    name = "django_segment_seq"
    verbose_name = _("Sequences")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported once the models are loaded, as Django's signal and check modules are: these reach the models.
        from django_segment_seq import checks  # noqa: F401 - registers the system checks
        from django_segment_seq.observe import subscriptions

        subscriptions.subscribe_all()
