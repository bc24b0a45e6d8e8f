"""The Client model's move from the core app to the service app: from today's schema (the core app at 0011, a
client row, a group granted use_id_service) forward and back, every row, id and grant kept and usable."""

import importlib

import pytest
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.core import checks as django_checks
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from django_segment_seq.checks import client_table as checks
from django_segment_seq.db.client_table import CLIENT_TABLE, client_rows
from django_segment_seq.service.authentication import client_caller
from django_segment_seq.service.models import Client
from django_segment_seq.service.tokens import digest, new_token, shown_part

pytestmark = pytest.mark.django_db(transaction=True)

CORE_0011 = ("django_segment_seq", "0011_client_rows")
CORE_0012 = ("django_segment_seq", "0012_client_to_service_app")
SERVICE_0001 = ("segment_seq_service", "0001_initial")
MOVE = importlib.import_module("django_segment_seq.migrations.0012_client_to_service_app")


def migrate(*targets):
    """The database migrated to the targets (each app's leaf when none), and the migration state's apps there."""
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    targets = list(targets) or leaves
    executor.migrate(targets)
    ContentType.objects.clear_cache()  # ids cached under the label they had before
    auth = [node for node in leaves if node[0] in ("auth", "contenttypes")]
    return MigrationExecutor(connection).loader.project_state([*targets, *auth]).apps


@pytest.fixture
def back_to_latest():
    yield
    migrate()


def todays_project():
    """The core app at 0011 as a project has it today: a client, its content type and a group granted the permission."""
    state = migrate(CORE_0011)
    content_type, _ = state.get_model("contenttypes", "ContentType").objects.get_or_create(
        app_label="django_segment_seq", model="client"
    )
    permission, _ = state.get_model("auth", "Permission").objects.get_or_create(
        content_type=content_type,
        codename="use_id_service",
        defaults={"name": "Can take numbers from the ID service with a login session"},
    )
    group = state.get_model("auth", "Group").objects.create(name="id-service users")
    group.permissions.add(permission)
    token = new_token()
    row = state.get_model("django_segment_seq", "Client").objects.create(
        name="orders-api",
        token_start=shown_part(token),
        token_digest=digest(token),
        sequences="order*",
        max_count=50,
        max_new_rows=2,
        requests=7,
    )
    return token, row.pk, content_type.pk


def test_forward_keeps_the_row_its_id_and_the_groups_permission(back_to_latest):
    token, pk, content_type_pk = todays_project()

    migrate()
    client = Client.objects.get(pk=pk)
    assert (client.name, client.token_digest, client.max_new_rows, client.requests) == (
        "orders-api",
        digest(token),
        2,
        7,
    )
    assert ContentType.objects.get_for_model(Client).pk == content_type_pk
    assert ContentType.objects.get(pk=content_type_pk).app_label == "segment_seq_service"
    user = User.objects.create_user("caller")
    user.groups.add(Group.objects.get(name="id-service users"))
    assert user.has_perm("segment_seq_service.use_id_service")
    # Usable through the new model: the token authenticates, and a new client takes the next id.
    assert client_caller(token).client_id == pk
    assert Client.objects.create(name="billing", token_digest=digest(new_token()), sequences="*").pk > pk


def test_a_content_type_made_for_the_service_app_before_the_move_gives_way(back_to_latest):
    # A migrate run after the upgrade, before the service app's 0001 ran: contenttypes made the new label's row.
    _token, _pk, content_type_pk = todays_project()
    state = migrate(CORE_0011)
    early = state.get_model("contenttypes", "ContentType").objects.create(
        app_label="segment_seq_service", model="client"
    )
    state.get_model("auth", "Permission").objects.create(content_type=early, codename="use_id_service", name="x")

    migrate()
    assert ContentType.objects.get_for_model(Client).pk == content_type_pk
    user = User.objects.create_user("caller")
    user.groups.add(Group.objects.get(name="id-service users"))
    assert user.has_perm("segment_seq_service.use_id_service")


def test_backward_gives_the_model_and_permission_back_to_the_core_app(back_to_latest):
    token, pk, content_type_pk = todays_project()
    migrate()

    state = migrate(CORE_0011)
    row = state.get_model("django_segment_seq", "Client").objects.get(pk=pk)
    assert (row.name, row.token_digest) == ("orders-api", digest(token))
    content_type = state.get_model("contenttypes", "ContentType").objects.get(pk=content_type_pk)
    assert content_type.app_label == "django_segment_seq"
    group = state.get_model("auth", "Group").objects.get(name="id-service users")
    assert list(group.permissions.values_list("content_type__app_label", "codename")) == [
        ("django_segment_seq", "use_id_service")
    ]

    migrate()  # and forward again: nothing lost on the way
    assert Client.objects.get(pk=pk).token_digest == digest(token)


def test_without_the_service_app_an_empty_table_is_dropped_and_made_again(back_to_latest, monkeypatch):
    state = migrate(CORE_0011)
    state.get_model("django_segment_seq", "Client").objects.all().delete()
    monkeypatch.setattr(MOVE, "SERVICE_APP", "no_such_service_app")

    migrate(CORE_0012)
    assert client_rows(connection) is None
    migrate(CORE_0011)  # back to a state that has the table: made again, empty
    assert client_rows(connection) == 0
    migrate(CORE_0012)
    migrate(SERVICE_0001)  # installed later: the service app makes the table it finds missing
    assert client_rows(connection) == 0
    assert Client.objects.create(name="late", token_digest=digest(new_token()), sequences="*").pk


def test_without_the_service_app_a_table_with_clients_is_kept_and_warned_of(back_to_latest, monkeypatch):
    _token, pk, _content_type = todays_project()
    monkeypatch.setattr(MOVE, "SERVICE_APP", "no_such_service_app")
    monkeypatch.setattr(checks, "SERVICE_APP", "no_such_service_app")

    migrate(CORE_0012)
    assert client_rows(connection) == 1
    warnings = checks.check_client_table_left(databases=["default"])
    assert [(type(w), w.id) for w in warnings] == [(django_checks.Warning, "django_segment_seq.W006")]
    assert CLIENT_TABLE in warnings[0].msg and "django_segment_seq.service" not in warnings[0].msg
    assert "no_such_service_app" in warnings[0].hint
    assert checks.check_client_table_left(databases=None) == []  # a database check: only with --database

    migrate()  # the app installed after all: it adopts the table and its row
    assert Client.objects.get(pk=pk).name == "orders-api"


def test_the_warning_is_quiet_with_the_service_app_installed():
    Client.objects.create(name="present", token_digest=digest(new_token()), sequences="*")
    assert checks.check_client_table_left(databases=["default"]) == []
