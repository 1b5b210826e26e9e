"""The provisioning roles against real targets (systemd as PID 1) and the stand-in vendor
apt repository: converge, idempotence, check mode, state checked with testinfra, the
refusals, and `rackops validate` finding the stack as provisioned."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from labkit import changed_tasks, on_target, playbook, recap, validate
from test_lab import VENV_BIN, pytestmark  # noqa: F401  (same skip/require rules)

from rackops import lab
from rackops.lab.inventory import netdev
from rackops.lab.lab import LabState
from rackops.lab.model import lab_workdir
from rackops.lab.repo import HW_ROOT

ROOT = Path(__file__).resolve().parent.parent
DRIVER, OFED = "580.95.05", "25.07-0.9.7"


def machine() -> dict[str, object]:
    """What the lab must leave as it found it: network interfaces, a kernel-global sysctl."""
    return {
        # the VM lab's bridges and taps (rvl…) and libvirt's (virbr…, vnet…: the Vagrant
        # test) come and go beside it
        "links": sorted(
            p.name
            for p in Path("/sys/class/net").iterdir()
            if not p.name.startswith(("rvl", "virbr", "vnet"))
        ),
        "swappiness": Path("/proc/sys/vm/swappiness").read_text(),
        "nspawn": subprocess.run(
            ["pgrep", "-c", "-x", "systemd-nspawn"], capture_output=True, text=True, check=False
        ).stdout.strip(),
    }


@pytest.fixture(scope="module")
def rack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabState]:
    """Two systemd-nspawn targets: systemd as PID 1 and /proc/sys/net their own, so the
    roles' per-interface net.* sysctls are applied for real (and vm.* is refused)."""
    assert LabState.load(lab_workdir(None)) is None, "a lab is already up: rackops lab down"
    tmp = tmp_path_factory.mktemp("roles")
    before = machine()
    state = lab.up(nodes=2, engine_name="nspawn", inventory=str(tmp / "inv"))
    try:
        yield state
    finally:
        lab.down()
    assert machine() == before


def provision(state: LabState, *extra: str) -> subprocess.CompletedProcess[str]:
    return playbook(state.inventory, "provision.yml", *extra)


@pytest.fixture(scope="module")
def converged(rack: LabState) -> LabState:
    first = provision(rack)
    assert first.returncode == 0, first.stdout[-3000:]
    assert all(r["changed"] > 0 for r in recap(first.stdout).values())
    return rack


def test_lab_status_reads_nspawn_targets(rack: LabState) -> None:
    """`rackops lab status` on an nspawn lab asks the nspawn targets, not a container
    engine (it used to fail with 'nspawn not found on PATH: install docker')."""
    rows = {name: (state, ssh) for name, state, ssh in lab.status()}
    assert set(rows) == {"node01", "node02"}
    assert all(s == "running" and ssh.endswith("ssh ok") for s, ssh in rows.values()), rows


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


