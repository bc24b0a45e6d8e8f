"""FillSequenceField: numbers existing rows via the historical model, reverses as a no-op, serialises to migrations."""

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.state import ProjectState
from django.db.migrations.writer import OperationWriter

from django_segment_seq.operations import FillSequenceField
from tests.testapp.models import ImportedOrder

pytestmark = pytest.mark.django_db(transaction=True)


def run(operation: FillSequenceField, backwards: bool = False) -> None:
    state = ProjectState.from_apps(apps)
    with connection.schema_editor() as editor:
        method = operation.database_backwards if backwards else operation.database_forwards
        method("testapp", editor, state, state)


def test_forwards_numbers_empty_rows_through_the_historical_model(clock):
    ImportedOrder.objects.bulk_create([ImportedOrder(number=0, code="-", ref="-") for _ in range(5)])
    ImportedOrder.objects.update(number=None, code=None)
    run(FillSequenceField("importedorder", "number", batch_size=2))
    run(FillSequenceField("ImportedOrder", "code"))
    rows = list(ImportedOrder.objects.order_by("pk").values_list("number", "code"))
    assert [number for number, _ in rows] == [1, 2, 3, 4, 5]
    assert [code for _, code in rows] == [f"IM20261122-{n:05d}" for n in range(1, 6)]


def test_backwards_changes_nothing():
    ImportedOrder.objects.create(number=None)
    ImportedOrder.objects.update(number=None)
    run(FillSequenceField("importedorder", "number"), backwards=True)
    assert ImportedOrder.objects.get().number is None


def test_state_is_untouched_and_description_names_the_field():
    operation = FillSequenceField("customer", "number")
    state = ProjectState.from_apps(apps)
    before = state.clone()
    operation.state_forwards("testapp", state)
    assert state.models.keys() == before.models.keys()
    assert operation.describe() == "Number the empty number of existing customer rows"
    assert operation.migration_name_fragment == "fill_customer_number"
    assert operation.reversible and not operation.reduces_to_sql


def test_serialises_into_a_migration_file():
    text, imports = OperationWriter(FillSequenceField("customer", "number", batch_size=500), indentation=0).serialize()
    assert "import django_segment_seq.operations" in imports
    assert text.startswith("django_segment_seq.operations.FillSequenceField(")
    assert "model_name='customer'" in text and "field_name='number'" in text and "batch_size=500" in text
    name, args, kwargs = FillSequenceField("customer", "number").deconstruct()
    assert (name, args, kwargs) == ("FillSequenceField", [], {"model_name": "customer", "field_name": "number"})
