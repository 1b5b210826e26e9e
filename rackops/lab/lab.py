"""``rackops lab up|down|status``: a rack of real SSH targets in containers.

Targets are Debian root filesystems (debootstrap, cached) run unprivileged by podman,
each on a management network plus one network per rail, reachable over real SSH on
loopback ports. hwsim stands in for the GPUs and HCAs; a local apt repository stands in
for the vendor repositories. ``down`` leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from rackops.inventory.model import Versions
from rackops.lab import lldp, nspawn, spines, vm, vmimage
from rackops.lab import slurm as lab_slurm
from rackops.lab import switches as lab_switches
from rackops.lab.engine import LABEL, Engine, LabError, wait_ssh
from rackops.lab.hoststate import restore, snapshot
from rackops.lab.inventory import LAB_FABRIC, MAX_PER_RACK, RAILS, netdev, write_inventory
from rackops.lab.model import DOMAIN_TRAYS, MGMT_NET, RAIL_NET, LabNode, LabState, lab_workdir
from rackops.lab.repo import APT_SOURCE, build_repo
from rackops.lab.scenario import Scenario, load_scenario
from rackops.lab.targets import NspawnTargets, PodmanTargets, targets_of
from rackops.lab.wiring import Wiring, as_json, wiring

PREFIX = "rackops-lab"
SWITCH_MTU = 9216  # the design's switch MTU in the lab inventory (rackops_fabric.mtu.switch)
DEFAULT_VERSIONS = Versions(
    ofed="25.07-0.9.7", driver="580.95.05", fabric_manager="580.95.05", dcgm="4.4.1"
)
PACKAGES = (
    "openssh-server",
    "python3",
    "python3-apt",
    "python3-debian",
    "sudo",
    "iproute2",
    "kmod",
    "procps",
    "ca-certificates",
    "openmpi-bin",
    "iputils-ping",
    "systemd-sysv",
    "dbus",
    "lldpd",  # the targets' own LLDP agent: lldpctl shows the leaf port each cable is in
    # a real Slurm in the lab (`lab up --slurm`): units disabled unless asked for
    "slurmd",
    "slurm-client",
    "munge",
)
LAB_INIT = """#!/bin/sh
# rackops lab: put the lab's SSH keys in place for the ci user, then run sshd.
set -e
install -d -m 700 -o ci -g ci /home/ci/.ssh
install -m 600 -o ci -g ci /lab/ssh/authorized_keys /home/ci/.ssh/authorized_keys
install -m 600 -o ci -g ci /lab/ssh/id_ed25519 /home/ci/.ssh/id_ed25519
printf 'Host *\\n  StrictHostKeyChecking no\\n' > /home/ci/.ssh/config
printf '  UserKnownHostsFile /dev/null\\n  LogLevel ERROR\\n' >> /home/ci/.ssh/config
chown ci:ci /home/ci/.ssh/config && chmod 600 /home/ci/.ssh/config
[ "$1" = "--keys-only" ] && exit 0
mkdir -p /run/sshd /run/lldpd
/usr/sbin/lldpd || echo "lab-init: lldpd did not start" >&2
exec /usr/sbin/sshd -D -e
"""
INIT_UNIT = """[Unit]
Description=rackops lab: SSH keys for the ci user
Before=ssh.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/lab-init --keys-only

