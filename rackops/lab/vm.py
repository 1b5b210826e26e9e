"""VM lab targets (``rackops lab up --engine vm``): a real kernel per node.

The container engines share this machine's one kernel, so what the roles change in a kernel
(the hugepage pools per NUMA node, IRQ affinity, sysctls, the kernel command line and its
reboot, a NIC driver's MTU) is only simulated there. Here every node is a QEMU VM booted
from its own disk (``vmimage.py``; a qcow2 overlay on the cached base), through SeaBIOS and
GRUB, so a role's ``update-grub`` and reboot are real:

* two NUMA nodes, one vCPU and half the memory each (``-numa``), 1 GiB pages possible
  (``pdpe1gb``);
* management NIC ``eth0`` on bridge ``rvl-mgmt`` (``198.19.128.1/24``, its own subnet), SSH
  straight to the VM's address; one multiqueue virtio-net NIC per rail (``eth1``, ``eth2``)
  on bridge ``rvl-r<R>`` (the leaf, MTU 9216), each behind a PCI expander bridge on its
  own NUMA node (rail R on node R), so the kernel reports the NIC's ``numa_node`` and
  ``local_cpulist`` and its MSI-X vectors are real IRQs;
* Soft-RoCE: the kernel's ``rdma_rxe`` on every rail NIC (``rxe<R>``), so ``ibv_devinfo``,
  ``rdma link``, ``ibstat`` and perftest's ``ib_write_bw`` run for real;
* the per-VM script (name, keys, addresses, rxe links, scenario faults) is handed over by
  ``fw_cfg`` and run at every boot before SSH (``rackops-vm-init.service``);
* TCG (pure emulation) by default; ``RACKOPS_LAB_ACCEL=kvm`` where KVM works;
* ``down`` powers every VM off (ACPI, then SIGKILL after a grace), deletes the taps, the
  bridges and the overlays.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

from rackops.lab.engine import LabError
from rackops.lab.model import LabNode, LabState
from rackops.lab.scenario import NodeSpec, Scenario
from rackops.lab.vmimage import run

MGMT = "198.19.128"
PREFIX = "rvl"
BRIDGE_MGMT = f"{PREFIX}-mgmt"
RAILS = 2  # rail R's NIC is ethR+1 on NUMA node R
MEMORY_MB = 10240  # split evenly between the two NUMA nodes. A 1 GiB page needs an aligned,
# whole GiB on its node that early boot left free: the low GiB holds the BIOS areas, the one
# under the PCI hole (3 GiB) is cut by it, the node's top GiBs take the kernel's own early
# allocations (top-down), and the randomized kernel image (KASLR) can land in any other. At 3
# GiB per node, node 0 had one candidate and KASLR took it in one boot of five; at 5 GiB it
# has two. Emulated RAM costs the host only what the guest touches.
CPUS = 2  # one per NUMA node
QUEUES = 2  # virtio-net queue pairs per rail NIC (one MSI-X vector each, plus config)
LINK_SPEED_MBPS = 100_000  # what the virtio NIC reports, and rxe derives its rate from
MAX_NODES = 4
BOOT_TIMEOUT_S = 300  # emulated CPUs on a loaded machine: a boot takes about a minute
# QEMU runs niced: emulated CPUs take every cycle they get, and the container lab's tests,
# sharing the machine in CI, have tighter timeouts than a VM's boot and Ansible runs
NICE = 10
# A boot unit that pins a rail's completion IRQs (all but the first, the config vector), as
# a stale tuning script or a vendor's set_irq_affinity run at boot would: after the role's
# own unit. ($$: systemd substitutes $NAME itself.)
IRQ_PIN_UNIT = """[Unit]
Description=rackops VM lab fault: IRQs of {dev} pinned to CPUs {cpus} at boot
After=rackops-irq-affinity.service rackops-vm-init.service

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'd=/sys/class/net/{dev}/device/..; \\
  for i in $$(ls $$d/msi_irqs | sort -n | tail -n +2); do \\
  echo {cpus} > /proc/irq/$$i/smp_affinity_list; done'

