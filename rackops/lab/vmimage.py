"""The VM lab's disk image (``rackops lab up --engine vm``, ``rackops lab box``).

Built once per package set and cached, with no loop device and no mount:

1. debootstrap Debian with its own kernel (``linux-image-amd64``), GRUB, the inbox RDMA
   stack (rdma-core, the rxe provider, perftest, infiniband-diags) and the lab's packages;
2. the lab's changes in a chroot: the ``ci`` user, hermetic apt, the boot unit that runs
   the per-VM script QEMU hands over by ``fw_cfg`` (``vm.py``), GRUB's defaults;
3. a raw disk with one partition (its DOS table written here) whose ext4 is made straight from the
   directory (``mke2fs -d -E offset=``);
4. one boot of it under QEMU (direct kernel boot) that runs ``grub-install`` on its own
   ``/dev/vda`` and ``update-grub``, then powers off: from then on every VM boots from
   disk through SeaBIOS and GRUB, so a role's kernel command line and reboot are real;
5. ``qemu-img convert`` to qcow2: the base every VM's overlay is backed by.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rackops.lab.engine import LabError
from rackops.lab.repo import APT_SOURCE

VM_PACKAGES = (
    "openssh-server",
    "python3",
    "python3-apt",
    "sudo",
    "iproute2",
    "kmod",
    "procps",
    "ca-certificates",
    "iputils-ping",
    "systemd-sysv",
    "dbus",
    "udev",
    "linux-image-amd64",
    "initramfs-tools",
    "grub-pc-bin",
    "grub2-common",
    "ifupdown",
    "pciutils",
    # the inbox RDMA stack: Soft-RoCE (rdma_rxe) over the rail NICs
    "rdma-core",
    "ibverbs-providers",
    "ibverbs-utils",
    "infiniband-diags",
    "perftest",
)
DISK_GB = 4
PART_OFFSET = 1 << 20  # the partition starts at 1 MiB (sector 2048)
LABEL = "rackops-root"
# the console on the serial port (the VM's log); classic ethN names (the boot script names
# each NIC by its MAC); tsc=reliable: under TCG every vCPU reads the host's one TSC, but the
# kernel's sync test, racing emulated CPUs, calls it unsynchronized and falls back to the
# HPET: then perftest's clock calibration (TSC against gettimeofday) fails under load and
# it prints 0 Gb/s for a run that moved every byte (seen here 4 times in 12 under load)
CMDLINE = "console=ttyS0,115200 net.ifnames=0 biosdevname=0 tsc=reliable"
GRUB_DEFAULT = f"""# rackops VM lab: boot at once, the console on the serial port (the VM's log)
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT="{CMDLINE}"
GRUB_CMDLINE_LINUX=""
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND="serial --speed=115200"
"""
# Runs the script QEMU passes as fw_cfg file opt/rackops/init (the VM's name, keys and
# addresses; once, the image build's grub-install), before SSH starts
VM_INIT = """#!/bin/sh
# rackops VM lab: run the per-VM script QEMU passes by fw_cfg (opt/rackops/init)
modprobe qemu_fw_cfg 2>/dev/null || true
f=/sys/firmware/qemu_fw_cfg/by_name/opt/rackops/init/raw
i=0
while [ ! -r "$f" ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -r "$f" ] || { echo "rackops-vm-init: no fw_cfg opt/rackops/init" >&2; exit 1; }
exec sh "$f"
"""
VM_INIT_UNIT = """[Unit]
Description=rackops VM lab: this VM's name, keys and addresses (fw_cfg)
DefaultDependencies=no
After=local-fs.target systemd-modules-load.service
Before=network-pre.target ssh.service rackops-irq-affinity.service
Wants=network-pre.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/rackops-vm-init
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
"""
PREPARE = r"""set -e
id ci >/dev/null 2>&1 || useradd -m -s /bin/bash ci
echo 'ci ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/ci && chmod 440 /etc/sudoers.d/ci
chmod 755 /usr/local/sbin/rackops-vm-init
rm -f /etc/ssh/ssh_host_* && ssh-keygen -A >/dev/null
rm -f /etc/apt/sources.list /etc/hostname && rm -rf /etc/apt/sources.list.d/*
echo '@APT_SOURCE@' > /etc/apt/sources.list.d/rackops-lab.list
mkdir -p /srv/rackops-repo
printf 'LABEL=@LABEL@ / ext4 errors=remount-ro 0 1\n' > /etc/fstab
printf 'auto lo\niface lo inet loopback\nsource /etc/network/interfaces.d/*\n' \
  > /etc/network/interfaces
systemctl enable rackops-vm-init.service ssh.service >/dev/null 2>&1
systemctl mask getty@tty1.service systemd-timesyncd.service apt-daily.timer \
  apt-daily-upgrade.timer e2scrub_reap.service >/dev/null 2>&1 || true
passwd -l root >/dev/null
""".replace("@APT_SOURCE@", APT_SOURCE).replace("@LABEL@", LABEL)
# the image build's one boot: GRUB onto the VM's own disk, then power off
FIRSTBOOT = """#!/bin/sh
set -e
grub-install --target=i386-pc /dev/vda
update-grub
echo rackops-image-ok > /dev/ttyS0
systemctl poweroff
"""


def image_rev() -> str:
    """What the image is made of: a change here builds a new image, never reuses a stale one."""
    parts = ["\n".join(VM_PACKAGES), GRUB_DEFAULT, VM_INIT, VM_INIT_UNIT, PREPARE, FIRSTBOOT]
    return hashlib.sha256("".join(parts).encode()).hexdigest()[:8]


def run(cmd: list[str], *, timeout: float = 600, what: str = "") -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"{what or cmd[0]}: did not finish in {timeout:g} s") from exc
    if proc.returncode != 0:
        tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
        raise LabError(f"{what or ' '.join(cmd[:3])} failed ({proc.returncode}): {tail}")
    return proc.stdout


def needs() -> list[str]:
    """The programs an image build and a VM lab need that this machine lacks."""
    return [
        p
        for p in ("qemu-system-x86_64", "qemu-img", "debootstrap", "mke2fs")
        if shutil.which(p) is None
    ]


def build_image(cache: Path, suite: str, log: list[str], accel: str = "tcg") -> Path:
    """The cached base image (qcow2) of this package set, built on first use."""
    image = cache / f"vm-{suite}-{image_rev()}.qcow2"
    if image.exists():
        return image
    if os.geteuid() != 0:
        raise LabError("building the VM image runs debootstrap and chroot, which need root")
    if missing := needs():
        raise LabError(
            f"the VM lab needs {', '.join(missing)}: apt-get install qemu-system-x86 "
            "qemu-utils debootstrap e2fsprogs (scripts/lab-deps installs them)"
        )
    cache.mkdir(parents=True, exist_ok=True)
    with building(image):
        if image.exists():  # another builder made it while this one waited
            return image
        _build(image, suite, log, accel)
    return image


@contextmanager
def building(target: Path) -> Iterator[None]:
    """One builder of a cached file at a time (CI builds the image in the background while
    the tests that need it start): another one waits for it, then finds the file made."""
    with target.with_name(f".{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its process dies
        yield


def _build(image: Path, suite: str, log: list[str], accel: str) -> None:
    cache = image.parent
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        root = Path(tmp) / "rootfs"
        mirror = os.environ.get("RACKOPS_LAB_MIRROR", "http://deb.debian.org/debian")
        log.append(f"debootstrap {suite} with its kernel (once; cached as {image.name})")
        run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(VM_PACKAGES)}",
                suite,
                str(root),
                mirror,
            ],
            timeout=1800,
            what=f"debootstrap {suite}",
        )
        customize(root)
        raw = Path(tmp) / "disk.raw"
        make_disk(root, raw)
        kernel, initrd = boot_files(root)
        first_boot(raw, kernel, initrd, Path(tmp) / "firstboot.log", accel)
        partial = image.with_suffix(f".{os.getpid()}.part")  # two builders never share one
        run(["qemu-img", "convert", "-O", "qcow2", str(raw), str(partial)], what="qemu-img")
        partial.rename(image)
    log.append(f"VM image built in {time.monotonic() - started:.0f} s: {image}")


def customize(root: Path) -> None:
    """The lab's changes to the root filesystem, in a chroot (nothing here touches the
    kernel: useradd, ssh-keygen, systemctl enable)."""
    (root / "usr/local/sbin/rackops-vm-init").write_text(VM_INIT)
    (root / "etc/systemd/system/rackops-vm-init.service").write_text(VM_INIT_UNIT)
    (root / "etc/default").mkdir(parents=True, exist_ok=True)
    (root / "etc/default/grub").write_text(GRUB_DEFAULT)
    run(["chroot", str(root), "/bin/sh", "-c", PREPARE], timeout=120, what="preparing the image")


def make_disk(root: Path, raw: Path) -> None:
    """A DOS-labelled disk with one bootable Linux partition holding ``root`` as ext4."""
    size = DISK_GB << 30
    with raw.open("wb") as f:
        f.truncate(size)
        f.write(mbr(PART_OFFSET // 512, (size - PART_OFFSET) // 512))
    fs_kb = (size - PART_OFFSET) // 1024
    run(
        [
            "mke2fs",
            "-q",
            "-F",
            "-t",
            "ext4",
            "-L",
            LABEL,
            "-d",
            str(root),
            "-E",
            f"offset={PART_OFFSET}",
            str(raw),
            f"{fs_kb}k",
        ],
        timeout=600,
        what="mke2fs -d",
    )


def mbr(start: int, sectors: int) -> bytes:
    """A DOS partition table with one bootable Linux partition (LBA addressing only)."""
    entry = bytes([0x80, 0xFE, 0xFF, 0xFF, 0x83, 0xFE, 0xFF, 0xFF])
    entry += start.to_bytes(4, "little") + sectors.to_bytes(4, "little")
    return bytes(446) + entry + bytes(48) + b"\x55\xaa"


def boot_files(root: Path) -> tuple[Path, Path]:
    """The image's own kernel and initramfs (for its first, direct boot)."""
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    if not kernels:
        raise LabError(f"no kernel in {root / 'boot'}: is linux-image-amd64 installed?")
    initrd = root / "boot" / kernels[-1].name.replace("vmlinuz-", "initrd.img-")
    if not initrd.exists():
        raise LabError(f"no initramfs beside {kernels[-1].name}")
    return kernels[-1], initrd


def first_boot(raw: Path, kernel: Path, initrd: Path, log: Path, accel: str) -> None:
    """Boot the disk once to install GRUB on it from inside; refuse an image that did not."""
    script = raw.with_name("firstboot.sh")
    script.write_text(FIRSTBOOT)
    direct = ["-kernel", str(kernel), "-initrd", str(initrd)]
    direct += ["-append", f"root=LABEL={LABEL} ro {CMDLINE}"]
    boot_once(raw, "raw", script, log, accel, "the image's first boot (grub-install)", direct)


def boot_once(
    disk: Path,
    fmt: str,
    script: Path,
    log: Path,
    accel: str,
    what: str,
    extra: list[str] | None = None,
) -> None:
    """Boot ``disk`` once with ``script`` as its boot script (``fw_cfg``, run by the image's
    ``rackops-vm-init``), until the script powers it off. The script prints
    ``rackops-image-ok`` on the console when it succeeded (``rackops-image-failed`` or
    nothing when not): anything else is refused, with the console's last lines."""
    cmd = [
        "qemu-system-x86_64",
        "-machine",
        f"pc,accel={accel}",
        "-cpu",
        "qemu64",
        "-m",
        "1024",
        "-smp",
        "1",
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
        "-serial",
        f"file:{log}",
        "-drive",
        f"file={disk},format={fmt},if=virtio,cache=unsafe",
        *(extra or []),
        "-fw_cfg",
        f"name=opt/rackops/init,file={script}",
    ]
    run(cmd, timeout=900, what=what)
    text = log.read_text(errors="replace") if log.exists() else ""
    if "rackops-image-ok" not in text or "rackops-image-failed" in text:
        tail = " | ".join(text.strip().splitlines()[-5:])
        raise LabError(f"{what} did not finish: {tail or 'no console output'}")