[Install]
WantedBy=multi-user.target
"""


def image_rev() -> str:
    """What the image is made of, as a short hash: a change of packages or of lab-init
    builds a new image instead of reusing a cached one without them."""
    parts = ["\n".join(PACKAGES), LAB_INIT, INIT_UNIT, APT_SOURCE, nspawn.PREPARE]
    return hashlib.sha256("".join(parts).encode()).hexdigest()[:8]


def _cache_dir(workdir: Path) -> Path:
    return Path(os.environ.get("RACKOPS_LAB_CACHE") or workdir / "cache")


def build_rootfs(cache: Path, suite: str, log: list[str]) -> Path:
    """debootstrap a minbase root filesystem once, kept as a tarball in the cache."""
    tarball = cache / f"rootfs-{suite}-{image_rev()}.tar"
    if tarball.exists():
        return tarball
    if os.geteuid() != 0:
        raise LabError("building the lab image runs debootstrap, which needs root")
    if shutil.which("debootstrap") is None:
        raise LabError("debootstrap not found: apt-get install debootstrap")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        root = Path(tmp) / "rootfs"
        mirror = os.environ.get("RACKOPS_LAB_MIRROR", "http://deb.debian.org/debian")
        log.append(f"debootstrap {suite} (once; cached in {tarball})")
        proc = subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(PACKAGES)}",
                suite,
                str(root),
                mirror,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            raise LabError(f"debootstrap {suite} failed: {' | '.join(tail)}")
        partial = tarball.with_suffix(".part")
        with tarfile.open(partial, "w") as tar:
            for entry in sorted(root.iterdir()):
                tar.add(entry, arcname=entry.name)
        partial.rename(tarball)
    return tarball


def ensure_image(engine: Engine, workdir: Path, suite: str, systemd: bool, log: list[str]) -> str:
    base = f"localhost/{PREFIX}-base:{suite}-{image_rev()}"
    target = f"localhost/{PREFIX}-{'systemd' if systemd else 'target'}:{suite}-{image_rev()}"
    if engine.image_exists(target):
        return target
    if not engine.image_exists(base):
        tarball = build_rootfs(_cache_dir(workdir), suite, log)
        log.append(f"import {tarball.name} as {base}")
        engine.import_rootfs(tarball, base)
    ctx = workdir / "image"
    ctx.mkdir(parents=True, exist_ok=True)
    (ctx / "lab-init").write_text(LAB_INIT)
    (ctx / "rackops-lab-init.service").write_text(INIT_UNIT)
    common = (
        f"FROM {base}\n"
        "COPY lab-init /usr/local/sbin/lab-init\n"
        "COPY rackops-lab-init.service /etc/systemd/system/rackops-lab-init.service\n"
        "RUN useradd -m -s /bin/bash ci && echo 'ci ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/ci"
        " && chmod 440 /etc/sudoers.d/ci && chmod 755 /usr/local/sbin/lab-init"
        " && rm -f /etc/ssh/ssh_host_* && ssh-keygen -A"
        " && rm -f /etc/apt/sources.list && rm -rf /etc/apt/sources.list.d/*"
        f" && echo '{APT_SOURCE}'"
        " > /etc/apt/sources.list.d/rackops-lab.list\n"
    )
    if systemd:
        common += (
            "RUN systemctl enable rackops-lab-init.service ssh.service lldpd.service"
            " && systemctl mask getty.target systemd-logind.service systemd-udevd.service"
            " systemd-remount-fs.service console-getty.service\n"
            'STOPSIGNAL SIGRTMIN+3\nCMD ["/sbin/init"]\n'
        )
    else:
        common += 'CMD ["/usr/local/sbin/lab-init"]\n'
    (ctx / "Containerfile").write_text(common)
    log.append(f"build {target}")
    engine.run(["build", "-t", target, "-f", str(ctx / "Containerfile"), str(ctx)], timeout=900)
    return target


def _keys(workdir: Path) -> Path:
    ssh = workdir / "ssh"
    key = ssh / "id_ed25519"
    if not key.exists():
        ssh.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rackops-lab", "-f", str(key)],
            check=True,
        )
    shutil.copy(key.with_suffix(".pub"), ssh / "authorized_keys")
    return key


def _refuse_domain(domain: str | None, nodes: int, racks: int) -> None:
    """A lab NVLink domain is one rack of 2 to 18 trays (18: a whole NVL72)."""
    if domain and not (2 <= nodes <= DOMAIN_TRAYS and racks == 1):
        raise LabError(
            f"hardware.nvlink_domain: a lab NVLink domain is one rack of 2 to {DOMAIN_TRAYS} "
            f"trays ({DOMAIN_TRAYS}: a whole NVL72); --nodes {nodes} --racks {racks} is not"
        )


def up(
    *,
    nodes: int = 4,
    scenario: str | None = None,
    engine_name: str = "podman",
    workdir: str | None = None,
    inventory: str = "inventories/lab",
    suite: str = "bookworm",
    systemd: bool = False,
    slurm: bool = False,
    slurm_health_interval: int = 0,
    port_base: int = 2300,
    versions: Versions = DEFAULT_VERSIONS,
    log: list[str] | None = None,
    racks: int = 1,
) -> LabState:
    log = log if log is not None else []
    _refuse_options(nodes, engine_name, systemd, slurm)
    _refuse_racks(nodes, racks, engine_name)
    nspawn_engine = engine_name == "nspawn"
    wd = lab_workdir(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    if LabState.load(wd) is not None:
        raise LabError(f"a lab is already up in {wd}; run `rackops lab down` first")
    spec = load_scenario(scenario)
    spec.refuse_engine(engine_name)
    _refuse_domain(spec.nvlink_domain, nodes, racks)
    names = [f"node{i:02d}" for i in range(1, nodes + 1)]
    unknown = sorted(set(spec.nodes) - set(names))
    if unknown:
        raise LabError(
            f"scenario names {', '.join(unknown)}, but the lab has {names[0]}.."
            f"{names[-1]}; raise --nodes or fix the scenario"
        )
    if engine_name == "vm":
        return _up_vm(wd, spec, names, Path(inventory).resolve(), suite, versions, log)
    engine = Engine("podman" if nspawn_engine else engine_name, wd)
    if nspawn_engine:
        _refuse_subnet_in_use(f"{nspawn.MGMT}.0/24")
        image = str(
            nspawn.prepare_base(
                build_rootfs(_cache_dir(wd), suite, log), wd, suite, LAB_INIT, INIT_UNIT
            )
        )
        systemd = True
    else:
        _refuse_another_lab(spec.gpus)
        engine.configure()
        if engine_name == "podman":  # before any podman networking, including image builds
            snapshot(wd / "host-before.json")
        image = ensure_image(engine, wd, suite, systemd, log)
    key = _keys(wd)
    build_repo(wd / "repo", versions)
    n_rails = _rails(spec, racks)
    rails = {
        n: {r: f"{RAIL_NET}.{r}.{10 + i}" for r in range(n_rails)} for i, n in enumerate(names, 1)
    }
    try:
        wires = wiring(spec, names, n_rails, racks)
    except ValueError as exc:
        raise LabError(f"scenario: {exc}") from exc
    hw = spec.for_hwsim(names, rails)
    hw["fabric"]["isls"] = lab_switches.isls(racks, spec.ib)  # the leaf-spine links as designed
    (wd / "scenario.json").write_text(json.dumps({**hw, "wiring": as_json(wires)}, indent=1))
    (wd / "fabric").mkdir(exist_ok=True)  # switches.json, once the lab is wired
    nets = _network_names(n_rails)
    state = LabState(
        lab=PREFIX,
        engine=engine_name,
        workdir=wd,
        image=image,
        systemd=systemd,
        inventory=Path(inventory).resolve(),
        key=key,
        networks=nets,
        versions=versions.model_dump(exclude_none=True),
        slurm=slurm,
        racks=racks,
        ib=spec.ib,
        rails=n_rails,
        nvlink_domain=spec.nvlink_domain,
    )
    state.save()  # from here on, `down` can clean up whatever exists
    try:
        if nspawn_engine:
            _start_nspawn(state, spec, names, rails, log, slurm_health_interval)
        else:
            _start(engine, state, spec, names, rails, nets, port_base, log)
        _fabric_up(engine, state, wires, log)
    except BaseException:
        _undo_start(wd, log)
        raise
    write_inventory(state, state.inventory)
    log.append(f"inventory: {state.inventory}")
    if slurm:
        _slurm_up(state, log)
    return state


def _up_vm(
    wd: Path,
    spec: Scenario,
    names: list[str],
    inventory: Path,
    suite: str,
    versions: Versions,
    log: list[str],
) -> LabState:
    """``--engine vm``: QEMU VMs on the image's own kernel (lab/vm.py), Soft-RoCE rails."""
    _refuse_subnet_in_use(f"{vm.MGMT}.0/24")
    base = vmimage.build_image(_cache_dir(wd), suite, log, vm.accel())
    key = _keys(wd)
    state = LabState(
        lab=PREFIX,
        engine="vm",
        workdir=wd,
        image=str(base),
        systemd=True,
        inventory=inventory,
        key=key,
        networks=[],
        versions=versions.model_dump(exclude_none=True),
        rails=vm.RAILS,
    )
    for i, name in enumerate(names, 1):
        ip = f"{vm.MGMT}.{10 + i}"
        rails = {r: f"{RAIL_NET}.{r}.{10 + i}" for r in range(vm.RAILS)}
        started = name not in spec.nodes or not spec.nodes[name].unreachable
        state.nodes.append(LabNode(name, i, "", 22, ip, rails, started=started, ssh_host=ip))
        if not started:
            log.append(f"{name}: not started (scenario: unreachable)")
    state.save()  # from here on, `down` can clean up whatever exists
    try:
        began = time.monotonic()
        vm.start(state, base, key.with_suffix(".pub").read_text(), spec, SWITCH_MTU)
        deadline = time.monotonic() + vm.BOOT_TIMEOUT_S
        for node in state.nodes:
            if node.started and not wait_ssh(22, deadline, node.ssh_host):
                raise LabError(
                    f"{node.name}: no SSH banner on {node.ssh_host}:22 within "
                    f"{vm.BOOT_TIMEOUT_S} s; see {wd / 'vm' / (node.name + '.log')}"
                )
        log.append(
            f"{sum(n.started for n in state.nodes)} VMs ({vm.accel()}) answering SSH in "
            f"{time.monotonic() - began:.0f} s"
        )
    except BaseException:
        _undo_start(wd, log)
        raise
    write_inventory(state, state.inventory)
    log.append(f"inventory: {state.inventory}")
    return state