def test_tuning_state_with_testinfra(converged: LabState) -> None:
    """Persistent files and units of net_mtu, hugepages, irq_affinity, and the applied
    state; reads are batched (testinfra runs one SSH command per call)."""
    import testinfra

    hw = HW_ROOT
    for node in ("node01", "node02"):
        host = testinfra.get_host(
            f"ssh://{node}", ssh_config=str(converged.workdir / "ssh_config"), sudo=True
        )
        files = host.check_output(
            "grep -H . /etc/network/interfaces.d/60-rackops-* /etc/sysctl.d/60-rackops-fabric.conf"
            " /etc/default/grub.d/60-rackops-hugepages.cfg /etc/rackops/hugepages.env"
            " /etc/rackops/irq-affinity.env /etc/fstab /etc/default/irqbalance 2>/dev/null; true"
        )
        for r in range(8):
            nd = netdev(r)
            assert f"60-rackops-{nd}:    mtu 9000" in files
            assert f"60-rackops-fabric.conf:net.ipv4.conf.{nd}.arp_ignore=1" in files
        assert (
            '60-rackops-hugepages.cfg:GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX '
            'default_hugepagesz=1G hugepagesz=1G hugepages=0:2,1:2"' in files
        )
        assert "/etc/fstab:none /dev/hugepages1G hugetlbfs pagesize=1G 0 0" in files
        assert 'hugepages.env:PER_NODE="0:2 1:2"' in files
        for unit in ("rackops-hugepages", "rackops-irq-affinity", "rackops-roce-qos"):
            assert host.service(unit).is_enabled
        state = host.check_output(
            f"for n in /sys/class/net/enp*; do echo ${{n##*/}} $(cat $n/mtu); done;"
            f" grep -H . {hw}/sys/devices/system/node/node*/hugepages/hugepages-1048576kB/"
            f"nr_hugepages {hw}/sys/class/net/*/device/local_cpulist"
            f" {hw}/sys/class/net/*/ecn/roce_np/enable/3 {hw}/proc/irq/*/smp_affinity_list"
        )
        live_net = host.check_output(
            "grep -H . /proc/sys/net/ipv4/conf/enp*/arp_ignore"
            " /proc/sys/net/ipv4/conf/enp*/arp_announce"
        )
        for r in range(8):
            assert f"{netdev(r)} 9000" in state  # live MTU
            assert f"/proc/sys/net/ipv4/conf/{netdev(r)}/arp_ignore:1" in live_net  # applied
            assert f"/proc/sys/net/ipv4/conf/{netdev(r)}/arp_announce:2" in live_net
            assert f"{hw}/sys/class/net/{netdev(r)}/ecn/roce_np/enable/3:1" in state
        assert state.count("hugepages-1048576kB/nr_hugepages:2") == 2
        cpulist = {
            line.split("/")[-3]: line.rsplit(":", 1)[1]
            for line in state.splitlines()
            if line.endswith(("0-15", "16-31")) and "local_cpulist" in line
        }
        affinity = {
            int(line.split("/")[-2]): line.rsplit(":", 1)[1]
            for line in state.splitlines()
            if "smp_affinity_list" in line
        }
        for r in range(8):  # every completion IRQ (all but the first) on its NIC's CPUs
            lo, hi = map(int, cpulist[netdev(r)].split("-"))
            first = 100 + r * 17
            assert all(lo <= int(affinity[irq]) <= hi for irq in range(first + 1, first + 17))
            assert affinity[first] == "0-31"  # the async vector is left alone


