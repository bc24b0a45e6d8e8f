"""Each system check id names one problem: no two checks in the package share an id."""

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "django_segment_seq"


def check_ids() -> dict[str, list[str]]:
    """Every `id="django_segment_seq.…"` passed to a check message, with where it is."""
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("Error", "Warning", "Critical"):
                for keyword in node.keywords:
                    if keyword.arg == "id" and isinstance(keyword.value, ast.Constant):
                        found[keyword.value.value].append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return found


def test_every_check_id_is_used_once():
    found = check_ids()
    assert len(found) > 30  # the scan sees the checks
    repeated = {check_id: places for check_id, places in found.items() if len(places) > 1}
    assert repeated == {}


def test_every_check_id_is_documented():
    docs = "".join(path.read_text() for path in (PACKAGE.parent / "docs").glob("*.md"))
    missing = [check_id for check_id in check_ids() if check_id.rpartition(".")[2] not in docs]
    assert missing == []
