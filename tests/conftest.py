"""Shared test helpers: copies of the example racks that a test can break on purpose."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import settings

from rackops.lint import LintReport, lint_inventory

# Property and fuzz tests: the same examples on every run, so CI is never flaky and a
# failure reproduces (hypothesis prints the example and its blob). For new examples:
# HYPOTHESIS_PROFILE=explore, or pytest --hypothesis-seed=<n>.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "inventories"


class Rack:
    """A writable copy of an example inventory."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _edit(self, rel: str, fn: Any) -> None:
        file = self.path / rel
        data = yaml.safe_load(file.read_text()) if file.exists() else {}
        fn(data if data is not None else {})
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(yaml.safe_dump(data, sort_keys=False))

    def set(self, rel: str, dotted: str, value: Any) -> None:
        """Set ``a.b.0.c`` in the YAML file ``rel``; ``None`` deletes the key."""

        def apply(data: Any) -> None:
            keys = [int(k) if k.isdigit() else k for k in dotted.split(".")]
            for k in keys[:-1]:
                data = data.setdefault(k, {}) if isinstance(data, dict) else data[k]
            if value is None:
                del data[keys[-1]]
            else:
                data[keys[-1]] = value

        self._edit(rel, apply)

    def hostvar(self, host: str, dotted: str, value: Any) -> None:
        self.set(f"host_vars/{host}.yml", dotted, value)

    def hcas(self, host: str) -> list[dict[str, Any]]:
        data = yaml.safe_load((self.path / "host_vars" / f"{host}.yml").read_text())
        return list(data["rackops_hcas"])

    def write(self, rel: str, text: str) -> None:
        file = self.path / rel
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)

    def lint(self) -> LintReport:
        return lint_inventory(self.path)


def _copy(tmp_path: Path, name: str) -> Rack:
    dest = tmp_path / name
    shutil.copytree(EXAMPLES / name, dest)
    return Rack(dest)


@pytest.fixture
def roce(tmp_path: Path) -> Rack:
    return _copy(tmp_path, "example-roce")


@pytest.fixture
def ib(tmp_path: Path) -> Rack:
    return _copy(tmp_path, "example-ib")


@pytest.fixture
def nvl72(tmp_path: Path) -> Rack:
    return _copy(tmp_path, "example-gb200-nvl72")
