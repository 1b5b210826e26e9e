"""playbooks/switches.yml with real ansible-playbook: syntax, and check mode against saved
running configs — it prints the change per switch and changes nothing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests/golden/render/example-roce/switches"
PLAYBOOK = ROOT / "playbooks/switches.yml"
SUFFIX = {"config_db.json": "json", "startup.yaml": "yaml", "running-config": "cfg"}


def _ansible(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("ansible-playbook")
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_CALLBACK_RESULT_FORMAT="json",  # one line per message, no YAML wrapping
    )
    return subprocess.run(
        [str(exe), *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )


def _saved(tmp: Path) -> Path:
    saved = tmp / "running"
    saved.mkdir()
    for folder in GOLDEN.iterdir():
        for name, ext in SUFFIX.items():
            if (folder / name).exists():
                shutil.copy(folder / name, saved / f"{folder.name}.{ext}")
    db = json.loads((saved / "leaf-r1.json").read_text())
    db["PORT"]["Ethernet8"]["mtu"] = "9100"
    (saved / "leaf-r1.json").write_text(json.dumps(db))
    text = (saved / "leaf-r4.yaml").read_text()
    (saved / "leaf-r4.yaml").write_text(text.replace("probability: 100", "probability: 20"))
    return saved


def _digest(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def test_syntax() -> None:
    r = _ansible("--syntax-check", "-i", "inventories/example-roce", str(PLAYBOOK))
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("check", [True, False], ids=["check", "no-push-flag"])
def test_the_diff_is_shown_and_nothing_is_pushed(tmp_path: Path, check: bool) -> None:
    saved = _saved(tmp_path)
    before = _digest(saved)
    args = [
        "-i",
        "inventories/example-roce",
        str(PLAYBOOK),
        "-e",
        f"rackops_switch_running_dir={saved}",
        "-e",
        f"rackops_build_dir={tmp_path / 'build'}",
    ]
    if check:
        args += ["--check", "-e", "rackops_switch_push=true"]
    r = _ansible(*args)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "leaf-r1 replace /PORT/Ethernet8/mtu: '9100' -> '9216'" in out
    assert (
        "leaf-r4 nv set qos congestion-control default-global traffic-class 3 probability 100"
        in out
    )
    assert "leaf-r0: 0 change(s)" in out and "leaf-r6: 0 change(s)" in out
    assert ("nothing was pushed" if check else "not pushed: add -e rackops_switch_push=true") in out
    # the push play ends before any task reaches a switch, and no saved config changed
    assert "TASK [Copy the SONiC JSON Patch]" not in out
    assert "unreachable=1" not in out
    assert _digest(saved) == before
    patch = json.loads((tmp_path / "build/switches/leaf-r1/config-patch.json").read_text())
    assert patch == [{"op": "replace", "path": "/PORT/Ethernet8/mtu", "value": "9216"}]
    nv = (tmp_path / "build/switches/leaf-r4/nv-changes.txt").read_text().splitlines()
    assert nv == [
        "nv set qos congestion-control default-global traffic-class 3 probability 100",
        "nv config apply -y",
    ]
