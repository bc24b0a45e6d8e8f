"""The package's house rules that the import contracts in pyproject.toml cannot state, read from its source:
no private name crosses a module, every import inside a function says why it is there, and every package
says its job."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "django_segment_seq"
ROOT_NAME = PACKAGE.name

# Django's model API, public by its documentation despite the underscore.
DJANGO_MODEL_API = frozenset({"_meta", "_base_manager", "_default_manager"})


@dataclass(frozen=True)
class Module:
    dotted: str
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def where(self) -> str:
        return str(self.path.relative_to(PACKAGE.parent))


@cache
def modules() -> tuple[Module, ...]:
    """Every module of the package but its migrations (Django writes those)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.relative_to(PACKAGE).parts:
            continue
        dotted = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        found.append(Module(dotted, path, ast.parse(path.read_text(), str(path))))
    return tuple(found)


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in DJANGO_MODEL_API


def absolute(module: Module, node: ast.ImportFrom) -> str:
    """The dotted name an ImportFrom reads from, relative imports resolved against the importing module."""
    if not node.level:
        return node.module or ""
    parts = module.dotted.split(".")
    base = parts if module.is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def in_package(dotted: str) -> bool:
    return dotted == ROOT_NAME or dotted.startswith(ROOT_NAME + ".")


def package_names(module: Module) -> tuple[dict[str, str], list[tuple[int, str]]]:
    """The local names bound to the package's modules or to names they define, and the private names imported."""
    bound: dict[str, str] = {}
    imported_private = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            source = absolute(module, node)
            if not in_package(source):
                continue
            for alias in node.names:
                if is_private(alias.name):
                    imported_private.append((node.lineno, f"imports {source}.{alias.name}"))
                bound[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not in_package(alias.name):
                    continue
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:  # `import a.b.c` binds `a`; the attribute chain names the rest
                    bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
                if any(is_private(part) for part in alias.name.split(".")):
                    imported_private.append((node.lineno, f"imports {alias.name}"))
    return bound, imported_private


def attribute_chain(node: ast.Attribute) -> tuple[str, list[str]] | None:
    """`a.b.c` as ("a", ["b", "c"]), or None when the chain does not start at a plain name."""
    attrs = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        attrs.append(current.attr)
        current = current.value
    if not isinstance(current, ast.Name):
        return None
    return current.id, attrs[::-1]


def crossings_of(module: Module) -> list[tuple[int, str]]:
    """Where one module imports or uses a private name of another module of the package."""
    bound, crossings = package_names(module)
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Attribute) or not is_private(node.attr):
            continue
        chain = attribute_chain(node)
        if chain is None or chain[0] not in bound:
            continue
        root, attrs = chain
        if any(is_private(attr) for attr in attrs[:-1]):
            continue  # the chain's first private name is reported on its own node
        crossings.append((node.lineno, f"uses {'.'.join([bound[root], *attrs])}"))
    return sorted(set(crossings))


def private_crossings() -> list[str]:
    return [f"{module.where}:{line}: {text}" for module in modules() for line, text in crossings_of(module)]


def test_no_private_name_is_used_outside_its_module() -> None:
    """A name with a leading underscore belongs to its module: make it public if another module needs it."""
    crossings = private_crossings()
    if crossings:
        pytest.fail(
            f"{len(crossings)} private name(s) used outside the module that defines them:\n  " + "\n  ".join(crossings),
            pytrace=False,
        )


