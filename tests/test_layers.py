"""The package's layers and its acyclic packages, as import-linter checks them in CI
(pyproject.toml, [tool.importlinter]): kept on this tree, and broken by an import up a
layer or by a cycle between two sibling modules, on a copy of the package."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_lab import ROOT, VENV_BIN


def lint_imports(package_parent: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "lint-imports"), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=package_parent,
        env={**os.environ, "PYTHONPATH": str(package_parent)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_tree_keeps_its_layers_and_has_no_import_cycle() -> None:
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "2 kept, 0 broken" in proc.stdout, proc.stdout[-3000:]


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # a parser asking the tool registry: parsers are below tools
        ("parsers/_common.py", "import rackops.tools.base", "rackops layers"),
        # the first screen and localisation importing each other
        ("validate/localise.py", "import rackops.validate.firstscreen", "no import cycles"),
    ],
)
def test_an_import_up_a_layer_or_round_a_cycle_breaks_a_contract(
    module: str, line: str, broken: str, tmp_path: Path
) -> None:
    shutil.copytree(ROOT / "rackops", tmp_path / "rackops", ignore=shutil.ignore_patterns("data"))
    (tmp_path / "rackops" / "data").mkdir()
    (tmp_path / "rackops" / "data" / "__init__.py").write_text("")
    target = tmp_path / "rackops" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert f"{broken}" in proc.stdout and "BROKEN" in proc.stdout, proc.stdout[-3000:]
