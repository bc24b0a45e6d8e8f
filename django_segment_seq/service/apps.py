"""The ID service as an app of its own, so a project that only wants numbers installs no client table, admin or
permission: add "django_segment_seq.service" to INSTALLED_APPS after "django_segment_seq"."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _

# The app's label: the Client model's app, its permissions ("segment_seq_service.use_id_service") and migrations.
LABEL = "segment_seq_service"


class ServiceConfig(AppConfig):
    name = "django_segment_seq.service"
    label = LABEL
    verbose_name = _("ID service")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported once the models are loaded, as Django's own check modules are.
        from django_segment_seq.service import checks  # noqa: F401 - registers the service's system check