[Install]
WantedBy=multi-user.target
"""


def numa_memory(spec: NodeSpec) -> tuple[int, int]:
    """The memory (MiB) of NUMA nodes 0 and 1: half each, or what a fault gives one."""
    mem = [MEMORY_MB // 2, MEMORY_MB - MEMORY_MB // 2]
    for f in spec.vm:
        if f.kind == "numa_memory" and f.numa_node is not None and f.memory_mb is not None:
            mem[f.numa_node] = f.memory_mb
    return mem[0], mem[1]


def fault_script(spec: NodeSpec) -> str:
    """The init script's lines for a node's VM faults (shell)."""
    lines = []
    for f in spec.vm:
        if f.kind == "irq_pinned" and f.rail is not None and f.cpus is not None:
            unit = f"rackops-fault-irq-{f.rail}.service"
            text = IRQ_PIN_UNIT.format(dev=netdev(f.rail), cpus=f.cpus)
            lines += [
                f"cat > /etc/systemd/system/{unit} <<'EOF'\n{text}EOF",
                f"systemctl enable {unit} >/dev/null 2>&1",
                f"systemctl --no-block start {unit}",
            ]
    return "\n".join(lines)


def accel() -> str:
    value = os.environ.get("RACKOPS_LAB_ACCEL", "tcg")
    if value not in ("tcg", "kvm"):
        raise LabError(f"RACKOPS_LAB_ACCEL={value!r}: tcg or kvm")
    return value


def netdev(rail: int) -> str:
    return f"eth{rail + 1}"


def rxe(rail: int) -> str:
    return f"rxe{rail}"


def taps(node: LabNode) -> list[tuple[str, str, int | None]]:
    """(tap name, bridge, rail or None for management), within the 15-character limit."""
    out: list[tuple[str, str, int | None]] = [(f"{PREFIX}{node.index}m", BRIDGE_MGMT, None)]
    out += [(f"{PREFIX}{node.index}r{r}", f"{PREFIX}-r{r}", r) for r in range(RAILS)]
    return out


def init_script(node: LabNode, nodes: list[LabNode], pubkey: str, faults: str = "") -> str:
    """What the VM runs at every boot before SSH: its name, the lab key, its addresses,
    Soft-RoCE on its rails; then the scenario's faults (``faults``, shell)."""
    hosts = "\\n".join(["127.0.0.1 localhost"] + [f"{n.mgmt_ip} {n.name}" for n in nodes])
    lines = [
        "#!/bin/sh",
        "set -e",
        f"hostname {node.name}",
        f"echo {node.name} > /etc/hostname",
        f"printf '{hosts}\\n' > /etc/hosts",
        "install -d -m 700 -o ci -g ci /home/ci/.ssh",
        f"echo {shlex.quote(pubkey.strip())} > /home/ci/.ssh/authorized_keys",
        "chown ci:ci /home/ci/.ssh/authorized_keys && chmod 600 /home/ci/.ssh/authorized_keys",
        "ip link set lo up",
        # the kernel numbers NICs in PCI probe order, which the expander bridges change:
        # name each by its MAC, as the inventory has it (eth0 management, ethR+1 rail R)
        f"for want in {' '.join(f'{dev}={m}' for dev, m in nic_names(node))}; do",
        "  cur=$(ip -br link | awk -v m=\"${want#*=}\" '$3 == m {print $1}')",
        '  [ "$cur" = "${want%%=*}" ] && continue',
        '  ip link set "$cur" down && ip link set "$cur" name "tmp-${want%%=*}"',
        "done",
        "for t in $(ip -br link | awk '$1 ~ /^tmp-/ {print $1}'); do",
        '  ip link set "$t" name "${t#tmp-}"',
        "done",
        "ip link set eth0 up",
        f"ip addr replace {node.mgmt_ip}/24 dev eth0",
        "modprobe rdma_rxe",
    ]
    for r, address in sorted(node.rails.items()):
        dev = netdev(r)
        lines += [
            f"ip link set {dev} up",
            f"ip addr replace {address}/24 dev {dev}",
            f"rdma link show {rxe(r)}/1 >/dev/null 2>&1 || "
            f"rdma link add {rxe(r)} type rxe netdev {dev}",
        ]
    if faults:
        lines += ["# scenario faults", faults]
    lines.append("echo rackops-vm-ready > /dev/ttyS0")
    return "\n".join(lines) + "\n"


