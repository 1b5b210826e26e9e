"""What the lab tests share: running `rackops validate` on a lab inventory, and a command
on a target."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from test_lab import ROOT, VENV_BIN

from rackops.lab import apply_leaf_mtus
from rackops.lab.model import lab_workdir
from rackops.lab.scenario import Fault


def playbook(inv: Path, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """ansible-playbook playbooks/<name> on an inventory, from the repository root."""
    return subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(inv), f"playbooks/{name}", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def provision_hosts(inv: Path, scenario: str) -> None:
    """The stand-in hardware and the host tuning on every node but the scenario's
    unreachable ones."""
    down = set(re.findall(r"^  (node\d+):\s*\{[^}]*unreachable: true", scenario, re.M))
    _reached_all_but(playbook(inv, "lab-hardware.yml"), down)
    tags = "net_mtu,hugepages,irq_affinity,roce_host_qos,nvidia_imex"  # IMEX: trays only
    _reached_all_but(playbook(inv, "provision.yml", "--tags", tags), down)


def _reached_all_but(proc: subprocess.CompletedProcess[str], down: set[str]) -> None:
    """The play reached every node but the scenario's unreachable ones (a node missed under
    load would stay unprovisioned and fail the test later, far from the cause)."""
    missed = set(re.findall(r"^(node\d+)\s+:.*unreachable=[1-9]", proc.stdout, re.M))
    failed = set(re.findall(r"^(node\d+)\s+:.*failed=[1-9]", proc.stdout, re.M))
    assert missed == down and not failed, proc.stdout[-3000:]
    assert proc.returncode == (4 if down else 0), proc.stdout[-3000:]


def validate_argv(inv: Path, *extra: str, suite: str = "lab") -> list[str]:
    """`rackops validate` on a lab inventory (suite `lab`); add --run-dir or --resume."""
    return [
        str(VENV_BIN / "rackops"),
        "validate",
        "-i",
        str(inv),
        "--suite",
        suite,
        "--accept-new-host-keys",
        *extra,
    ]


def validate(inv: Path, run: Path, *extra: str, suite: str = "lab") -> tuple[int, dict[str, Any]]:
    """Run it to the end; its exit code and report.json."""
    proc = subprocess.run(
        validate_argv(inv, "--run-dir", str(run), *extra, suite=suite),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert (run / "report.json").exists(), f"exit {proc.returncode}: {proc.stderr[-3000:]}"
    return proc.returncode, json.loads((run / "report.json").read_text())


def on_target(ssh_config: Path, node: str, cmd: str) -> str:
    """Run a shell command on a target over SSH; it must succeed. Its stdout."""
    proc = subprocess.run(
        ["ssh", "-F", str(ssh_config), node, cmd],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def set_faults(faults: dict[str, list[dict[str, Any]]]) -> None:
    """Give the up lab's nodes these faults (every other node none), in place: the targets
    see scenario.json bind-mounted, so the next tool run on them shows it; a leaf port's
    MTU (``switch_mtu``) is set on the lab's bridge again. A node that `lab up` left
    unreachable stays so."""
    path = lab_workdir(None) / "scenario.json"
    data = json.loads(path.read_text())
    for node, spec in data["nodes"].items():  # as `lab up` writes them, defaults included
        spec["faults"] = [
            Fault.model_validate(f).model_dump(exclude_none=True) for f in faults.get(node, [])
        ]
    with path.open("r+") as fh:  # the same file (inode), not a new one: bind mounts keep it
        fh.seek(0)
        fh.write(json.dumps(data, indent=1))
        fh.truncate()
    apply_leaf_mtus()


def set_fabric_faults(faults: list[dict[str, Any]]) -> None:
    """Give the up lab's fabric these faults (a lab with racks), in place: the switches'
    NOS simulator and the InfiniBand sweep read scenario.json at every command."""
    from rackops.lab.scenario import FabricFault

    path = lab_workdir(None) / "scenario.json"
    data = json.loads(path.read_text())
    data.setdefault("fabric", {})["faults"] = [  # the ISLs as cabled stay
        FabricFault.model_validate(f).model_dump(exclude_none=True) for f in faults
    ]
    with path.open("r+") as fh:  # the same file (inode): bind mounts keep it
        fh.seek(0)
        fh.write(json.dumps(data, indent=1))
        fh.truncate()


def recap(out: str) -> dict[str, dict[str, int]]:
    return {
        m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
        for m in re.finditer(r"^(node\d+)\s+:\s+(.*)$", out, re.M)
    }


def changed_tasks(out: str) -> list[str]:
    """The tasks a run changed, with the hosts: what a failed idempotence check names."""
    found, task = [], ""
    for line in out.splitlines():
        if line.startswith(("TASK [", "RUNNING HANDLER [")):
            task = line.split("[", 1)[1].rsplit("]", 1)[0]
        elif line.startswith("changed: ["):
            found.append(f"{task}: {line}")
    return found
