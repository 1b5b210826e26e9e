"""A Vagrant box (vagrant-libvirt) made from the VM lab's image: ``rackops lab box``.

The box is the VM lab's disk (``vmimage.py``: Debian, its own kernel, GRUB, the inbox RDMA
stack) after one more boot that turns it into what Vagrant expects of a box:

* user ``vagrant`` with passwordless sudo and Vagrant's public insecure key(s), read from the
  Vagrant installed here (Vagrant swaps in a key of its own at the first ``vagrant up``
  unless the Vagrantfile says otherwise);
* DHCP on ``eth0`` (systemd-networkd): vagrant-libvirt learns a VM's address from its
  management network's DHCP leases, and Vagrant's Debian guest plugin then writes the
  private networks (the rails) for networkd too;
* SSH host keys made at the first boot of each VM, not shared by every VM of the box;
* the lab's own user and its ``fw_cfg`` boot unit removed: a box carries no lab key.

The box itself is a tar of ``metadata.json``, ``Vagrantfile`` (the provider defaults: the
``qemu`` domain type, TCG) and ``box.img`` (the qcow2), the layout vagrant-libvirt reads.
Built once per image and cached beside it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from rackops.lab.engine import LabError
from rackops.lab.vmimage import boot_once, build_image, building, image_rev, run


def box_name(suite: str) -> str:
    """The name the Vagrantfile asks for: ``rackops/<release>``."""
    return f"rackops/{suite}"


# where Vagrant keeps its insecure keys: Debian's package, HashiCorp's
VAGRANT_KEYS = (
    Path("/usr/share/rubygems-integration/all/gems"),
    Path("/opt/vagrant/embedded/gems/gems"),
)
BOXIFY = """#!/bin/sh
# rackops lab box: the VM lab's disk, once, into a Vagrant box
set -e
# a step that fails powers the VM off at once, with the reason on the console
trap '[ $? -eq 0 ] || { echo rackops-image-failed > /dev/ttyS0; systemctl poweroff; }' EXIT
id vagrant >/dev/null 2>&1 || useradd -m -s /bin/bash vagrant
install -d -m 700 -o vagrant -g vagrant /home/vagrant/.ssh
cat > /home/vagrant/.ssh/authorized_keys <<'KEYS'
@KEYS@
KEYS
chown vagrant:vagrant /home/vagrant/.ssh/authorized_keys
chmod 600 /home/vagrant/.ssh/authorized_keys
echo 'vagrant ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/vagrant
chmod 440 /etc/sudoers.d/vagrant
userdel -r ci 2>/dev/null || true
rm -f /etc/sudoers.d/ci
# apt from Debian's mirror: the lab's stand-in repository is not in a box
rm -f /etc/apt/sources.list.d/rackops-lab.list
echo 'deb http://deb.debian.org/debian @SUITE@ main' > /etc/apt/sources.list.d/debian.list
mkdir -p /etc/systemd/network /etc/systemd/system/ssh.service.d
printf '[Match]\\nName=eth0\\n\\n[Network]\\nDHCP=ipv4\\n\\n[DHCPv4]\\nClientIdentifier=mac\\n' \\
  > /etc/systemd/network/10-rackops-mgmt.network
printf '[Service]\\nExecStartPre=\\nExecStartPre=%s\\nExecStartPre=%s\\n' \\
  '/usr/bin/ssh-keygen -A' '/usr/sbin/sshd -t' \\
  > /etc/systemd/system/ssh.service.d/rackops-hostkeys.conf
rm -f /etc/ssh/ssh_host_*
: > /etc/machine-id
rm -f /var/lib/dbus/machine-id
systemctl enable systemd-networkd.service >/dev/null 2>&1
systemctl mask systemd-networkd-wait-online.service >/dev/null 2>&1
systemctl disable rackops-vm-init.service >/dev/null 2>&1
echo rackops-image-ok > /dev/ttyS0
systemctl poweroff
"""
BOX_VAGRANTFILE = """# the rackops box: its defaults (a project Vagrantfile overrides them)
Vagrant.configure("2") do |config|
  config.vm.provider :libvirt do |lv|
    lv.driver = "qemu"
  end
