"""Installed as users install it: a wheel built from this tree, in a clean venv, run from
outside the checkout, finds its templates, profiles, suites, playbooks and roles."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp / "dist"),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp / "dist").glob("rackops-*.whl")
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    pip = subprocess.run(
        [str(env_dir / "bin/python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    return env_dir / "bin" / "rackops"


def _run(exe: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(exe), *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
    )


@pytest.mark.parametrize("rack", ["example-roce", "example-ib"])
def test_lint_render_and_dry_run_from_the_wheel(installed: Path, rack: str, tmp_path: Path) -> None:
    inv = str(ROOT / "inventories" / rack)
    lint = _run(installed, "lint", "-i", inv, cwd=tmp_path)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    render = _run(installed, "render", "-i", inv, "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert render.returncode == 0, render.stdout + render.stderr
    golden = ROOT / "tests/golden/render" / rack

    def body(p: Path) -> list[str]:  # provenance lines name the inventory path as given
        return [x for x in p.read_text().splitlines() if "rendered by rackops" not in x]

    for path in golden.rglob("*"):
        if path.is_file():
            assert body(tmp_path / "out" / path.relative_to(golden)) == body(path), path
    plan = _run(installed, "validate", "-i", inv, "--dry-run", cwd=tmp_path)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "estimated wall time" in plan.stdout
    assert "Traceback" not in lint.stderr + render.stderr + plan.stderr


def test_the_wheel_carries_the_roles_and_playbooks(installed: Path) -> None:
    py = installed.with_name("python")
    out = subprocess.run(
        [
            str(py),
            "-c",
            "from rackops import data; print(data.path('roles')); print(data.path('playbooks'))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=installed.parent,  # not the checkout: `python -c` imports from its cwd first
    ).stdout.split()
    roles, playbooks = Path(out[0]), Path(out[1])
    assert ROOT not in roles.parents  # the installed copy, not the checkout
    assert (roles / "ofed/tasks/main.yml").is_file()
    assert (playbooks / "provision.yml").is_file()
    assert {p.name for p in roles.iterdir()} >= {"ofed", "nvidia_driver", "roce_host_qos"}


def test_the_wheel_carries_the_roles_filter_and_provision_finds_it(
    installed: Path, tmp_path: Path
) -> None:
    """The roles call rackops.rackops.host_design: a wheel install (no checkout, no
    ansible.cfg) finds it where `rackops provision` points Ansible."""
    py = installed.with_name("python")
    where = subprocess.run(
        [str(py), "-c", "from rackops.cli import _collections_path; print(_collections_path())"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.strip()
    # no entry in the checkout (a path beside it that shares its name's prefix is not in it)
    assert not any(Path(x).resolve().is_relative_to(ROOT.resolve()) for x in where.split(":") if x)
    fabric = '{"type": "roce", "mtu": {"host": 9000, "switch": 9216}, "roce": {}}'
    hcas = (
        '[{"device": "mlx5_0", "netdev": "eth2", "rail": 0, "gpu": 0, "switch": "s", "port": "p1"}]'
    )
    msg = f"{{{{ ({fabric} | rackops.rackops.host_design({hcas}, {{}}, {{}}, 'n1')).interfaces }}}}"
    out = subprocess.run(
        [
            str(installed.with_name("ansible")),
            "localhost",
            "-m",
            "ansible.builtin.debug",
            "-a",
            json.dumps({"msg": msg}),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": where},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"\beth2\b\W+9000", out.stdout), out.stdout
