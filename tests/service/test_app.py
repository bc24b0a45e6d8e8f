"""The ID service as an app of its own: its label, its check, and the URLconf refused without it."""

import pytest
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured

from django_segment_seq.service import checks, routes, views
from django_segment_seq.service.models import Client


def test_the_client_model_is_the_service_apps_with_the_core_apps_table():
    config = apps.get_app_config("segment_seq_service")
    assert config.name == "django_segment_seq.service"
    assert Client._meta.app_config is config and Client._meta.db_table == "django_segment_seq_client"
    assert [model.__name__ for model in apps.get_app_config("django_segment_seq").get_models()].count("Client") == 0


def test_the_service_app_without_the_core_app_is_an_error(monkeypatch):
    assert checks.check_core_app_installed() == []
    monkeypatch.setattr(checks, "CORE_APP", "no_such_core_app")
    [error] = checks.check_core_app_installed()
    assert error.id == "django_segment_seq.E070" and '"django_segment_seq"' in error.hint


def test_the_urlconf_without_the_service_app_is_refused(monkeypatch):
    monkeypatch.setattr(routes, "apps", type("NotInstalled", (), {"is_installed": staticmethod(lambda name: False)}))
    with pytest.raises(ImproperlyConfigured, match=r"django_segment_seq\.service"):
        routes.routes(views.health, views.take_numbers)
