"""What rackops declares is what it uses."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMPORT_NAME = {"ansible-core": "ansible", "pyyaml": "yaml"}


def _imported_roots() -> set[str]:
    roots: set[str] = set()
    for path in (ROOT / "rackops").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                roots.add(node.module.split(".")[0])
    return roots


def test_every_declared_dependency_is_imported_by_the_engine() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = [d.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip() for d in deps]
    used = _imported_roots()
    unused = [n for n in names if IMPORT_NAME.get(n, n.replace("-", "_")) not in used]
    # ansible-core provides ansible-playbook and the inventory reader the engine calls
    assert unused == [], f"declared but never imported by rackops/: {unused}"


def test_the_collection_and_the_wheel_carry_one_version() -> None:
    import yaml

    import rackops

    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    assert galaxy["version"] == rackops.__version__
    assert (galaxy["namespace"], galaxy["name"]) == ("rackops", "rackops")
