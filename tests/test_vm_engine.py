"""The VM lab engine without booting anything: the QEMU command line (NUMA, NICs behind
expander bridges per NUMA node, multiqueue), the per-VM boot script, the scenario's VM
faults, the disk's partition table, and the host-tuning read-back on a virtio NIC's sysfs
layout (its MSI-X vectors and NUMA node are on the parent PCI function)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rackops.errors import InventoryError
from rackops.lab import vm
from rackops.lab.engine import LabError
from rackops.lab.model import LabNode
from rackops.lab.scenario import NodeSpec, Scenario
from rackops.lab.vmimage import PART_OFFSET, mbr
from rackops.parsers.host_tuning import SCRIPT, parse_host_tuning


def _node(i: int = 1) -> LabNode:
    ip = f"{vm.MGMT}.{10 + i}"
    rails = {r: f"198.18.{r}.{10 + i}" for r in range(vm.RAILS)}
    return LabNode(f"node{i:02d}", i, "", 22, ip, rails, ssh_host=ip)


def _args(memory: tuple[int, int] = (5120, 5120)) -> list[str]:
    p = Path("/x")
    return vm.qemu_args(_node(), p / "d.qcow2", p / "i", p / "l", p / "p", memory)


def test_two_numa_nodes_and_a_nic_per_rail_on_its_own_node() -> None:
    args = " ".join(_args())
    assert "-numa node,nodeid=0,cpus=0,memdev=mem0" in args
    assert "-numa node,nodeid=1,cpus=1,memdev=mem1" in args
    for r in range(vm.RAILS):
        assert f"pxb,id=pxb{r},bus=pci.0,bus_nr={32 * (r + 1)},numa_node={r}" in args
        assert f"pci-bridge,id=bridge{r},bus=pxb{r}" in args
        nic = next(a for a in _args() if a.startswith(f"virtio-net-pci,netdev=rail{r},"))
        assert f"bus=bridge{r}" in nic and "mq=on" in nic and "speed=100000" in nic
        assert f"mac={vm.mac(_node(), r)}" in nic
        assert f"queues={vm.QUEUES}" in args
    assert "accel=tcg" in args


def test_a_numa_memory_fault_shrinks_that_node() -> None:
    spec = NodeSpec.model_validate(
        {"vm": [{"kind": "numa_memory", "numa_node": 1, "memory_mb": 768}]}
    )
    mem = vm.numa_memory(spec)
    assert mem == (5120, 768)
    args = " ".join(_args(mem))
    assert "memory-backend-ram,id=mem1,size=768M" in args and "-m 5888" in args


def test_the_boot_script_names_nics_by_mac_and_adds_rxe() -> None:
    nodes = [_node(1), _node(2)]
    text = vm.init_script(nodes[1], nodes, "ssh-ed25519 AAAA lab")
    assert "hostname node02" in text
    assert f"eth1={vm.mac(nodes[1], 0)}" in text and f"eth2={vm.mac(nodes[1], 1)}" in text
    assert "ip addr replace 198.18.1.12/24 dev eth2" in text
    assert "rdma link add rxe1 type rxe netdev eth2" in text
    assert "198.19.128.11 node01" in text
    assert "rackops-fault" not in text
    # the key is quoted: a key comment cannot end the command
    assert "'ssh-ed25519 AAAA lab'" in text
    subprocess.run(["sh", "-n", "-c", text], check=True)


def test_an_irq_fault_is_a_boot_unit_after_the_roles() -> None:
    spec = NodeSpec.model_validate({"vm": [{"kind": "irq_pinned", "rail": 1, "cpus": "0"}]})
    script = vm.fault_script(spec)
    assert "After=rackops-irq-affinity.service" in script
    assert "/sys/class/net/eth2/device/.." in script and "echo 0 >" in script
    subprocess.run(["sh", "-n", "-c", vm.init_script(_node(), [_node()], "k", script)], check=True)


@pytest.mark.parametrize(
    ("fault", "why"),
    [
        ({"kind": "numa_memory", "numa_node": 1}, "needs memory_mb"),
        ({"kind": "irq_pinned", "rail": 1}, "needs cpus"),
        ({"kind": "irq_pinned", "rail": 1, "cpus": "0; reboot"}, "pattern"),
        ({"kind": "irq_pinned", "rail": 5, "cpus": "0"}, "less than or equal"),
        ({"kind": "numa_memory", "numa_node": 2, "memory_mb": 768}, "0 or 1"),
    ],
)
def test_vm_faults_are_checked(fault: dict[str, object], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        Scenario.model_validate({"nodes": {"node01": {"vm": [fault]}}})


def test_faults_an_engine_cannot_show_are_refused() -> None:
    vmf = Scenario.model_validate(
        {"nodes": {"node01": {"vm": [{"kind": "irq_pinned", "rail": 0, "cpus": "1"}]}}}
    )
    with pytest.raises(InventoryError, match="need --engine vm"):
        vmf.refuse_engine("podman")
    vmf.refuse_engine("vm")
    hw = Scenario.model_validate(
        {"nodes": {"node01": {"faults": [{"kind": "gpu_missing", "gpu": 1}]}}}
    )
    with pytest.raises(InventoryError, match="VM lab does not run"):
        hw.refuse_engine("vm")
    hw.refuse_engine("podman")


def test_the_partition_table() -> None:
    table = mbr(PART_OFFSET // 512, 1000)
    assert len(table) == 512 and table[510:] == b"\x55\xaa"
    entry = table[446:462]
    assert entry[0] == 0x80 and entry[4] == 0x83
    assert int.from_bytes(entry[8:12], "little") == 2048
    assert int.from_bytes(entry[12:16], "little") == 1000


def test_host_tuning_reads_a_virtio_nic_from_its_pci_function(tmp_path: Path) -> None:
    """virtio-net: /sys/class/net/eth1/device is the virtio device; the MSI-X vectors, the
    NUMA node and the local CPUs are its parent PCI function's (as read off a VM here)."""
    pci = tmp_path / "sys/devices/pci0000:40/0000:40:00.0/0000:41:01.0"
    virtio = pci / "virtio2"
    virtio.mkdir(parents=True)
    (pci / "numa_node").write_text("1\n")
    (pci / "local_cpulist").write_text("1\n")
    for irq, cpus in ((30, "0-1"), (31, "1"), (32, "0")):
        (pci / "msi_irqs").mkdir(exist_ok=True)
        (pci / "msi_irqs" / str(irq)).write_text("msix\n")
        (tmp_path / "proc/irq" / str(irq)).mkdir(parents=True)
        (tmp_path / "proc/irq" / str(irq) / "smp_affinity_list").write_text(cpus + "\n")
    net = tmp_path / "sys/class/net"
    net.mkdir(parents=True)
    (net / "eth1").mkdir()
    (net / "eth1" / "device").symlink_to(virtio)
    out = subprocess.run(
        ["sh", "-c", SCRIPT, "host-tuning", str(tmp_path), "eth1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    parsed = parse_host_tuning(out)
    nd = parsed.netdevs["eth1"]
    assert nd.sysfs["device/numa_node"] == "1"
    assert nd.sysfs["device/local_cpulist"] == "1"
    assert nd.irqs == {30: "0-1", 31: "1", 32: "0"}


def test_the_box_trusts_the_installed_vagrants_insecure_keys(tmp_path: Path) -> None:
    from rackops.lab.vagrantbox import BOXIFY, vagrant_public_keys

    with pytest.raises(LabError, match="no Vagrant insecure key"):
        vagrant_public_keys((tmp_path,))
    keys = tmp_path / "vagrant-2.4.1" / "keys"  # 2.4: ed25519 and RSA, one file each
    keys.mkdir(parents=True)
    (keys / "vagrant.key.ed25519.pub").write_text("ssh-ed25519 AAAAC3Nza vagrant insecure\n")
    (keys / "vagrant.key.rsa.pub").write_text("ssh-rsa AAAAB3Nza vagrant insecure\n\n")
    assert vagrant_public_keys((tmp_path / "none", tmp_path)) == [
        "ssh-ed25519 AAAAC3Nza vagrant insecure",
        "ssh-rsa AAAAB3Nza vagrant insecure",
    ]
    # the box carries no lab key, and two VMs of it share neither DHCP client id nor host keys
    assert "userdel -r ci" in BOXIFY and ": > /etc/machine-id" in BOXIFY
    assert "rm -f /etc/ssh/ssh_host_*" in BOXIFY and "ClientIdentifier=mac" in BOXIFY


def test_a_change_to_the_box_script_builds_a_new_box(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rackops.lab import vagrantbox

    keys = ["ssh-rsa AAAAB3Nza vagrant insecure"]
    before = vagrantbox.box_path(tmp_path, "bookworm", keys)
    # a Vagrant upgrade's new keys: a new box, not the cached one with the old keys
    assert vagrantbox.box_path(tmp_path, "bookworm", [*keys, "ssh-ed25519 AAAAC3 x"]) != before
    monkeypatch.setattr(vagrantbox, "BOXIFY", vagrantbox.BOXIFY + "\n# changed\n")
    after = vagrantbox.box_path(tmp_path, "bookworm", keys)
    assert before != after and after.name.startswith("rackops-bookworm-")


def test_a_second_image_builder_waits_for_the_first_and_builds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI builds the image in the background while the VM tests start: the test's own
    build_image waits for the lock, then finds the image made and builds nothing."""
    import threading

    from rackops.lab import vmimage

    monkeypatch.setattr(vmimage, "needs", lambda: [])
    monkeypatch.setattr(vmimage.os, "geteuid", lambda: 0)

    def must_not_build(*_: object) -> None:
        raise AssertionError("built a second time")

    monkeypatch.setattr(vmimage, "_build", must_not_build)
    image = tmp_path / f"vm-bookworm-{vmimage.image_rev()}.qcow2"
    got: list[Path] = []
    with vmimage.building(image):  # the first builder, still at work
        waiter = threading.Thread(
            target=lambda: got.append(vmimage.build_image(tmp_path, "bookworm", []))
        )
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and not got, "the second builder did not wait"
        image.write_bytes(b"qcow2")  # what the first one made
    waiter.join(10)
    assert got == [image]