def _undo_start(wd: Path, log: list[str]) -> None:
    """A half-started lab is taken down again: nothing of it, and no state, is left behind."""
    try:
        down(workdir=str(wd))
    except LabError as exc:
        log.append(f"cleaning up the failed start: {exc}")


def _fabric_up(engine: Engine, state: LabState, wires: Wiring, log: list[str]) -> None:
    """The cables as really wired, the spine tier (racks), LLDP on the leaves, the switches
    as SSH targets (racks)."""
    ends = _rail_ends(engine, state)
    if state.racks > 1:
        bridges = spines.up(ends, wires, state.racks, state.rails, SWITCH_MTU)
        log.append(f"spine tier: {state.racks} racks, one spine per rail, one uplink per leaf")
    else:
        bridges = spines.leaf_bridges(ends, wires)
    _wire(ends, wires, bridges)
    leaves = lldp.start(state.workdir, ends, wires)
    log.append(f"LLDP: {len(leaves)} leaf switches (lldpd) on the rail bridges")
    prio = int(LAB_FABRIC["roce"]["priority"])
    if state.ib:  # Quantum switches: read in-band by the sweep, not over SSH
        conf = lab_switches.write_ports(state, ends, wires, prio)
        log.append(f"InfiniBand: {len(conf)} switches for the ibdiagnet sweep")
    elif state.racks > 1:
        state.switch_ssh = lab_switches.start(engine, state, ends, wires, prio)
        state.save()
        log.append(f"{len(state.switch_ssh)} switches answer their NOS commands over SSH")


