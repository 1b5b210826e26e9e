"""The provisioning roles against real targets (systemd as PID 1) and the stand-in vendor
apt repository: converge, idempotence, check mode, state checked with testinfra, the
refusals, and `rackops validate` finding the stack as provisioned."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_lab import VENV_BIN, pytestmark  # noqa: F401  (same skip/require rules)

from rackops import lab
from rackops.lab.lab import LabState, lab_workdir

ROOT = Path(__file__).resolve().parent.parent
DRIVER, OFED = "580.95.05", "25.07-0.9.7"


@pytest.fixture(scope="module")
def rack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabState]:
    assert LabState.load(lab_workdir(None)) is None, "a lab is already up: rackops lab down"
    tmp = tmp_path_factory.mktemp("roles")
    state = lab.up(nodes=2, systemd=True, inventory=str(tmp / "inv"))
    try:
        yield state
    finally:
        lab.down()


def provision(state: LabState, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(VENV_BIN / "ansible-playbook"),
            "-i",
            str(state.inventory),
            "playbooks/provision.yml",
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def recap(out: str) -> dict[str, dict[str, int]]:
    return {
        m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
        for m in re.finditer(r"^(node\d+)\s+:\s+(.*)$", out, re.M)
    }


@pytest.fixture(scope="module")
def converged(rack: LabState) -> LabState:
    first = provision(rack)
    assert first.returncode == 0, first.stdout[-3000:]
    assert all(r["changed"] > 0 for r in recap(first.stdout).values())
    return rack


def test_second_run_changes_nothing(converged: LabState) -> None:
    again = provision(converged)
    assert again.returncode == 0 and all(r["changed"] == 0 for r in recap(again.stdout).values())


def test_check_diff_changes_nothing(converged: LabState) -> None:
    check = provision(converged, "--check", "--diff")
    assert check.returncode == 0, check.stdout[-2000:]
    assert all(r["changed"] == 0 for r in recap(check.stdout).values())


def test_state_with_testinfra(converged: LabState) -> None:
    import testinfra

    for node in ("node01", "node02"):
        host = testinfra.get_host(
            f"ssh://{node}", ssh_config=str(converged.workdir / "ssh_config"), sudo=True
        )
        assert host.package("doca-ofed").version == OFED
        assert host.package("nvidia-driver-580-server-open").version.startswith(DRIVER + "-")
        assert host.package("nvidia-fabricmanager-580").version.startswith(DRIVER + "-")
        held = host.check_output("dpkg --get-selections | awk '$2 == \"hold\" {print $1}'")
        assert {"doca-ofed", "nvidia-fabricmanager-580", "nvidia-utils-580-server"} <= set(
            held.split()
        )
        assert host.file("/etc/modprobe.d/blacklist-nouveau.conf").contains("blacklist nouveau")
        assert host.file("/etc/modules-load.d/nvidia-peermem.conf").contains("nvidia-peermem")
        for unit in ("nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm"):
            assert host.service(unit).is_enabled
        values = host.file("/etc/rackops/gpu-operator-values.yaml").content_string
        assert "enabled: false" in values and "useHostMofed: true" in values
        assert host.file("/etc/containerd/conf.d/99-nvidia.toml").contains("runtimes.nvidia")
        assert host.file("/etc/nccl.conf").contains("^NCCL_IB_TC=106$")
        assert host.file("/etc/rackops/roce-qos.env").contains("^PFC=0,0,0,1,0,0,0,0$")
        assert host.service("rackops-roce-qos").is_enabled
        live = host.check_output("mlnx_qos -i enp24s0np0")
        assert "Priority trust state: dscp" in live


def test_fabric_manager_differing_from_driver_is_refused(converged: LabState) -> None:
    proc = provision(
        converged,
        "-e",
        "nvidia_driver_fabricmanager_version=580.95.04",
        "--tags",
        "nvidia_driver_preflight",
    )
    assert proc.returncode != 0
    assert "fabric manager 580.95.04 differs from driver 580.95.05" in proc.stdout


def test_wrong_pin_lists_available_versions(converged: LabState) -> None:
    proc = provision(
        converged,
        "-e",
        "nvidia_driver_version=580.11.22",
        "-e",
        "nvidia_driver_fabricmanager_version=580.11.22",
        "--tags",
        "nvidia_driver_preflight",
    )
    assert proc.returncode != 0
    assert "580.11.22 is not available" in proc.stdout and "580.95.05-0ubuntu1" in proc.stdout
    proc = provision(converged, "-e", "ofed_version=24.10-9.9.9", "--tags", "ofed_preflight")
    assert proc.returncode != 0 and f"the repository has: {OFED}" in proc.stdout


def test_validate_finds_the_stack_as_provisioned(converged: LabState, tmp_path: Path) -> None:
    # nccl-tests is a test tool, not part of the provisioned stack: install it for the run
    subprocess.run(
        [
            str(VENV_BIN / "ansible"),
            "gpu_nodes",
            "-i",
            str(converged.inventory),
            "-m",
            "ansible.builtin.apt",
            "-a",
            "name=nccl-tests",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    proc = subprocess.run(
        [
            str(VENV_BIN / "rackops"),
            "validate",
            "-i",
            str(converged.inventory),
            "--suite",
            "lab",
            "--accept-new-host-keys",
            "--run-dir",
            str(tmp_path / "run"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert proc.returncode == 0, report["culprits"] + report["errors"]
    for node in ("node01", "node02"):
        assert report["nodes"][node]["ofed_info"] == "OK"  # equals the pinned OFED
        assert report["nodes"][node]["nvidia-smi-xml"] == "OK"  # driver equals the pin


def test_live_qos_drift_is_a_finding(converged: LabState, tmp_path: Path) -> None:
    drift = subprocess.run(
        [
            "ssh",
            "-F",
            str(converged.workdir / "ssh_config"),
            "node02",
            "sudo mlnx_qos -i enp41s0np0 --pfc 0,0,0,1,0,0,1,0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert drift.returncode == 0, drift.stderr
    try:
        proc = subprocess.run(
            [
                str(VENV_BIN / "rackops"),
                "validate",
                "-i",
                str(converged.inventory),
                "--suite",
                "lab",
                "--accept-new-host-keys",
                "--run-dir",
                str(tmp_path / "run"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        report = json.loads((tmp_path / "run" / "report.json").read_text())
        assert proc.returncode == 2
        (culprit,) = report["culprits"]
        assert (culprit["node"], culprit["hca"], culprit["switch"]) == (
            "node02",
            "mlx5_1",
            "leaf-r1",
        )
        assert "PFC is on the CNP priority 6 (0,0,0,1,0,0,1,0)" in culprit["message"]
    finally:
        subprocess.run(
            [
                "ssh",
                "-F",
                str(converged.workdir / "ssh_config"),
                "node02",
                "sudo /usr/local/sbin/rackops-roce-qos",
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
