"""The VM lab end to end (``rackops lab up --engine vm``): two QEMU VMs on their own
kernel, the roles that change a kernel run for real against them, and `rackops validate`
with real perftest over Soft-RoCE between them.

One lab, in order: converge (the hugepage role writes the kernel command line and reboots
the node; the check after it reads the running kernel's), the second run changes nothing,
check mode is clean (on node01), the kernel has what the design says (1 GiB pages per NUMA
node, the virtio-net completion IRQs on their NIC's NUMA-local CPU, MTU 9000 through the reboot,
rxe's active MTU 4096), validate is ACCEPTED. Then node02 is rebooted: its scenario fault, a
boot unit that pins rail 1's IRQs to CPU 0 after the role's own unit, shows only now, and
validate names exactly that NIC — what no container lab can show, as it has no kernel and
no boot of its own.

Needs root, qemu-system-x86_64, qemu-img and debootstrap (``.ci/run`` installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from labkit import changed_tasks, recap
from labkit import validate as labkit_validate
from test_lab import ROOT, VENV_BIN

from rackops import lab
from rackops.lab.lab import LabState

NEEDS = ("qemu-system-x86_64", "qemu-img", "debootstrap", "mke2fs", "ssh")
missing = [t for t in NEEDS if shutil.which(t) is None]
if missing or os.geteuid() != 0:
    reason = f"the VM lab needs root and {', '.join(missing) or 'nothing else'}"
    if os.environ.get("RACKOPS_REQUIRE_LAB") == "1":
        raise RuntimeError(reason + " (RACKOPS_REQUIRE_LAB=1)")
    pytestmark = [pytest.mark.vm, pytest.mark.skip(reason=reason)]
else:
    pytestmark = [pytest.mark.vm]

SCENARIO = """
nodes:
  node02:
    vm:
      - {kind: irq_pinned, rail: 1, cpus: "0"}
"""


@pytest.fixture(scope="module")
def vms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabState]:
    tmp = tmp_path_factory.mktemp("vm")
    (tmp / "scenario.yaml").write_text(SCENARIO)
    wd = tmp / "lab"
    log: list[str] = []
    state = lab.up(
        nodes=2,
        engine_name="vm",
        workdir=str(wd),
        inventory=str(tmp / "inv"),
        scenario=str(tmp / "scenario.yaml"),
        log=log,
    )
    try:
        yield state
    finally:
        lab.down(workdir=str(wd))
        left = [d.name for d in Path("/sys/class/net").iterdir() if d.name.startswith("rvl")]
        assert not left, left


def provision(state: LabState, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / "rackops"), "provision", "-i", str(state.inventory), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )


def on(state: LabState, node: str, cmd: str) -> str:
    proc = subprocess.run(
        ["ssh", "-F", str(state.workdir / "ssh_config"), node, cmd],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"{node}: {cmd}: {proc.stderr}"
    return proc.stdout


# what the kernel has, in one session: "key value..." lines (completion IRQs: all MSI-X
# vectors but the first, the config vector, of the NIC's PCI function)
KERNEL = r"""
echo "cmdline $(cat /proc/cmdline)"
for n in 0 1; do
  echo "pages$n $(cat /sys/devices/system/node/node$n/hugepages/hugepages-1048576kB/nr_hugepages)"
done
for dev in eth1 eth2; do
  pci=/sys/class/net/$dev/device/..
  echo "mtu_$dev $(cat /sys/class/net/$dev/mtu)"
  echo "numa_$dev $(cat $pci/numa_node)"
  for i in $(ls $pci/msi_irqs | sort -n | tail -n +2); do
    echo "irq_$dev $i $(cat /proc/irq/$i/smp_affinity_list)"
  done
done
echo "active_mtu_4096 $(ibv_devinfo -v | grep -c 'active_mtu:.*4096')"
"""


def read_kernel(state: LabState, node: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in on(state, node, KERNEL).splitlines():
        key, *values = line.split()
        found.setdefault(key, []).extend(values)
    return found


def validate(state: LabState, run: Path) -> tuple[int, dict[str, object]]:
    # one link at a time: emulated CPUs are the bottleneck
    return labkit_validate(state.inventory, run, "--concurrency", "1", suite="vm")


def findings(run: Path) -> list[dict[str, object]]:
    out = []
    for line in (run / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        out += [f for f in rec.get("findings") or [] if f["status"] != "OK"]
    return out


def test_roles_on_a_real_kernel_and_rdma_over_soft_roce(vms: LabState, tmp_path: Path) -> None:
    first = provision(vms)
    assert first.returncode == 0, first.stdout[-4000:]
    assert "RUNNING HANDLER [hugepages : Reboot into the new kernel command line]" in first.stdout
    assert all(r["changed"] > 0 and r["failed"] == 0 for r in recap(first.stdout).values())

    again = provision(vms)
    assert again.returncode == 0, again.stdout[-4000:]
    changed = {n: r["changed"] for n, r in recap(again.stdout).items()}
    assert changed == {"node01": 0, "node02": 0}, changed_tasks(again.stdout)
    # check mode on one of the two: both run the same tasks on the same image (node02 differs
    # only in its rails' NUMA node), and an emulated node's run is minutes of CI
    check = provision(vms, "--check", "--", "--limit", "node01")
    assert check.returncode == 0, check.stdout[-4000:]
    changed = {n: r["changed"] for n, r in recap(check.stdout).items()}
    assert changed == {"node01": 0}, changed_tasks(check.stdout)

    for node in ("node01", "node02"):
        kernel = read_kernel(vms, node)  # one SSH session per node: emulated CPUs are slow
        assert {"hugepagesz=1G", "hugepages=0:1,1:1"} <= set(kernel["cmdline"]), kernel
        assert kernel["pages0"] == kernel["pages1"] == ["1"], kernel
        for rail, dev in ((0, "eth1"), (1, "eth2")):
            assert kernel[f"mtu_{dev}"] == ["9000"], kernel
            assert kernel[f"numa_{dev}"] == [str(rail)], kernel
            irqs = kernel[f"irq_{dev}"]  # "irq cpus" pairs
            assert len(irqs) == 2 * 4, irqs  # 2 queue pairs: input and output each
            assert irqs[1::2] == [str(rail)] * 4, (node, dev, irqs)
        assert kernel["active_mtu_4096"] == ["2"], kernel

    rc, report = validate(vms, tmp_path / "clean")
    assert rc == 0 and report["verdict"] == "ACCEPTED", findings(tmp_path / "clean")

    # the maintenance reboot: node02's leftover boot unit pins rail 1's IRQs to CPU 0
    subprocess.run(
        [
            str(VENV_BIN / "ansible"),
            "-i",
            str(vms.inventory),
            "node02",
            "-m",
            "ansible.builtin.reboot",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    rc, report = validate(vms, tmp_path / "rebooted")
    assert rc == 2, report
    bad = findings(tmp_path / "rebooted")
    assert [(f["code"], f["status"]) for f in bad] == [("C-37", "FAIL")], bad
    subject = bad[0]["subject"]
    assert isinstance(subject, dict)
    assert (subject["node"], subject["hca"]) == ("node02", "rxe1"), subject
    assert "eth2" in str(bad[0]["message"]) and "CPUs 1" in str(bad[0]["message"])