def unexplained_function_imports() -> list[str]:
    unexplained = set()
    for module in modules():
        lines = module.path.read_text().splitlines()
        for function in ast.walk(module.tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                here, first = lines[node.lineno - 1], node.lineno - 1
                while first > 0 and lines[first - 1].strip().startswith(("from ", "import ")):
                    first -= 1  # a group of imports shares the comment above it
                if "#" not in here and not (first > 0 and lines[first - 1].strip().startswith("#")):
                    unexplained.add((module.where, node.lineno, here.strip()))
    return [f"{where}:{line}: {text}" for where, line, text in sorted(unexplained)]


def test_every_import_inside_a_function_says_why() -> None:
    """The package's face loads lazily, so modules import at their top; an import in a function needs a reason
    (an optional dependency, a real cycle) in a comment on its line or the line above."""
    unexplained = unexplained_function_imports()
    if unexplained:
        pytest.fail(
            f"{len(unexplained)} import(s) inside a function with no comment saying why:\n  "
            + "\n  ".join(unexplained),
            pytrace=False,
        )


def test_every_package_says_its_job() -> None:
    silent = [module.where for module in modules() if module.is_package and not ast.get_docstring(module.tree)]
    if silent:
        pytest.fail("package(s) with no docstring saying their job:\n  " + "\n  ".join(silent), pytrace=False)


# The checks themselves, on small sources, so a rule that silently stopped finding anything shows up here.


def crossings_in(source: str, dotted: str = "django_segment_seq.flow.example") -> list[str]:
    path = PACKAGE.joinpath(*dotted.split(".")[1:]).with_suffix(".py")
    return [text for _line, text in crossings_of(Module(dotted, path, ast.parse(source)))]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from django_segment_seq.fields.base import _Mixin", ["imports django_segment_seq.fields.base._Mixin"]),
        ("from . import _SPEC", ["imports django_segment_seq.flow._SPEC"]),
        ("from .formats import _SPEC as spec", ["imports django_segment_seq.flow.formats._SPEC"]),
        (
            "from django_segment_seq.cache import events\nevents._listeners.clear()",
            ["uses django_segment_seq.cache.events._listeners"],
        ),
        (
            "import django_segment_seq.cache.events\ndjango_segment_seq.cache.events._listeners.clear()",
            ["uses django_segment_seq.cache.events._listeners"],
        ),
        (
            "import django_segment_seq.cache.events as events\nevents._listeners._inner",
            ["uses django_segment_seq.cache.events._listeners"],
        ),
        ("from django_segment_seq.db.table import Sequence\nSequence._meta.db_table", []),
        ("import os\nos._exit(0)", []),
        ("from django_segment_seq.cache import events\nevents.__name__", []),
    ],
)
def test_the_private_name_rule_finds_what_it_should(source: str, expected: list[str]) -> None:
    assert crossings_in(source) == expected


# The longest a function of the package may be: past it, a reader no longer sees it whole.
MAX_FUNCTION_LINES = 60


def test_no_function_is_longer_than_a_screen() -> None:
    too_long = [
        f"{module.where}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for module in modules()
        for node in ast.walk(module.tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (node.end_lineno or node.lineno) - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines: {too_long}"


# The module map of docs/development.md: one entry per top-level module or subpackage, each starting a line.
MAP_PAGE = PACKAGE.parent / "docs" / "development.md"


def rooms() -> set[str]:
    """The package's top-level modules ("api.py") and subpackages ("cache/"), as the map writes them."""
    found = {path.name for path in PACKAGE.glob("*.py")}
    found |= {path.name + "/" for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    return found


def mapped(page: str) -> set[str]:
    """The entries of the map: the first word of each line indented by two spaces in its code block."""
    block = page.split("## The map of the package", 1)[1].split("```", 2)[1]
    return {line.split()[0] for line in block.splitlines() if line.startswith("  ") and not line.startswith("   ")}


def test_the_module_map_names_every_module_and_subpackage() -> None:
    entries = mapped(MAP_PAGE.read_text())
    missing, stale = sorted(rooms() - entries), sorted(entries - rooms())
    assert not missing, f"docs/development.md's module map lacks: {missing}"
    assert not stale, f"docs/development.md's module map names what is not in the package: {stale}"


def test_the_map_check_finds_a_missing_room() -> None:
    page = MAP_PAGE.read_text()
    without = page.replace("\n  routers.py ", "\n   routers.py ", 1)  # pushed into the line above: no entry
    assert "routers.py" in rooms() - mapped(without)
    assert mapped(page) >= {"routers.py", "service/", "redistier/", "moved.py", "models.py"}
