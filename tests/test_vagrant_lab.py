"""The Vagrantfile end to end, as a user runs it: ``rackops lab box`` (the VM lab's image as
a vagrant-libvirt box), ``vagrant up``, ``rackops provision`` and ``rackops validate``
against ``inventories/vagrant/``.

One VM (node01): the VM lab test (test_vm_lab.py) already runs perftest between two VMs
and the idempotence and check-mode runs, on the same image and roles; what only this
test shows is that the repository's own Vagrantfile and inventory work together on a real
Vagrant: the box's user and key, DHCP on the management network that vagrant-libvirt reads,
the private networks it writes, the rails' Soft-RoCE from the Vagrantfile's provisioner,
then the roles (the hugepage role's kernel command line and reboot, under Vagrant) and
validate ACCEPTED. The two-VM run is the README's, timed in bench/README.md.

In CI's run (``scripts/test``, after the VM lab test: one emulated rack at a time); alone,
``bash scripts/test -m vagrant``. It needs root, Debian's vagrant and vagrant-libvirt, libvirt
with the QEMU driver (``bash scripts/lab-deps --vagrant``) and libvirtd (``scripts/libvirt-host
up`` starts it; where systemd is not PID 1, with ``RACKOPS_LIBVIRT_SANDBOX=1``).
``RACKOPS_REQUIRE_VAGRANT=1`` (CI) makes a missing part a failure instead of a skip.
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

from rackops.lab.vagrantbox import add_box, box_name, build_box, virsh
from rackops.lab.vm import accel

NEEDS = ("vagrant", "virsh", "libvirtd", "qemu-system-x86_64", "qemu-img", "debootstrap", "ssh")
PLUGIN = Path("/usr/share/vagrant-plugins/plugins.d/vagrant-libvirt.json")  # Debian's
missing = [t for t in NEEDS if shutil.which(t) is None] + ([] if PLUGIN.exists() else [PLUGIN.name])
if missing or os.geteuid() != 0:
    reason = f"the Vagrant test needs root and {', '.join(missing) or 'nothing else'}"
    if os.environ.get("RACKOPS_REQUIRE_VAGRANT") == "1":
        raise RuntimeError(reason + " (RACKOPS_REQUIRE_VAGRANT=1)")
    pytestmark = [pytest.mark.vagrant, pytest.mark.skip(reason=reason)]
else:
    pytestmark = [pytest.mark.vagrant]

INVENTORY = ROOT / "inventories" / "vagrant"
KEY = Path.home() / ".vagrant.d" / "insecure_private_key"
DOMAINS = ("rackops-node01", "rackops-node02")  # the Vagrantfile's default_prefix
NETWORKS = ("rackops-mgmt", "rackops-r0", "rackops-r1", "rackops-vagrant")


def sh(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def libvirt_rules() -> list[str]:
    """libvirt's iptables chains and rules (the container labs beside this test add and
    remove netavark's own while it runs)."""
    out = subprocess.run(["iptables-save"], capture_output=True, text=True, check=False).stdout
    return sorted(line for line in out.splitlines() if "LIBVIRT" in line)


def teardown(env: dict[str, str]) -> list[str]:
    """Every step, whatever the one before did: what was left behind (and then removed)."""
    left = []
    try:
        down = sh(["vagrant", "destroy", "-f"], env, 600)
        if down.returncode != 0:
            left.append(f"vagrant destroy failed: {down.stderr.strip()[-1000:]}")
    except subprocess.TimeoutExpired:
        left.append("vagrant destroy: no answer in 600 s")
    for name in DOMAINS:
        if virsh("dominfo", name).returncode == 0:
            left.append(f"domain {name}")
            virsh("destroy", name)
            virsh("undefine", name, "--remove-all-storage")
    for net in NETWORKS:  # vagrant destroy removes the networks it made (and their dnsmasq)
        if virsh("net-info", net).returncode == 0:
            left.append(f"network {net}")
            virsh("net-destroy", net)
            virsh("net-undefine", net)
    return left