def _refuse_racks(nodes: int, racks: int, engine_name: str) -> None:
    if racks == 1:
        return
    if not 2 <= racks <= 4:
        raise LabError(f"--racks {racks}: a lab has 1 to 4 racks")
    if engine_name != "podman":
        raise LabError(f"--racks {racks}: the spine tier is built on podman's rail networks")
    per = -(-nodes // racks)
    if nodes < 2 * racks or per > MAX_PER_RACK:
        raise LabError(
            f"--racks {racks} with --nodes {nodes}: each rack needs 2 to {MAX_PER_RACK} nodes "
            f"(a lab leaf has one uplink, so its oversubscription is its host count)"
        )


def _refuse_options(nodes: int, engine_name: str, systemd: bool, slurm: bool) -> None:
    """Options that cannot make a lab, refused before anything is started."""
    if not 1 <= nodes <= 200:
        raise LabError(f"--nodes {nodes}: a lab has 1 to 200 nodes")
    if systemd and engine_name not in ("podman", "nspawn"):
        raise LabError("--systemd needs podman (systemd as PID 1 via podman --systemd)")
    if slurm and engine_name != "nspawn":
        raise LabError("--slurm needs --engine nspawn (slurmd and munge run under systemd)")
    if slurm and (why := lab_slurm.python_matches()):
        raise LabError(f"--slurm: node-check runs on the targets' CPython 3.11, but {why}")
    if engine_name == "vm" and not 1 <= nodes <= vm.MAX_NODES:
        raise LabError(
            f"--nodes {nodes}: a VM lab has 1 to {vm.MAX_NODES} VMs "
            f"({vm.MEMORY_MB // 1024} GiB each, emulated CPUs)"
        )
    if engine_name == "vm" and (systemd or slurm):
        raise LabError("--systemd and --slurm are container-lab options: a VM runs systemd anyway")
    if engine_name == "nspawn" and shutil.which("systemd-nspawn") is None:
        raise LabError("--engine nspawn needs systemd-nspawn: apt-get install systemd-container")


def _slurm_up(state: LabState, log: list[str]) -> None:
    """The lab's Slurm knows the inventory's nodes and has heard from every started one;
    a lab whose Slurm does not come up is taken down again."""
    wd = state.workdir
    try:
        lab_slurm.sync_inventory(state)
        lab_slurm.wait_nodes(wd, [n.name for n in state.nodes if n.started])
    except BaseException:
        down(workdir=str(wd))
        raise
    log.append(
        f"Slurm: partition {lab_slurm.PARTITION} up; "
        f"export SLURM_CONF={lab_slurm.conf_path(wd)} (or ssh into a node) to use sinfo"
    )


def _start_nspawn(
    state: LabState,
    spec: Scenario,
    names: list[str],
    rails: dict[str, dict[int, str]],
    log: list[str],
    slurm_health_interval: int = 0,
) -> None:
    state.networks = []
    for i, name in enumerate(names, 1):
        ip = f"{nspawn.MGMT}.{10 + i}"
        node = LabNode(
            name,
            i,
            "",
            22,
            ip,
            rails[name],
            started=name not in spec.nodes or not spec.nodes[name].unreachable,
            ssh_host=ip,
        )
        state.nodes.append(node)
        if not node.started:
            log.append(f"{name}: not started (scenario: unreachable)")
    state.save()
    started = time.monotonic()
    binds: list[str] = []
    if state.slurm:
        lab_slurm.prepare(state, slurm_health_interval)
        binds = lab_slurm.bind_args(state.workdir)
    nspawn.start(state, Path(state.image), state.rails, _leaf_port_mtus(spec), SWITCH_MTU, binds)
    deadline = time.monotonic() + 60
    for node in state.nodes:
        if node.started and not wait_ssh(node.ssh_port, deadline, node.ssh_host):
            raise LabError(
                f"{node.name}: no SSH banner on {node.ssh_host}:22 within 60 s; see"
                f" {state.workdir / 'nspawn-logs' / (node.name + '.log')}"
            )
    log.append(
        f"{sum(n.started for n in state.nodes)} nspawn targets answering SSH in "
        f"{time.monotonic() - started:.1f} s"
    )
    if state.slurm:
        lab_slurm.start_controller(state.workdir)
        deadline = time.monotonic() + 30
        for node in state.nodes:
            if node.started:
                lab_slurm.start_node(nspawn.leader(int(node.container), deadline))
        log.append(f"Slurm: slurmctld and munged here, slurmd in {len(state.nodes)} targets")


def _network_names(rails: int = RAILS) -> list[str]:
    """Fresh names each `lab up`: podman's IP allocations outlive a network whose containers
    died with the machine, and a new network of the old name inherits them ("requested ip
    address ... is already allocated")."""
    token = os.urandom(3).hex()
    return [f"{PREFIX}-{token}-mgmt"] + [f"{PREFIX}-{token}-rail{r}" for r in range(rails)]


def _rails(spec: Scenario, racks: int) -> int:
    """Rails per node: GPU n beside HCA n on rail n, so a 4-GPU node has 4 rails (one rack
    of RoCE: the 4-GPU profiles are)."""
    n_rails = spec.gpus
    if n_rails != RAILS and (racks > 1 or spec.ib):
        raise LabError(
            f"a {n_rails}-GPU lab node is on one rack of RoCE (profile lab-4gpu-roce400): "
            f"drop --racks {racks}" + (" and hardware.link_layer" if spec.ib else "")
        )
    return n_rails


def _refuse_another_lab(rails: int) -> None:
    """Another container lab on this machine (another checkout's, or one killed and left
    behind) is refused before anything of this one exists: its failed start has nothing to
    undo, so it never takes the other lab's networks down with it."""
    for subnet in _subnets(rails):
        _refuse_subnet_in_use(subnet)


def _subnets(rails: int) -> list[str]:
    """The container lab's networks: management, then one per rail."""
    return [f"{MGMT_NET}.0/24"] + [f"{RAIL_NET}.{r}.0/24" for r in range(rails)]


def _refuse_subnet_in_use(subnet: str) -> None:
    """Refuse a lab subnet (a.b.c.0/24) that an interface of this machine already has an
    address in: another lab is up, from this checkout or another one."""
    proc = subprocess.run(
        ["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=False
    )
    prefix = subnet.rsplit(".", 1)[0] + "."
    for line in proc.stdout.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[3].startswith(prefix):
            dev = fields[1]
            ports = Path("/sys/class/net", dev, "brif")
            if ports.is_dir() and not any(ports.iterdir()):
                raise LabError(
                    f"the lab network {subnet} is already in use on this machine ({dev}), by a"
                    " bridge with nothing attached: left over from a lab that was killed."
                    f" `rackops lab down` in its checkout, or `ip link delete {dev}` if that"
                    " checkout is gone"
                )
            raise LabError(
                f"the lab network {subnet} is already in use on this machine ({dev}):"
                " another lab is up (`rackops lab down` in its checkout)"
            )


def _start(
    engine: Engine,
    state: LabState,
    spec: Scenario,
    names: list[str],
    rails: dict[str, dict[int, str]],
    nets: list[str],
    port_base: int,
    log: list[str],
) -> None:
    wd = state.workdir
    engine_name = state.engine
    subnets = _subnets(state.rails)
    existing = set(engine.networks(PREFIX))
    for net, subnet in zip(nets, subnets, strict=True):
        if net not in existing:  # its subnet was found free before anything was made (up)
            # Rails carry lab traffic only: internal networks need no NAT rules (faster).
            # No DNS: names come from --add-host, and no aardvark-dns daemon to clean up.
            internal = ["--internal"] if "rail" in net else []
            engine.run(["network", "create", "--disable-dns", *internal, "--subnet", subnet, net])
    hosts = [f"--add-host={n}:{MGMT_NET}.{10 + i}" for i, n in enumerate(names, 1)]
    started = time.monotonic()
    runs = []
    for i, name in enumerate(names, 1):
        node = LabNode(
            name,
            i,
            f"{PREFIX}-{name}",
            port_base + i,
            f"{MGMT_NET}.{10 + i}",
            rails[name],
            started=name not in spec.nodes or not spec.nodes[name].unreachable,
        )
        state.nodes.append(node)
        if not node.started:
            log.append(f"{name}: not started (scenario: unreachable)")
            continue
        args = [
            "run",
            "-d",
            "--name",
            node.container,
            "--hostname",
            name,
            "--label",
            f"{LABEL}={PREFIX}",
            "-p",
            f"127.0.0.1:{node.ssh_port}:22",
            "--network",
            f"{nets[0]}:ip={node.mgmt_ip},interface_name=eth0",
            *[
                f"--network={nets[r + 1]}:ip={ip},interface_name={netdev(r)}"
                for r, ip in node.rails.items()
            ],
            *[h for h in hosts if not h.startswith(f"--add-host={name}:")],
            "--cap-add",
            "NET_ADMIN",
            "--cap-add",
            "NET_RAW",  # lldpd's raw sockets
            "-v",
            f"{wd / 'ssh'}:/lab/ssh:ro",
            "-v",
            f"{wd / 'scenario.json'}:/etc/rackops-hwsim/scenario.json:ro",
            "-v",
            f"{wd / 'repo'}:/srv/rackops-repo:ro",
            # the switches' ports (hwsim/ibdiag.py): which interface plays each, and this
            # machine's virtual interfaces' counters (sysfs, read-only)
            "-v",
            f"{wd / 'fabric'}:/etc/rackops-nos:ro",
            *(["-v", "/sys/devices/virtual/net:/run/rackops-fabric/net:ro"] if state.ib else []),
        ]
        if state.systemd:
            args += ["--systemd=always"]
        runs.append([*args, state.image])
    state.save()
    for run in runs:  # sequential: netavark serialises on its lock anyway
        engine.run(run)
    _switch_mtu(engine, state, spec)
    deadline = time.monotonic() + 60
    for node in state.nodes:
        if node.started and not wait_ssh(node.ssh_port, deadline):
            raise LabError(
                f"{node.name}: no SSH banner on 127.0.0.1:{node.ssh_port} within 60 s;"
                f" see `{engine_name} logs {node.container}`"
            )
    log.append(
        f"{sum(n.started for n in state.nodes)} targets answering SSH in "
        f"{time.monotonic() - started:.1f} s"
    )


def _leaf_port_mtus(spec: Scenario) -> dict[str, dict[int, int]]:
    """node -> rail -> MTU of its leaf port, for the ports a ``switch_mtu`` fault lowers."""
    return _lowered(
        {
            name: [f.model_dump(exclude_none=True) for f in node.faults]
            for name, node in spec.nodes.items()
        }
    )


def _lowered(faults: dict[str, list[dict[str, object]]]) -> dict[str, dict[int, int]]:
    """node -> rail -> MTU, from faults as scenario.json holds them (mlx5_<rail>)."""
    out: dict[str, dict[int, int]] = {}
    for name, fs in faults.items():
        for f in fs:
            if f.get("kind") == "switch_mtu" and f.get("hca"):
                rail = int(str(f["hca"]).split("_")[1])
                out.setdefault(name, {})[rail] = int(str(f.get("mtu") or SWITCH_MTU))
    return out


def _rail_ends(engine: Engine, state: LabState) -> dict[tuple[str, int], str]:
    """(node, rail) -> the host end of that target's rail link (a leaf bridge's port)."""
    if state.engine == "nspawn":
        return {
            (n.name, r): host
            for n in state.nodes
            if n.started
            for host, _, r in nspawn.host_ends(n, state.rails)
            if r is not None
        }
    return _podman_host_ends(engine, state)


def apply_leaf_mtus(*, workdir: str | None = None) -> dict[tuple[str, int], int]:
    """Set every leaf port's MTU again from the up lab's scenario.json as it is now, so a
    ``switch_mtu`` fault written into it on a running lab takes effect, and one cleared
    from it is undone (the other faults take effect at the next tool run by themselves).
    What each (node, rail) port now runs at."""
    wd = lab_workdir(workdir)
    state = LabState.load(wd)
    if state is None:
        raise LabError(f"no lab is up in {wd}: nothing to apply")
    try:
        nodes = json.loads((wd / "scenario.json").read_text())["nodes"]
        lowered = _lowered({n: list(spec.get("faults") or []) for n, spec in nodes.items()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise LabError(f"{wd / 'scenario.json'}: unreadable ({exc}); run `lab up` again") from exc
    engine = Engine("podman" if state.engine == "nspawn" else state.engine, wd)
    if state.engine != "nspawn":
        engine.configure()  # the lab's own storage and settings, as `lab up` set them
    return _set_leaf_mtus(_rail_ends(engine, state), lowered)


def _set_mtu(dev: str, mtu: int) -> None:
    proc = subprocess.run(
        ["ip", "link", "set", "dev", dev, "mtu", str(mtu)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise LabError(f"ip link set dev {dev} mtu {mtu} failed: {proc.stderr.strip()}")


def _podman_host_ends(engine: Engine, state: LabState) -> dict[tuple[str, int], str]:
    """(node, rail) -> the host end of that target's rail veth (a port of the rail bridge)."""
    index = {}
    for dev in Path("/sys/class/net").iterdir():
        try:
            index[(dev / "ifindex").read_text().strip()] = dev.name
        except OSError:
            continue
    ends = {}
    for node in state.nodes:
        if not node.started:
            continue
        peers = engine.run(
            [
                "exec",
                node.container,
                "sh",
                "-c",
                "for d in /sys/class/net/*; do echo ${d##*/} $(cat $d/iflink); done",
            ]
        ).stdout
        links = dict(line.split() for line in peers.splitlines() if len(line.split()) == 2)
        for r in node.rails:
            host_end = index.get(links.get(netdev(r), ""))
            if host_end is None:
                raise LabError(f"{node.name}: no host end found for {netdev(r)}")
            ends[(node.name, r)] = host_end
    return ends


def _master(dev: str) -> str | None:
    master = Path("/sys/class/net") / dev / "master"
    return master.resolve().name if master.exists() else None


def _switch_mtu(engine: Engine, state: LabState, spec: Scenario) -> None:
    """The rail bridges play the leaf switches: their ports (the host ends of the targets'
    rail veths) run at the switch MTU, while the targets start at 1500 until provisioned.
    A ``switch_mtu`` fault lowers one leaf port."""
    ends = _podman_host_ends(engine, state)
    _set_leaf_mtus(ends, _leaf_port_mtus(spec))
    for bridge in sorted({m for end in ends.values() if (m := _master(end))}):
        _set_mtu(bridge, SWITCH_MTU)


def _set_leaf_mtus(
    ends: dict[tuple[str, int], str], lowered: dict[str, dict[int, int]]
) -> dict[tuple[str, int], int]:
    """Each leaf port at the switch MTU, or at what a ``switch_mtu`` fault lowers it to."""
    applied = {}
    for (node, rail), host_end in sorted(ends.items()):
        applied[(node, rail)] = lowered.get(node, {}).get(rail, SWITCH_MTU)
        _set_mtu(host_end, applied[(node, rail)])
    return applied


def _wire(
    ends: dict[tuple[str, int], str], wires: Wiring, bridges: dict[tuple[int, int], str]
) -> None:
    """A cable that the wiring puts on another rail's leaf joins that leaf's bridge (of its
    own rack). ``bridges``: (rack, rail) -> the bridge playing that leaf."""
    for (node, r), host_end in sorted(ends.items()):
        plug = wires[node][r]
        if plug.rail == r:
            continue
        bridge = bridges.get((plug.rack, plug.rail))
        if bridge is None:
            raise LabError(f"{node}: no bridge found for rail {plug.rail} (miscabled fault)")
        proc = subprocess.run(
            ["ip", "link", "set", "dev", host_end, "master", bridge],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise LabError(f"moving {host_end} to {bridge} failed: {proc.stderr.strip()}")


def _lab_processes(marker: str) -> list[str]:
    """conmon and friends whose command line names a lab container."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd and "rackops lab" not in cmd and "pytest" not in cmd:
            found.append(f"{proc.name} {cmd.split(' ', 1)[0]}")
    return found


def _zombie_conmons() -> int:
    """Exited conmons not yet reaped by PID 1 (their command line is already gone)."""
    count = 0
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                stat = (proc / "stat").read_text()
            except OSError:
                continue
            if "(conmon) Z" in stat:
                count += 1
    return count


def _wait_gone(marker: str, timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        left = _lab_processes(marker)
        if (not left and not _zombie_conmons()) or time.monotonic() > deadline:
            return left  # a zombie the init never reaps is not ours to kill
        time.sleep(0.2)


def down(*, workdir: str | None = None, purge: bool = False) -> list[str]:
    """Remove every container and network of the lab; verify nothing is left."""
    wd = lab_workdir(workdir)
    if not wd.is_dir():
        return []  # no lab was ever brought up here
    state = LabState.load(wd)
    if state is not None and state.engine == "vm":  # no container, network or daemon
        removed = vm.down(state)
        for path in (wd / "state.json", wd / "scenario.json", *wd.glob("cm-*")):
            path.unlink(missing_ok=True)
        return removed
    removed = lldp.stop(wd)
    removed += lab_slurm.stop(wd)
    if state is not None and state.racks > 1:  # only one such lab fits a machine (its subnets)
        removed += spines.down()
    # an nspawn lab builds its image with podman: both are swept, whatever state says
    containers = PodmanTargets(
        wd,
        state.engine if state and state.engine != "nspawn" else "podman",
        state.networks if state else (),
    )
    for targets in (
        NspawnTargets(state if state and state.engine == "nspawn" else None),
        containers,
    ):
        removed += targets.remove(PREFIX)
    engine = containers.engine
    left = containers.left(PREFIX)
    if left:
        raise LabError(f"could not remove: {', '.join(left)}")
    # a loaded machine takes its time to stop the targets' daemons (munged, slurmd)
    # (this lab's: their command lines name its own container storage)
    lingering = _wait_gone(str(wd / "storage"), timeout=60)
    if lingering:
        raise LabError(f"lab processes still running after 60 s: {', '.join(lingering)}")
    removed += restore(wd / "host-before.json")
    if purge:
        for img in engine.run(
            ["images", "--format", "{{.Repository}}:{{.Tag}}"], check=False
        ).stdout.split():
            if PREFIX in img:
                engine.run(["rmi", "-f", img], check=False)
    for path in (wd / "state.json", wd / "scenario.json"):
        path.unlink(missing_ok=True)
    for cm in wd.glob("cm-*"):
        cm.unlink(missing_ok=True)
    return removed


def status(*, workdir: str | None = None) -> list[tuple[str, str, str]]:
    wd = lab_workdir(workdir)
    state = LabState.load(wd)
    if state is None:
        return []
    targets = targets_of(state, wd)
    rows = []
    for node in state.nodes:
        if not node.started:
            rows.append((node.name, "not started (unreachable by scenario)", "-"))
            continue
        run_state = targets.run_state(node)
        up_ = wait_ssh(node.ssh_port, time.monotonic() + 2, node.ssh_host)
        rows.append(
            (
                node.name,
                run_state,
                f"{node.ssh_host}:{node.ssh_port} {'ssh ok' if up_ else 'ssh down'}",
            )
        )
    return rows
