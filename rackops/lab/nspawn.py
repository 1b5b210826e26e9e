"""systemd-nspawn lab targets (``rackops lab up --engine nspawn``).

Why a second engine: under podman ``/proc/sys`` is read-only, and making it writable would
expose the kernel-global keys (``vm.*``) of the lab machine. ``systemd-nspawn
--private-network`` mounts ``/proc/sys`` read-only *except* ``/proc/sys/net``, which belongs
to the target's own network namespace: per-interface ``net.*`` sysctls are applied for
real, global keys are refused (reference lab.md §4b). systemd is PID 1 in every target.

Layout:

* one root filesystem (the same debootstrap tarball as the podman image), unpacked and
  prepared once under ``<workdir>/nspawn/<suite>`` (``ci`` user, host keys, hermetic apt,
  masked units); every target boots it with ``--volatile=overlay``, so its changes live in
  tmpfs and vanish at power-off;
* bridges ``rkl-mgmt`` (``198.19.64.1/24``, its own subnet so a podman lab elsewhere on the
  machine does not collide) and ``rkl-r<R>`` per rail, the leaf switches at MTU 9216; each
  target gets ``--network-veth-extra`` pairs named like the inventory's netdevs inside, with
  their host ends enslaved to the bridges; addresses are set from the host with ``nsenter``;
* SSH goes straight to the target's management address (port 22);
* ``down`` powers every target off by its saved PID (SIGTERM: a clean systemd shutdown),
  then deletes the bridges and any host-side veth left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tarfile
import time
from pathlib import Path

from rackops.lab.engine import LabError
from rackops.lab.model import LabNode, LabState
from rackops.lab.repo import APT_SOURCE

MGMT = "198.19.64"
BRIDGE_MGMT = "rkl-mgmt"
PREFIX = "rkl"
PREPARE = r"""set -e
id ci >/dev/null 2>&1 || useradd -m -s /bin/bash ci
echo 'ci ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/ci && chmod 440 /etc/sudoers.d/ci
chmod 755 /usr/local/sbin/lab-init
rm -f /etc/ssh/ssh_host_* && ssh-keygen -A >/dev/null
rm -f /etc/apt/sources.list /etc/hostname && rm -rf /etc/apt/sources.list.d/*
echo '@APT_SOURCE@' > /etc/apt/sources.list.d/rackops-lab.list
mkdir -p /lab/ssh /srv/rackops-repo /etc/rackops-hwsim
systemctl enable rackops-lab-init.service ssh.service lldpd.service >/dev/null 2>&1
systemctl disable slurmd.service slurmctld.service munge.service >/dev/null 2>&1 || true
systemctl mask systemd-logind.service getty@.service console-getty.service getty.target \
  systemd-udevd.service systemd-udev-trigger.service systemd-remount-fs.service \
  systemd-networkd.service systemd-resolved.service >/dev/null 2>&1
""".replace("@APT_SOURCE@", APT_SOURCE)


def _run(cmd: list[str], *, check: bool = True, timeout: float = 60) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"{' '.join(cmd[:4])} … did not finish in {timeout:g} s") from exc
    if check and proc.returncode != 0:
        raise LabError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def prepare_base(tarball: Path, wd: Path, suite: str, lab_init: str, unit: str) -> Path:
    """Unpack and prepare the shared read-only base once (chroot is safe here: nothing in
    the preparation touches the kernel)."""
    base = wd / "nspawn" / tarball.stem.removeprefix("rootfs-")  # suite and image revision
    marker = base / ".rackops-prepared"
    if marker.exists():
        return base
    if base.exists():
        _run(["rm", "-rf", str(base)])
    base.mkdir(parents=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(base, filter="fully_trusted")  # our own debootstrap output
    (base / "usr/local/sbin/lab-init").write_text(lab_init)
    (base / "etc/systemd/system/rackops-lab-init.service").write_text(unit)
    _run(["chroot", str(base), "/bin/sh", "-c", PREPARE], timeout=120)
    marker.touch()
    return base


def _cgroup_roots() -> list[Path]:
    """The hierarchies systemd-nspawn uses: the named systemd one and the unified one
    (hybrid layout), or the unified one alone (pure cgroup v2)."""
    base = Path("/sys/fs/cgroup")
    roots = [base / "systemd", base / "unified"]
    found = [r for r in roots if (r / "cgroup.procs").exists()]
    return found or ([base] if (base / "cgroup.procs").exists() else [])


def _own_cgroup(name: str) -> list[Path]:
    """One cgroup per target: with --keep-unit nspawn splits the cgroup it starts in into
    ``supervisor`` and ``payload``, so two targets started from the same cgroup would share
    ``payload`` and their systemds collide (units fail with 219/CGROUP)."""
    dirs = []
    for root in _cgroup_roots():
        d = root / "rackops-lab" / name
        d.mkdir(parents=True, exist_ok=True)
        dirs.append(d)
    return dirs


def _remove_cgroups() -> None:
    for root in _cgroup_roots():
        top = root / "rackops-lab"
        if not top.exists():
            continue
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                d.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()


def leader(pid: int, deadline: float) -> int:
    """The target's PID 1: the child of systemd-nspawn that lives in new pid and network
    namespaces (nspawn's short-lived outer child does not)."""
    own = {ns: Path(f"/proc/self/ns/{ns}").readlink() for ns in ("net", "pid")}
    children = Path(f"/proc/{pid}/task/{pid}/children")
    while time.monotonic() < deadline:
        try:
            kids = children.read_text().split()
        except OSError as exc:
            raise LabError(f"systemd-nspawn (pid {pid}) exited while starting") from exc
        for kid in kids:
            try:
                if all(Path(f"/proc/{kid}/ns/{ns}").readlink() != v for ns, v in own.items()):
                    return int(kid)
            except OSError:
                continue
        time.sleep(0.05)
    raise LabError(f"systemd-nspawn (pid {pid}) started no container within 30 s")


def _wait_link(name: str, deadline: float) -> None:
    while not Path(f"/sys/class/net/{name}").exists():
        if time.monotonic() > deadline:
            raise LabError(f"host end {name} of a target's veth did not appear")
        time.sleep(0.05)


def host_ends(node: LabNode, rails: int) -> list[tuple[str, str, int | None]]:
    """(host-side veth name, name inside the target, rail or None for management); host
    names stay within the 15-character limit."""
    from rackops.lab.inventory import netdev

    ends: list[tuple[str, str, int | None]] = [(f"{PREFIX}{node.index}m", "eth0", None)]
    ends += [(f"{PREFIX}{node.index}r{r}", netdev(r), r) for r in range(rails)]
    return ends


def start(
    state: LabState,
    base: Path,
    rails: int,
    switch_mtu: dict[str, dict[int, int]],
    default_mtu: int,
    binds: list[str] | None = None,
) -> None:
    wd = state.workdir
    bridges = [BRIDGE_MGMT] + [f"{PREFIX}-r{r}" for r in range(rails)]
    for br in bridges:
        if not Path(f"/sys/class/net/{br}").exists():
            _run(["ip", "link", "add", br, "type", "bridge"])
        _run(["ip", "link", "set", br, "up"])
    _run(["ip", "addr", "replace", f"{MGMT}.1/24", "dev", BRIDGE_MGMT])
    hosts = ["127.0.0.1 localhost", "::1 localhost"]
    hosts += [f"{n.mgmt_ip} {n.name}" for n in state.nodes]
    (wd / "nspawn-hosts").write_text("\n".join(hosts) + "\n")
    logs = wd / "nspawn-logs"
    logs.mkdir(exist_ok=True)
    for node in state.nodes:
        if not node.started:
            continue
        args = [
            "systemd-nspawn",
            "-D",
            str(base),
            "--volatile=overlay",
            "-b",
            "--register=no",
            "--keep-unit",
            f"--machine={PREFIX}-{node.name}",
            f"--hostname={node.name}",
            "--console=passive",
            *[f"--network-veth-extra={h}:{c}" for h, c, _ in host_ends(node, rails)],
            f"--bind-ro={wd / 'ssh'}:/lab/ssh",
            f"--bind-ro={wd / 'scenario.json'}:/etc/rackops-hwsim/scenario.json",
            f"--bind-ro={wd / 'repo'}:/srv/rackops-repo",
            f"--bind-ro={wd / 'nspawn-hosts'}:/etc/hosts",
            *(binds or []),
        ]
        cgroups = _own_cgroup(node.name)

        def enter(cgroups: list[Path] = cgroups) -> None:  # in the child, before exec
            for d in cgroups:
                (d / "cgroup.procs").write_text(str(os.getpid()))

        with (logs / f"{node.name}.log").open("w") as log:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=enter,
            )
        node.container = str(proc.pid)
        state.save()  # `down` can find it from here on
    deadline = time.monotonic() + 30
    for node in state.nodes:
        if not node.started:
            continue
        try:
            pid1 = leader(int(node.container), deadline)
        except LabError as exc:
            raise LabError(f"{node.name}: {exc}: {_why_exited(logs / f'{node.name}.log')}") from exc
        setup = ["ip link set lo up"]
        for host_end, inside, rail in host_ends(node, rails):
            _wait_link(host_end, deadline)
            if rail is None:
                master, mtu, address = BRIDGE_MGMT, 1500, node.mgmt_ip
            else:
                master, address = f"{PREFIX}-r{rail}", node.rails[rail]
                mtu = switch_mtu.get(node.name, {}).get(rail, default_mtu)
            _run(["ip", "link", "set", host_end, "mtu", str(mtu), "master", master, "up"])
            setup += [f"ip addr replace {address}/24 dev {inside}", f"ip link set {inside} up"]
        # the target's ends arrive in its namespace while it boots: retry until they are there
        while True:
            try:
                _run(["nsenter", "-t", str(pid1), "-n", "sh", "-c", " && ".join(setup)])
                break
            except LabError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    for br in bridges[1:]:
        _run(["ip", "link", "set", br, "mtu", str(default_mtu)])


def _why_exited(log: Path) -> str:
    """The target's own last words; the kernel limit behind the usual one named."""
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    text = " | ".join(lines[-3:])
    if "Too many open files" in text:
        limit = Path("/proc/sys/fs/inotify/max_user_instances").read_text().strip()
        text += (
            f" (each target's systemd takes inotify instances: fs.inotify.max_user_instances is "
            f"{limit} on this machine; fewer --nodes, or raise it)"
        )
    return text


def down(state: LabState | None) -> list[str]:
    """Power every target off (clean systemd shutdown), then remove bridges and veths."""
    removed = []
    pids = []
    known = {
        int(n.container): n.name for n in (state.nodes if state else []) if n.container.isdigit()
    }
    for pid in sorted(set(known) | set(_targets_running())):  # a state cut by a killed `up`
        try:
            os.kill(pid, signal.SIGTERM)
            pids.append(pid)
            removed.append(f"{PREFIX}-{known.get(pid, pid)}")
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 30
    for pid in pids:
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
    for name in _links():
        _run(["ip", "link", "del", name], check=False)
        removed.append(name)
    _remove_cgroups()
    left = _links()
    if left:
        raise LabError(f"could not remove: {', '.join(left)}")
    return removed


def _targets_running() -> list[int]:
    """The systemd-nspawn processes of this machine's lab targets (``--machine=PREFIX-…``)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            argv
            and argv[0].endswith(b"systemd-nspawn")
            and any(a.startswith(f"--machine={PREFIX}-".encode()) for a in argv)
        ):
            found.append(int(proc.name))
    return found


def _links() -> list[str]:
    """The lab's bridges (rkl-…) and host-side veths (rkl<N>m, rkl<N>r<R>) on this machine."""
    return sorted(
        p.name
        for p in Path("/sys/class/net").iterdir()
        if p.name.startswith(f"{PREFIX}-")
        or (p.name[len(PREFIX) :][:1].isdigit() and p.name.startswith(PREFIX))
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of ours counts as gone once reaped
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"
