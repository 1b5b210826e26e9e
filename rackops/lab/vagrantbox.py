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
from rackops.lab.vmimage import build_image, image_rev, run

BOX_NAME = "rackops/bookworm"
VAGRANT_KEYS = Path("/usr/share/rubygems-integration/all/gems")  # Debian's vagrant package
BOXIFY = """#!/bin/sh
# rackops lab box: the VM lab's disk, once, into a Vagrant box
set -e
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
echo rackops-box-ok > /dev/ttyS0
systemctl poweroff
"""
BOX_VAGRANTFILE = """# the rackops box: its defaults (a project Vagrantfile overrides them)
Vagrant.configure("2") do |config|
  config.vm.provider :libvirt do |lv|
    lv.driver = "qemu"
  end
end
"""


def vagrant_public_keys(root: Path = VAGRANT_KEYS) -> list[str]:
    """Vagrant's public insecure keys, as the installed Vagrant ships them (2.3: one RSA key;
    2.4: ed25519 and RSA): the key every box trusts until Vagrant replaces it."""
    keys = sorted(root.glob("vagrant-*/keys/*.pub"))
    lines = [line.strip() for k in keys for line in k.read_text().splitlines() if line.strip()]
    if not lines:
        raise LabError(
            f"no Vagrant insecure key under {root}/vagrant-*/keys: a box is built for the "
            "Vagrant that runs it (apt-get install vagrant vagrant-libvirt)"
        )
    return lines


def box_path(cache: Path, suite: str) -> Path:
    """The box of this image and these changes: a change to either builds a new box."""
    rev = hashlib.sha256((image_rev() + BOXIFY + BOX_VAGRANTFILE).encode()).hexdigest()[:8]
    return cache / f"rackops-{suite}-{rev}.box"


def build_box(cache: Path, suite: str, log: list[str], accel: str = "tcg") -> Path:
    """The cached box of this image (``rackops-<suite>-<rev>.box``), built on first use."""
    box = box_path(cache, suite)
    if box.exists():
        return box
    keys = vagrant_public_keys()
    image = build_image(cache, suite, log, accel)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        work = Path(tmp)
        disk = work / "box.img"
        run(["qemu-img", "convert", "-O", "qcow2", str(image), str(disk)], what="qemu-img")
        script = work / "boxify.sh"
        script.write_text(BOXIFY.replace("@KEYS@", "\n".join(keys)))
        boxify_boot(disk, script, work / "boxify.log", accel)
        size = json.loads(run(["qemu-img", "info", "--output=json", str(disk)]))["virtual-size"]
        meta = {"provider": "libvirt", "format": "qcow2", "virtual_size": math.ceil(size / 2**30)}
        (work / "metadata.json").write_text(json.dumps(meta) + "\n")
        (work / "Vagrantfile").write_text(BOX_VAGRANTFILE)
        partial = box.with_suffix(".part")
        with tarfile.open(partial, "w") as tar:
            for name in ("metadata.json", "Vagrantfile", "box.img"):
                tar.add(work / name, arcname=name)
        partial.rename(box)
    log.append(f"Vagrant box built: {box}")
    return box


def boxify_boot(disk: Path, script: Path, log: Path, accel: str) -> None:
    """Boot the disk once (from disk, through GRUB) to run ``BOXIFY``; refuse a box it did not
    finish."""
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
        f"file={disk},format=qcow2,if=virtio,cache=unsafe",
        "-fw_cfg",
        f"name=opt/rackops/init,file={script}",
    ]
    run(cmd, timeout=900, what="the box's one boot")
    text = log.read_text(errors="replace") if log.exists() else ""
    if "rackops-box-ok" not in text:
        tail = " | ".join(text.strip().splitlines()[-5:])
        raise LabError(f"the box's one boot did not finish: {tail or 'no console output'}")


def _virsh(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["virsh", "-c", "qemu:///system", *args], capture_output=True, text=True, check=False
    )


def _drop_stale_volumes(name: str) -> None:
    """vagrant-libvirt uploads a versionless box as a new base volume per ``box add``
    (``<name>_vagrant_box_image_0_<mtime>_box.img``, about 1 GB each): the earlier ones go,
    unless a defined domain of this project (``rackops-*``) may still be backed by one."""
    domains = _virsh("list", "--all", "--name").stdout.split()
    if any(d.startswith("rackops-") for d in domains):
        return
    prefix = f"{name.replace('/', '-VAGRANTSLASH-')}_vagrant_box_image_"
    for line in _virsh("vol-list", "default").stdout.splitlines():
        vol = line.split()[0] if line.split() else ""
        if vol.startswith(prefix):
            _virsh("vol-delete", "--pool", "default", vol)


def add_box(box: Path, name: str = BOX_NAME) -> str:
    """``vagrant box add --force`` the box (the earlier base volumes of that name dropped)."""
    if shutil.which("vagrant") is None:
        raise LabError("vagrant not found: apt-get install vagrant vagrant-libvirt")
    env = {**os.environ, "VAGRANT_CHECKPOINT_DISABLE": "1"}
    _drop_stale_volumes(name)
    proc = subprocess.run(
        ["vagrant", "box", "add", "--force", "--name", name, str(box)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
        raise LabError(f"vagrant box add {name} failed: {tail}")
    return name