@pytest.fixture(scope="module")
def vagrant(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    tmp = tmp_path_factory.mktemp("vagrant")
    env = {
        **os.environ,
        "RACKOPS_BOX": "rackops",  # the box built here, whatever the caller's shell says
        "VAGRANT_CHECKPOINT_DISABLE": "1",
        "VAGRANT_BOX_UPDATE_CHECK_DISABLE": "1",
        "VAGRANT_DEFAULT_PROVIDER": "libvirt",
        "VAGRANT_DOTFILE_PATH": str(tmp / ".vagrant"),
    }
    rules = libvirt_rules()
    host = sh(["bash", "scripts/libvirt-host", "up"], env, 120)
    if host.returncode == 64 and os.environ.get("RACKOPS_REQUIRE_VAGRANT") != "1":
        pytest.skip(host.stderr.strip())  # no libvirtd here, and none may be started
    assert host.returncode == 0, host.stdout + host.stderr
    # the names are the Vagrantfile's: VMs of them are somebody's rack, never removed here
    taken = [d for d in DOMAINS if virsh("dominfo", d).returncode == 0]
    if taken:
        sh(["bash", "scripts/libvirt-host", "down"], env, 60)
        pytest.fail(f"{', '.join(taken)} already defined: `vagrant destroy` that rack first")
    left: list[str] = []
    try:
        cache = Path(os.environ.get("RACKOPS_LAB_CACHE") or tmp / "cache")
        log: list[str] = []
        add_box(build_box(cache, "bookworm", log, accel()), box_name("bookworm"), log)
        up = sh(["vagrant", "up", "node01", "--provider=libvirt"], env, 1500)
        assert up.returncode == 0, (up.stdout + up.stderr)[-4000:]
        yield env
    finally:
        left = teardown(env)
        sh(["bash", "scripts/libvirt-host", "down"], env, 60)
    assert not left, left
    # "open" networks: libvirt adds no rule of its own (the container lab tests beside this
    # one compare the machine's iptables before and after their labs)
    assert libvirt_rules() == rules, set(libvirt_rules()) ^ set(rules)


def on_node01(cmd: str) -> str:
    proc = subprocess.run(
        [
            "ssh",
            "-i",
            str(KEY),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            "vagrant@192.168.56.11",
            cmd,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"node01: {cmd}: {proc.stderr}"
    return proc.stdout


def test_vagrant_up_then_provision_and_validate_the_vagrant_inventory(
    vagrant: dict[str, str], tmp_path: Path
) -> None:
    rackops = str(VENV_BIN / "rackops")
    prov = sh(
        [rackops, "provision", "-i", str(INVENTORY), "--", "--limit", "node01"], vagrant, 1500
    )
    assert prov.returncode == 0, prov.stdout[-4000:]
    assert "RUNNING HANDLER [hugepages : Reboot into the new kernel command line]" in prov.stdout
    assert recap(prov.stdout)["node01"]["failed"] == 0, changed_tasks(prov.stdout)

    # the running kernel after the role's reboot: the pool from the command line, the rails
    # at the design's MTU with Soft-RoCE back on them (the Vagrantfile's boot unit)
    state = on_node01(
        "cat /proc/cmdline; "
        "cat /sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages; "
        "cat /sys/class/net/eth2/mtu /sys/class/net/eth3/mtu; rdma link show"
    ).splitlines()
    assert "hugepagesz=2M" in state[0].split() and "hugepages=0:256" in state[0].split()
    assert state[1:4] == ["256", "9000", "9000"], state
    assert "netdev eth2" in "\n".join(state[4:]) and "netdev eth3" in "\n".join(state[4:])

    run = tmp_path / "run"
    code, report = labkit_validate(
        INVENTORY, run, "--limit", "node01", "--concurrency", "1", suite="vm"
    )
    bad = [
        f
        for line in (run / "results.jsonl").read_text().splitlines()
        for f in json.loads(line).get("findings") or []
        if f["status"] != "OK"
    ]
    assert code == 0 and report["verdict"] == "ACCEPTED", bad
