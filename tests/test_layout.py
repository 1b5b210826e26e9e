"""The layout the design page promises, held by the code itself: the lab sits beside the
engine, never under validate; validate never reaches into the lab."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "rackops"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def _offenders(room: str, banned: str) -> list[str]:
    return sorted(
        f"{p.relative_to(PKG)} imports {m}"
        for p in (PKG / room).rglob("*.py")
        for m in _imports(p)
        if m == banned or m.startswith(banned + ".")
    )


def test_the_lab_does_not_import_validate() -> None:
    assert _offenders("lab", "rackops.validate") == []


def test_validate_and_the_scheduler_do_not_import_the_lab() -> None:
    assert _offenders("validate", "rackops.lab") == []
    assert _offenders("scheduler", "rackops.lab") == []
    assert _offenders("scheduler", "rackops.validate") == []


# functions that are data tables written as code (the stand-in repository's package set)
DATA_TABLES = {("lab/repo.py", "packages")}


def test_no_function_is_over_100_lines_outside_data_tables() -> None:
    long = []
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                where = (str(path.relative_to(PKG)), node.name)
                if lines > 100 and where not in DATA_TABLES:
                    long.append(f"{where[0]}:{node.lineno} {node.name} ({lines} lines)")
    assert long == [], long
