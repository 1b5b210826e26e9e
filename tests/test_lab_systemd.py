"""The systemd variant of the lab: systemd as PID 1, units work, and kernel-global
settings stay refused inside the target (the lab machine is never changed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_lab import pytestmark  # noqa: F401  (same skip/require rules as the main lab tests)

from rackops import lab
from rackops.lab.lab import LabState
from rackops.lab.model import lab_workdir


def test_systemd_target(tmp_path: Path) -> None:
    if LabState.load(lab_workdir(None)) is not None:
        pytest.fail("a lab is already up in .lab: run `rackops lab down` first")
    swappiness = Path("/proc/sys/vm/swappiness").read_text()
    state = lab.up(nodes=1, systemd=True, inventory=str(tmp_path / "inv"))
    try:

        def ssh(cmd: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["ssh", "-F", str(state.workdir / "ssh_config"), "node01", cmd],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )

        for _ in range(50):
            status = ssh("systemctl is-system-running").stdout.strip()
            if status not in ("starting", "initializing", ""):
                break
        assert status == "running", ssh("systemctl --failed").stdout
        assert ssh("ps -p 1 -o comm=").stdout.strip() == "systemd"
        assert ssh("systemctl is-active ssh").stdout.strip() == "active"
        refused = ssh("sudo sysctl -w vm.swappiness=61")
        assert "permission denied" in refused.stderr.lower()
        assert Path("/proc/sys/vm/swappiness").read_text() == swappiness
    finally:
        lab.down()


def test_a_lab_subnet_already_in_use_is_refused_up_front(tmp_path: Path) -> None:
    """Another lab up on the machine (another checkout) holds the management subnet: `up`
    says which interface holds it and leaves no state behind."""
    if LabState.load(lab_workdir(None)) is not None:
        pytest.fail("a lab is already up in .lab: run `rackops lab down` first")
    subprocess.run(["ip", "link", "add", "rkt-squat", "type", "bridge"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", "198.19.64.1/24", "dev", "rkt-squat"], check=True)
        with pytest.raises(
            lab.lab.LabError, match=r"198\.19\.64\.0/24 is already in use .*rkt-squat"
        ):
            lab.up(nodes=1, engine_name="nspawn", inventory=str(tmp_path / "inv"))
        assert LabState.load(lab_workdir(None)) is None
    finally:
        subprocess.run(["ip", "link", "del", "rkt-squat"], check=False)
