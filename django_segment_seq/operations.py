"""A migration operation that numbers the rows a SequenceField added to an existing table left empty."""

from __future__ import annotations

from typing import Any

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState

from django_segment_seq.backfill import DEFAULT_BATCH_SIZE, fill_empty


class FillSequenceField(Operation):
    """Numbers existing rows whose field is NULL (or ''), in batches, in primary-key order; reversed, it does nothing.

    Put it between the migration that adds the field with null=True and the one that makes it
    unique and not null: AddField cannot give each existing row a number of its own.
    """

    reduces_to_sql = False
    reversible = True

    def __init__(self, model_name: str, field_name: str, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        self.model_name = model_name
        self.field_name = field_name
        self.batch_size = batch_size

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        kwargs: dict[str, Any] = {"model_name": self.model_name, "field_name": self.field_name}
        if self.batch_size != DEFAULT_BATCH_SIZE:
            kwargs["batch_size"] = self.batch_size
        return self.__class__.__qualname__, [], kwargs

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        pass  # data only: the schema is what the neighbouring migrations make it

    def database_forwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)  # the historical model, as RunPython gets it
        alias = schema_editor.connection.alias
        if self.allow_migrate_model(alias, model):
            fill_empty(model, self.field_name, batch_size=self.batch_size, using=alias)

    def database_backwards(
        self, app_label: str, schema_editor: BaseDatabaseSchemaEditor, from_state: ProjectState, to_state: ProjectState
    ) -> None:
        pass  # the numbers stay; the migration before this one drops the column if it is reversed too

    def describe(self) -> str:
        return f"Number the empty {self.field_name} of existing {self.model_name} rows"

    @property
    def migration_name_fragment(self) -> str:
        return f"fill_{self.model_name.lower()}_{self.field_name.lower()}"