end
"""


def vagrant_public_keys(roots: tuple[Path, ...] = VAGRANT_KEYS) -> list[str]:
    """Vagrant's public insecure keys, as the installed Vagrant ships them (2.3: one RSA key;
    2.4: ed25519 and RSA): the key every box trusts until Vagrant replaces it."""
    keys = sorted(k for root in roots for k in root.glob("vagrant-*/keys/*.pub"))
    lines = [line.strip() for k in keys for line in k.read_text().splitlines() if line.strip()]
    if not lines:
        where = ", ".join(f"{r}/vagrant-*/keys" for r in roots)
        raise LabError(
            f"no Vagrant insecure key under {where}: a box is built for the Vagrant that "
            "runs it (apt-get install vagrant vagrant-libvirt)"
        )
    return lines


def box_path(cache: Path, suite: str, keys: list[str]) -> Path:
    """The box of this image, these changes and these keys: a change to any (a Vagrant
    upgrade's new keys too) builds a new box."""
    parts = [image_rev(), BOXIFY, BOX_VAGRANTFILE, *keys]
    rev = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:8]
    return cache / f"rackops-{suite}-{rev}.box"


def build_box(cache: Path, suite: str, log: list[str], accel: str = "tcg") -> Path:
    """The cached box of this image (``rackops-<suite>-<rev>.box``), built on first use."""
    keys = vagrant_public_keys()
    box = box_path(cache, suite, keys)
    if box.exists():
        return box
    image = build_image(cache, suite, log, accel)
    with building(box):
        if not box.exists():  # another builder made it while this one waited
            _build(box, image, keys, suite, log, accel)
    return box


def _build(box: Path, image: Path, keys: list[str], suite: str, log: list[str], accel: str) -> None:
    with tempfile.TemporaryDirectory(dir=box.parent) as tmp:
        work = Path(tmp)
        disk = work / "box.img"
        run(["qemu-img", "convert", "-O", "qcow2", str(image), str(disk)], what="qemu-img")
        script = work / "boxify.sh"
        script.write_text(BOXIFY.replace("@KEYS@", "\n".join(keys)).replace("@SUITE@", suite))
        boot_once(disk, "qcow2", script, work / "boxify.log", accel, "the box's one boot")
        size = json.loads(run(["qemu-img", "info", "--output=json", str(disk)]))["virtual-size"]
        meta = {"provider": "libvirt", "format": "qcow2", "virtual_size": math.ceil(size / 2**30)}
        (work / "metadata.json").write_text(json.dumps(meta) + "\n")
        (work / "Vagrantfile").write_text(BOX_VAGRANTFILE)
        partial = box.with_suffix(f".{os.getpid()}.part")  # two builders never share one
        with tarfile.open(partial, "w") as tar:
            for name in ("metadata.json", "Vagrantfile", "box.img"):
                tar.add(work / name, arcname=name)
        partial.rename(box)
    log.append(f"Vagrant box built: {box}")


def virsh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["virsh", "-c", "qemu:///system", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _drop_stale_volumes(name: str) -> list[str]:
    """vagrant-libvirt uploads a versionless box as a new base volume per ``box add``
    (``<name>_vagrant_box_image_0_<mtime>_box.img``, about 1 GB each): the earlier ones go,
    unless a defined domain of this project (``rackops-*``) may still be backed by one.
    What it could not do, said."""
    listed = virsh("list", "--all", "--name")
    if listed.returncode != 0:
        return [f"old box volumes not removed: libvirtd does not answer ({listed.stderr.strip()})"]
    if any(d.startswith("rackops-") for d in listed.stdout.split()):
        return ["old box volumes kept: rackops-* VMs are defined"]
    prefix = f"{name.replace('/', '-VAGRANTSLASH-')}_vagrant_box_image_"
    for line in virsh("vol-list", "default").stdout.splitlines():
        vol = line.split()[0] if line.split() else ""
        if vol.startswith(prefix):
            virsh("vol-delete", "--pool", "default", vol)
    return []


def add_box(box: Path, name: str, log: list[str]) -> str:
    """``vagrant box add --force`` the box (the earlier base volumes of that name dropped)."""
    missing = [p for p in ("vagrant", "virsh") if shutil.which(p) is None]
    if missing:
        raise LabError(
            f"{' and '.join(missing)} not found: apt-get install vagrant vagrant-libvirt "
            "libvirt-clients (scripts/lab-deps)"
        )
    env = {**os.environ, "VAGRANT_CHECKPOINT_DISABLE": "1"}
    try:
        log.extend(_drop_stale_volumes(name))
        proc = subprocess.run(
            ["vagrant", "box", "add", "--force", "--name", name, str(box)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"vagrant box add {name}: no answer in {exc.timeout:g} s") from exc
    if proc.returncode != 0:
        tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
        raise LabError(f"vagrant box add {name} failed: {tail}")
    return name