def test_kernel_global_settings_stay_refused(converged: LabState) -> None:
    before = Path("/proc/sys/vm/swappiness").read_text()
    proc = subprocess.run(
        [
            "ssh",
            "-F",
            str(converged.workdir / "ssh_config"),
            "node01",
            "systemctl is-system-running; sudo /usr/sbin/sysctl -w vm.swappiness=61",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.stdout.splitlines()[0] == "running", proc.stdout
    assert "permission denied" in proc.stderr.lower()
    assert Path("/proc/sys/vm/swappiness").read_text() == before


def test_host_qos_disagreeing_with_the_switches_is_refused_before_any_change(
    converged: LabState, tmp_path: Path
) -> None:
    import shutil

    inv = tmp_path / "inv"
    shutil.copytree(converged.inventory, inv)
    with (inv / "host_vars" / "node02.yml").open("a") as fh:
        fh.write("rackops_host_qos: {cnp_dscp: 40}\n")  # the switches classify CNP on 48
    proc = playbook(inv, "provision.yml")
    assert proc.returncode != 0
    assert "C-09" in proc.stdout and "node02" in proc.stdout
    assert "PLAY [Provision the GPU nodes]" not in proc.stdout  # no node was touched


def test_host_design_the_fabric_cannot_carry_is_refused(converged: LabState) -> None:
    proc = provision(converged, "-e", "net_mtu_value=1500", "--tags", "net_mtu_preflight")
    assert proc.returncode != 0 and "MTU 1500 does not suit a roce fabric" in proc.stdout
    proc = provision(
        converged,
        "-e",
        '{"hugepages_per_node": {"0": 2, "3": 2}, "hugepages_max_ram_pct": 1}',
        "--tags",
        "hugepages_preflight",
    )
    assert proc.returncode != 0
    assert "NUMA node(s) 3 do not exist (the host has 0, 1)" in proc.stdout


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
    rc, report = validate(converged.inventory, tmp_path / "run")
    assert rc == 0, report["culprits"] + report["errors"]
    for node in ("node01", "node02"):
        assert report["nodes"][node]["ofed_info"] == "OK"  # equals the pinned OFED
        assert report["nodes"][node]["nvidia-smi-xml"] == "OK"  # driver equals the pin


def test_drift_fails_naming_setting_live_and_design_then_provision_repairs(
    converged: LabState, tmp_path: Path
) -> None:
    hw = HW_ROOT
    ssh_config = converged.workdir / "ssh_config"
    on_target(ssh_config, "node02", "sudo ip link set dev enp41s0np0 mtu 1500")  # mlx5_1
    on_target(
        ssh_config,
        "node02",
        f"echo 0 | sudo tee {hw}/sys/class/net/enp58s0np0/ecn/roce_np/enable/3"  # mlx5_2
        f" && echo 4 | sudo tee {hw}/sys/class/net/enp58s0np0/ecn/roce_np/cnp_dscp"
        f" && echo 1 | sudo tee {hw}/sys/devices/system/node/node1/hugepages/"
        "hugepages-1048576kB/nr_hugepages"
        " && sudo mlnx_qos -i enp24s0np0 --pfc 0,0,0,1,0,0,1,0",  # mlx5_0: PFC on CNP prio
    )
    on_target(
        ssh_config, "node01", f"echo 0-31 | sudo tee {hw}/proc/irq/170/smp_affinity_list"
    )  # mlx5_4
    rc, report = validate(converged.inventory, tmp_path / "drift")
    assert rc == 2 and report["verdict"] == "REJECTED"
    found = {
        (
            f["subject"]["node"],
            f["code"],
            f["subject"]["hca"],
            str(f["observed"]),
            str(f["expected"]),
        )
        for c in report["culprits"]
        for f in c["evidence"]
        if f.get("status") == "FAIL"
    }
    assert found == {
        ("node02", "HOST-MTU", "mlx5_1", "1500", "9000"),
        ("node02", "HCA-007", "mlx5_1", "1024", "4096"),  # active_mtu follows the netdev
        ("node02", "C-20", "mlx5_2", "0", "1"),
        ("node02", "C-09", "mlx5_2", "4", "48"),
        ("node02", "C-38", None, "1", "2"),
        ("node02", "C-14", "mlx5_0", "0,0,0,1,0,0,1,0", "0,0,0,1,0,0,0,0"),
        ("node01", "C-37", "mlx5_4", "['IRQ 170 on CPUs 0-31']", "16-31"),
    }, found
    repair = provision(converged)
    assert repair.returncode == 0, repair.stdout[-2000:]
    # node01: the IRQ; node02: the MTU, the hugepage pool, the QoS (ECN, CNP DSCP, PFC at once)
    # and nothing else: this full second run over the converged rack is also its idempotence
    # check (every other task on both hosts unchanged), without a run of its own
    changed = {n: r["changed"] for n, r in recap(repair.stdout).items()}
    assert changed == {"node01": 1, "node02": 3}, changed_tasks(repair.stdout)
    rc, report = validate(converged.inventory, tmp_path / "repaired")
    assert rc == 0 and report["verdict"] == "ACCEPTED", report["culprits"]
    # the jumbo ping of every rail pair passed (C-25), through leaf ports at MTU 9216
    records = [json.loads(r) for r in (tmp_path / "repaired" / "results.jsonl").open()]
    pings = [
        f for r in records if r["kind"] == "pair" for f in r["findings"] if f["code"] == "C-25"
    ]
    assert len(pings) == 8 and all(f["status"] == "OK" for f in pings), pings


def test_a_host_qos_override_is_applied_by_the_role_and_held_by_validate(
    converged: LabState, tmp_path: Path
) -> None:
    """rackops_host_qos.dscp2prio on one host: validate holds the host to it before the role
    ran (QOS-002), the role applies it from the computed design, validate then accepts."""
    import shutil

    inv = tmp_path / "inv"
    shutil.copytree(converged.inventory, inv)
    with (inv / "host_vars" / "node01.yml").open("a") as fh:
        fh.write("rackops_host_qos: {dscp2prio: {46: 4}}\n")  # the NIC default is 5
    ssh_config = converged.workdir / "ssh_config"
    try:
        rc, report = validate(inv, tmp_path / "before")
        assert rc == 2, report["culprits"]
        codes = {
            (f["subject"]["node"], f["code"]) for c in report["culprits"] for f in c["evidence"]
        }
        assert codes == {("node01", "QOS-002")}, codes
        proc = playbook(inv, "provision.yml", "--tags", "roce_host_qos")
        assert proc.returncode == 0, proc.stdout[-2000:]
        assert recap(proc.stdout)["node01"]["changed"] > 0
        assert recap(proc.stdout)["node02"]["changed"] == 0  # its design did not change
        live = on_target(ssh_config, "node01", f"mlnx_qos -i {netdev(0)}")
        assert re.search(r"prio:4 dscp:[\d,]*\b46\b", live), live
        rc, report = validate(inv, tmp_path / "after")
        assert rc == 0 and report["verdict"] == "ACCEPTED", report["culprits"]
    finally:  # the rack as designed again for the tests after this one
        back = provision(converged, "--tags", "roce_host_qos")
        assert back.returncode == 0, back.stdout[-2000:]
        reset = " && ".join(f"sudo mlnx_qos -i {netdev(r)} --dscp2prio set,46,5" for r in range(8))
        on_target(ssh_config, "node01", reset)


def test_the_collection_runs_the_same_roles(converged: LabState, tmp_path: Path) -> None:
    """`ansible-galaxy collection build` from this tree; its roles, addressed as
    rackops.rackops.<role>, find a converged rack already as they would leave it."""
    built = subprocess.run(
        [
            str(VENV_BIN / "ansible-galaxy"),
            "collection",
            "build",
            "--output-path",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (tarball,) = tmp_path.glob("rackops-rackops-*.tar.gz")
    dest = tmp_path / "collections"
    inst = subprocess.run(
        [
            str(VENV_BIN / "ansible-galaxy"),
            "collection",
            "install",
            "--offline",
            "-p",
            str(dest),
            str(tarball),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert inst.returncode == 0, inst.stdout + inst.stderr
    play = tmp_path / "site.yml"
    play.write_text(
        "- hosts: gpu_nodes\n  gather_facts: true\n  roles:\n"
        "    - rackops.rackops.hugepages\n    - rackops.rackops.net_mtu\n"
        "    - rackops.rackops.roce_host_qos\n"
    )
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=f"{dest}:{ROOT / 'collections'}",
        ANSIBLE_ROLES_PATH=str(tmp_path / "no-roles"),  # nothing from the checkout's roles/
    )
    r = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(converged.inventory), str(play)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert r.returncode == 0, r.stdout[-3000:]
    assert "rackops.rackops.hugepages" in r.stdout
    assert all(v["changed"] == 0 for v in recap(r.stdout).values()), r.stdout[-3000:]


def test_the_stand_in_repository_is_signed_and_verified(rack: LabState) -> None:
    """apt reads the stand-in vendor repository through `signed-by=` its own key, as from a
    vendor: the index verifies, and a copy whose Packages was altered is refused."""
    cfg = rack.workdir / "ssh_config"
    sources = on_target(cfg, "node01", "cat /etc/apt/sources.list.d/*.list")
    assert "signed-by=/srv/rackops-repo/rackops-lab-archive-keyring.gpg" in sources
    assert "trusted=yes" not in sources
    ok = on_target(cfg, "node01", "sudo apt-get update 2>&1")
    assert "rackops-repo" in ok and "NO_PUBKEY" not in ok and "not signed" not in ok
    tampered = subprocess.run(
        [
            "ssh", "-F", str(cfg), "node01",
            "set -e; rm -rf /tmp/evil && cp -r /srv/rackops-repo /tmp/evil"
            " && echo 'Package: extra' >> /tmp/evil/Packages"
            " && echo 'deb [signed-by=/srv/rackops-repo/rackops-lab-archive-keyring.gpg]"
            " file:/tmp/evil ./' | sudo tee /etc/apt/sources.list.d/evil.list >/dev/null"
            " && (sudo apt-get update 2>&1; echo rc=$?)"
            " ; sudo rm -f /etc/apt/sources.list.d/evil.list",
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    out = tampered.stdout
    assert "evil" in out and ("Hash Sum mismatch" in out or "mismatch" in out.lower()), out
    assert "rc=0" not in out or "E: " in out, out


def test_a_node_behind_a_bastion_is_reached_through_proxyjump(
    rack: LabState, tmp_path: Path
) -> None:
    """The validation executor honours ProxyJump (here from ansible_ssh_common_args, the jump
    host's settings from ssh_config): node02 is reached through node01, and sees node01 as
    the client."""
    from rackops.validate.executor import Target
    from rackops.validate.ssh import SshExecutor

    n1, n2 = rack.nodes
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        f"Host bastion\n  HostName {n1.ssh_host}\n  Port {n1.ssh_port}\n  User ci\n"
        f"  IdentityFile {rack.key}\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
    )
    ex = SshExecutor(ssh_config=cfg)
    target = Target(
        "node02",
        n2.mgmt_ip,
        22,
        user="ci",
        key_file=str(rack.key),
        ssh_args=("-o", "StrictHostKeyChecking=no", "-J", "bastion"),
    )
    r = ex.run(target, ["sh", "-c", "echo $SSH_CONNECTION; hostname"], 30)
    assert r.rc == 0, (r.stderr, r.error)
    client_ip, *_ = r.stdout.split()
    assert client_ip == n1.mgmt_ip, r.stdout
    assert r.stdout.split()[-1] == "node02"
