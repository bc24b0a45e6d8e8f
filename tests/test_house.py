"""The package's house rules, read from its source: no private name crosses a module, every import inside a
function says why it is there, and every package says its job."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "django_segment_seq"


def modules() -> list[tuple[str, Path, ast.Module]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        dotted = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        found.append((dotted, path, ast.parse(path.read_text(), str(path))))
    return found


# Django's model API, public by its documentation despite the underscore.
DJANGO_MODEL_API = frozenset({"_meta", "_base_manager", "_default_manager"})


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in DJANGO_MODEL_API


def test_no_private_name_is_used_outside_its_module():
    crossings = []
    for _dotted, path, tree in modules():
        imported_modules = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("django_segment_seq"):
                for alias in node.names:
                    if is_private(alias.name):
                        crossings.append(f"{path.name}:{node.lineno} imports {node.module}.{alias.name}")
                    # A module, or any other name another module defines (the cache's `ranges`, say).
                    imported_modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in imported_modules
                and is_private(node.attr)
            ):
                crossings.append(f"{path.name}:{node.lineno} uses {imported_modules[node.value.id]}.{node.attr}")
    assert crossings == []


def test_every_import_inside_a_function_says_why():
    """The package's face loads lazily, so modules import at their top; an import in a function needs a reason."""
    unexplained = []
    for _dotted, path, tree in modules():
        lines = path.read_text().splitlines()
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    here, first = lines[node.lineno - 1], node.lineno - 1
                    while first > 0 and lines[first - 1].strip().startswith(("from ", "import ")):
                        first -= 1  # a group of imports shares the comment above it
                    if "#" not in here and not lines[first - 1].strip().startswith("#"):
                        unexplained.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {here.strip()}")
    assert unexplained == []


def test_every_package_says_its_job():
    silent = [
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("__init__.py")
        if "migrations" not in path.parts and not ast.get_docstring(ast.parse(path.read_text()))
    ]
    assert silent == []
