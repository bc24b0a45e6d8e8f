"""App configuration: registers the system checks, subscribes the logs and, when on, the Prometheus export, and
records concealed formats at migrate."""

from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _


class SegmentSeqConfig(AppConfig):
    name = "django_segment_seq"
    verbose_name = _("Sequence numbers")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported once the models are loaded, as Django's signal and check modules are: these reach the models.
        from django_segment_seq import checks  # noqa: F401 - registers the system checks
        from django_segment_seq.fields.concealed import record_at_migrate
        from django_segment_seq.observe import subscriptions

        subscriptions.subscribe_all()
        post_migrate.connect(record_at_migrate, sender=self, dispatch_uid="django_segment_seq.concealed_formats")
