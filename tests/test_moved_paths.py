"""Module paths from before the package was divided by concern still import, warn, and are the moved module itself."""

import importlib
import re
import sys
from pathlib import Path

import pytest

import django_segment_seq
from django_segment_seq import moved
from django_segment_seq.flow import formats


@pytest.mark.parametrize("old", sorted(moved.OLD_PATHS))
def test_old_path_is_the_new_module_with_a_warning(old: str) -> None:
    name = f"django_segment_seq.{old}"
    sys.modules.pop(name, None)
    vars(django_segment_seq).pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{name} has moved to django_segment_seq.{moved.OLD_PATHS[old]}"):
        module = importlib.import_module(name)
    assert module is importlib.import_module(f"django_segment_seq.{moved.OLD_PATHS[old]}")


def test_patching_an_old_path_patches_the_code(monkeypatch: pytest.MonkeyPatch) -> None:
    sys.modules.pop("django_segment_seq.formatting", None)
    with pytest.warns(DeprecationWarning):
        old = importlib.import_module("django_segment_seq.formatting")
    monkeypatch.setattr(old, "now", lambda: "patched")
    assert formats.now() == "patched"


def test_names_that_never_existed_are_not_found() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("django_segment_seq.no_such_module")


def test_every_public_name_resolves() -> None:
    for name in django_segment_seq.__all__:
        assert getattr(django_segment_seq, name) is not None
    assert set(django_segment_seq.__all__) <= set(dir(django_segment_seq))
    with pytest.raises(AttributeError):
        django_segment_seq.no_such_name  # noqa: B018


def test_the_exported_names_are_the_lazy_ones() -> None:
    # __all__ is written out for type checkers (a computed one exports nothing to mypy --strict): it must name
    # exactly the names that load on first use, each imported for type checkers too.
    assert django_segment_seq.__all__ == sorted(django_segment_seq._HOMES)
    source = Path(django_segment_seq.__file__).read_text()
    checked = source[source.index("if TYPE_CHECKING:") : source.index("_HOMES = {")]
    assert [name for name in django_segment_seq.__all__ if not re.search(rf"\b{name}\b", checked)] == []