def mac(node: LabNode, rail: int | None) -> str:
    return f"52:54:00:72:{node.index:02x}:{0 if rail is None else rail + 1:02x}"


def nic_names(node: LabNode) -> list[tuple[str, str]]:
    """(name in the VM, MAC) of each NIC."""
    return [("eth0", mac(node, None))] + [(netdev(r), mac(node, r)) for r in range(RAILS)]


def qemu_args(
    node: LabNode,
    disk: Path,
    script: Path,
    log: Path,
    pidfile: Path,
    memory: tuple[int, int] = (MEMORY_MB // 2, MEMORY_MB - MEMORY_MB // 2),
) -> list[str]:
    args = [
        "qemu-system-x86_64",
        "-name",
        node.name,
        "-machine",
        f"pc,accel={accel()}",
        "-cpu",
        "qemu64,+pdpe1gb" if accel() == "tcg" else "host",
        "-smp",
        f"{CPUS},sockets={CPUS},cores=1,threads=1",
        "-m",
        str(sum(memory)),
        "-object",
        f"memory-backend-ram,id=mem0,size={memory[0]}M",
        "-object",
        f"memory-backend-ram,id=mem1,size={memory[1]}M",
        "-numa",
        "node,nodeid=0,cpus=0,memdev=mem0",
        "-numa",
        "node,nodeid=1,cpus=1,memdev=mem1",
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-serial",
        f"file:{log}",
        "-pidfile",
        str(pidfile),
        "-daemonize",
        "-drive",
        f"file={disk},format=qcow2,if=none,id=disk,cache=unsafe",
        "-device",
        "virtio-blk-pci,drive=disk,bus=pci.0",
        "-fw_cfg",
        f"name=opt/rackops/init,file={script}",
    ]
    # the kernel probes the expander bridges' NICs last-defined first: the rails are defined
    # in reverse, so the kernel's own names are already ethR+1 and the boot script renames
    # nothing (a rename behind udev's back fails the ifup@ unit bound to the old name)
    mgmt, *rails = taps(node)
    for tap, _, rail in [mgmt, *reversed(rails)]:
        address = mac(node, rail)
        if rail is None:
            args += [
                "-netdev",
                f"tap,id=mgmt,ifname={tap},script=no,downscript=no",
                "-device",
                f"virtio-net-pci,netdev=mgmt,mac={address},bus=pci.0",
            ]
            continue
        args += [
            "-device",
            f"pxb,id=pxb{rail},bus=pci.0,bus_nr={32 * (rail + 1)},numa_node={rail}",
            "-device",  # a pxb takes bridges only
            f"pci-bridge,id=bridge{rail},bus=pxb{rail},chassis_nr={rail + 1},addr=1",
            "-netdev",
            f"tap,id=rail{rail},ifname={tap},script=no,downscript=no,queues={QUEUES}",
            "-device",
            f"virtio-net-pci,netdev=rail{rail},mac={address},bus=bridge{rail},addr=1,mq=on,"
            f"vectors={2 * QUEUES + 2},speed={LINK_SPEED_MBPS},duplex=full",
        ]
    return args


def _ip(*args: str, check: bool = True) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise LabError(f"ip {' '.join(args)} failed: {proc.stderr.strip()}")


def network_up(nodes: list[LabNode], switch_mtu: int) -> None:
    """The bridges (management with this machine's address on it, a leaf per rail) and one
    tap per NIC, multiqueue for the rails."""
    for br in [BRIDGE_MGMT] + [f"{PREFIX}-r{r}" for r in range(RAILS)]:
        if not Path(f"/sys/class/net/{br}").exists():
            _ip("link", "add", br, "type", "bridge")
        _ip("link", "set", br, "up")
    _ip("addr", "replace", f"{MGMT}.1/24", "dev", BRIDGE_MGMT)
    for node in nodes:
        if not node.started:
            continue
        for tap, bridge, rail in taps(node):
            if not Path(f"/sys/class/net/{tap}").exists():
                extra = ["multi_queue"] if rail is not None else []
                _ip("tuntap", "add", "dev", tap, "mode", "tap", *extra)
            mtu = 1500 if rail is None else switch_mtu
            _ip("link", "set", tap, "mtu", str(mtu), "master", bridge, "up")
    for r in range(RAILS):
        _ip("link", "set", f"{PREFIX}-r{r}", "mtu", str(switch_mtu))


def start(state: LabState, base: Path, pubkey: str, spec: Scenario, mtu: int) -> None:
    """Boot every started node's VM (daemonized QEMU, its PID saved for ``down``)."""
    vmdir = state.workdir / "vm"
    vmdir.mkdir(exist_ok=True)
    network_up(state.nodes, mtu)
    for node in state.nodes:
        if not node.started:
            continue
        disk = vmdir / f"{node.name}.qcow2"
        disk.unlink(missing_ok=True)
        run(
            ["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(base), "-F", "qcow2", str(disk)],
            what=f"{node.name}: qemu-img create",
        )
        script = vmdir / f"{node.name}.init"
        nspec = spec.nodes.get(node.name, NodeSpec())
        script.write_text(init_script(node, state.nodes, pubkey, fault_script(nspec)))
        log, pidfile = vmdir / f"{node.name}.log", vmdir / f"{node.name}.pid"
        pidfile.unlink(missing_ok=True)
        args = [
            "nice",
            "-n",
            str(NICE),
            *qemu_args(node, disk, script, log, pidfile, numa_memory(nspec)),
        ]
        run(args, timeout=60, what=f"{node.name}: qemu")
        node.container = pidfile.read_text().strip()
        state.save()  # `down` can find it from here on


def alive(pid: str) -> bool:
    if not pid.isdigit():
        return False
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"qemu-system" in cmd


def _qemu_pids() -> list[int]:
    """Every QEMU of a VM lab on this machine (its taps are named ``rvl…``)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if cmd.startswith(b"qemu-system") and f"ifname={PREFIX}".encode() in cmd:
            found.append(int(proc.name))
    return found


def down(state: LabState | None) -> list[str]:
    """Stop every VM of this VM lab (SIGTERM: QEMU exits at once; the overlays are thrown
    away), then remove the taps and bridges. Nothing without a VM lab's state."""
    if state is None or state.engine != "vm":
        return []
    removed = []
    pids = set(_qemu_pids()) | {int(n.container) for n in state.nodes if alive(n.container)}
    for pid in sorted(pids):
        try:
            os.kill(pid, signal.SIGTERM)
            removed.append(f"vm {pid}")
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{p}").exists() and alive(str(p)) for p in pids):
        if time.monotonic() > deadline:
            for p in pids:
                _kill(p)
            break
        time.sleep(0.1)
    for dev in sorted(links()):
        _ip("link", "del", dev, check=False)
        removed.append(dev)
    for disk in (state.workdir / "vm").glob("*.qcow2"):
        disk.unlink(missing_ok=True)
    return removed


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def links() -> list[str]:
    """The VM lab's bridges and taps on this machine."""
    return [d.name for d in Path("/sys/class/net").iterdir() if d.name.startswith(PREFIX)]
