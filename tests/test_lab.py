"""The lab end to end: real containers, real SSH, real Ansible, real apt, real mpirun.

Needs root, podman, debootstrap and dpkg-dev (``.ci/run`` installs them). Without them the
tests skip, unless RACKOPS_REQUIRE_LAB=1 (CI), where a missing engine is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rackops import lab
from rackops.checks import check_nccl, check_perftest
from rackops.findings import Status, worst
from rackops.lab.engine import Engine, LabError
from rackops.lab.inventory import netdev
from rackops.lab.model import lab_workdir
from rackops.lint import lint_inventory
from rackops.profiles import load_profile
from rackops.tools import parse

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
PROFILE = load_profile("h100-sxm-roce400").profile
NEEDS = (
    "podman",
    "systemd-nspawn",
    "nsenter",
    "debootstrap",
    "dpkg-deb",
    "dpkg-scanpackages",
    "ssh",
    "iptables",
)
missing = [t for t in NEEDS if shutil.which(t) is None]
if missing or os.geteuid() != 0:
    reason = f"lab needs root and {', '.join(missing) or 'nothing else'}"
    if os.environ.get("RACKOPS_REQUIRE_LAB") == "1":
        raise RuntimeError(reason + " (RACKOPS_REQUIRE_LAB=1)")
    # still marked lab: `pytest -m lab` (scripts/test) lists them as skipped, with the reason
    pytestmark = [pytest.mark.lab, pytest.mark.skip(reason=reason)]
else:
    pytestmark = [pytest.mark.lab]

SCENARIO = """
nodes:
  node02:
    faults:
      - {kind: cable_slow, hca: mlx5_1, peers: [node03], bw_gbps: 170}
  node04: {unreachable: true}
"""


def machine() -> dict[str, object]:
    """What the lab must leave as it found it."""

    def out(*cmd: str) -> str:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout

    return {
        "containers": out("podman", "ps", "-aq", "--filter", "label=io.rackops.lab"),
        "netns": sorted(p.name for p in Path("/run/netns").iterdir())
        if Path("/run/netns").is_dir()
        else [],
        "mounts": sorted(
            line.split()[4]
            for line in Path("/proc/self/mountinfo").read_text().splitlines()
            if "rackops" in line or "/run/netns" in line or ".lab" in line
        ),
        "processes": sorted(
            p
            for p in out("ps", "-eo", "comm=").split()
            if p in ("conmon", "sshd", "aardvark-dns", "slirp4netns")
        ),
        # rules and non-builtin chains; an empty table with the builtin chains at ACCEPT (left
        # by the first container network on a machine that had no tables) changes nothing
        "iptables": sorted(
            line
            for line in out("iptables-save").splitlines()
            if not line.startswith(("#", "*", "COMMIT"))
            and not re.fullmatch(
                r":(INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) ACCEPT \[\d+:\d+\]", line
            )
        ),
        "ip_forward": Path("/proc/sys/net/ipv4/ip_forward").read_text(),
        # the container networks' bridges and the spine tier's links (a bridge netavark
        # never tore down keeps the lab's subnet, and the next lab up is refused)
        "links": sorted(
            p.name
            for p in Path("/sys/class/net").iterdir()
            if re.fullmatch(r"podman\d+|rxl.*", p.name)
        ),
    }


@pytest.fixture(scope="module")
def rack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lab.lab.LabState]:
    if lab.lab.LabState.load(lab_workdir(None)) is not None:
        pytest.fail("a lab is already up in .lab: run `rackops lab down` before the tests")
    before = machine()
    tmp = tmp_path_factory.mktemp("lab")
    (tmp / "scenario.yaml").write_text(SCENARIO)
    state = lab.up(nodes=4, scenario=str(tmp / "scenario.yaml"), inventory=str(tmp / "inv"))
    try:
        yield state
    finally:
        lab.down()
        after = machine()
        assert after == before, {k: (before[k], after[k]) for k in before if before[k] != after[k]}


def ssh(
    state: lab.lab.LabState, node: str, command: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ssh", "-F", str(state.workdir / "ssh_config"), node, command],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def ansible(state: lab.lab.LabState, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV_BIN / args[0]), "-i", str(state.inventory), *args[1:]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        check=False,
    )


def test_inventory_lints_clean(rack: lab.lab.LabState) -> None:
    report = lint_inventory(rack.inventory)
    assert report.diagnostics == (), [d.human() for d in report.diagnostics]


def test_ssh_and_unreachable_node(rack: lab.lab.LabState) -> None:
    for node in ("node01", "node02", "node03"):
        proc = ssh(rack, node, "hostname; sudo -n true && echo sudo-ok")
        assert proc.stdout.split() == [node, "sudo-ok"], proc.stderr
    assert ssh(rack, "node04", "true", timeout=20).returncode == 255


def test_ansible_ping(rack: lab.lab.LabState) -> None:
    proc = ansible(rack, "ansible", "gpu_nodes", "-m", "ansible.builtin.ping", "-o")
    assert proc.stdout.count("SUCCESS") == 3 and "node04 | UNREACHABLE" in proc.stdout


@pytest.fixture(scope="module")
def installed(rack: lab.lab.LabState) -> lab.lab.LabState:
    """The stand-in hardware, installed once for the tests that need it."""
    first = ansible(rack, "ansible-playbook", "playbooks/lab-hardware.yml", "--limit", "!node04")
    assert first.returncode == 0, first.stdout[-2000:]
    return rack


def test_stand_in_packages_install_idempotently(installed: lab.lab.LabState) -> None:
    again = ansible(
        installed, "ansible-playbook", "playbooks/lab-hardware.yml", "--limit", "!node04"
    )
    assert again.returncode == 0 and "changed=1" not in again.stdout
    assert again.stdout.count("changed=0") == 3


def test_testinfra_reaches_targets(installed: lab.lab.LabState) -> None:
    rack = installed
    import testinfra

    for node in ("node01", "node02", "node03"):
        host = testinfra.get_host(f"ssh://{node}", ssh_config=str(rack.workdir / "ssh_config"))
        assert host.package("doca-ofed").version == rack.versions["ofed"]
        assert host.file("/usr/bin/ibstat").exists
        assert host.run("ofed_info -s").stdout.strip() == f"OFED-internal-{rack.versions['ofed']}:"


def _raise_rails_mtu(rack: lab.lab.LabState, *nodes: str) -> None:
    """What the net_mtu role does (tests/test_roles_lab.py runs the role itself)."""
    for node in nodes:
        cmd = "; ".join(f"sudo ip link set dev {netdev(r)} mtu 9000" for r in range(8))
        assert ssh(rack, node, cmd).returncode == 0


def test_leaf_ports_carry_jumbo_frames_once_the_hosts_are_raised(
    installed: lab.lab.LabState,
) -> None:
    rack = installed
    peer = rack.nodes[2].rails[0]  # node03, rail 0
    jumbo = f"sudo ping -M do -s 8972 -c 1 -W 1 -I {netdev(0)} {peer}"
    # targets start at 1500, as a fresh host does: RoCE active_mtu follows (iboe_get_mtu)
    assert "active_mtu:\t\t1024 (3)" in ssh(rack, "node01", "ibv_devinfo -d mlx5_0").stdout
    assert "message too long" in ssh(rack, "node01", jumbo).stderr
    _raise_rails_mtu(rack, "node01", "node03")
    assert "active_mtu:\t\t4096 (5)" in ssh(rack, "node01", "ibv_devinfo -d mlx5_0").stdout
    assert ssh(rack, "node01", jumbo).returncode == 0  # the leaf port (bridge) runs at 9216


def test_rdma_pairs_really_connect_and_show_the_slow_cable(installed: lab.lab.LabState) -> None:
    rack = installed
    _raise_rails_mtu(rack, "node01", "node02", "node03")

    def pair(server: str, client: str, dev: str, rail: int, port: int) -> str:
        ssh(
            rack,
            server,
            f"nohup ib_write_bw -d {dev} -D 2 --report_gbits -p {port} "
            f"> /tmp/srv-{port}.txt 2>&1 &",
        )
        server_ip = rack.nodes[int(server[-2:]) - 1].rails[rail]
        for _ in range(50):
            proc = ssh(
                rack, client, f"ib_write_bw -d {dev} -D 2 --report_gbits -p {port} {server_ip}"
            )
            if "Couldn't connect" not in proc.stderr:
                return proc.stdout
            time.sleep(0.1)
        raise AssertionError(proc.stderr)

    slow = parse("perftest", pair("node03", "node02", "mlx5_1", 1, 20101))
    fine = parse("perftest", pair("node01", "node02", "mlx5_1", 1, 20102))
    assert check_perftest(slow, PROFILE)[0].code == "PERF-001"
    assert worst(check_perftest(fine, PROFILE)) is Status.OK
    refused = ssh(rack, "node01", f"ib_write_bw -d mlx5_0 -p 20199 {rack.nodes[1].rails[0]}")
    assert refused.returncode == 1 and "Couldn't connect" in refused.stderr


def test_multi_node_nccl_through_mpirun(installed: lab.lab.LabState) -> None:
    rack = installed
    proc = ssh(
        rack,
        "node01",
        "mpirun --host node01:8,node03:8 -np 16 --mca btl_tcp_if_include "
        "eth0 --mca oob_tcp_if_include eth0 -x RACKOPS_HWSIM_HOSTS="
        "node01,node03 all_reduce_perf -b 1G -e 16G -f 2 -g 1",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    parsed = parse("nccl-tests", proc.stdout)
    assert parsed.nranks == 16 and {r.host for r in parsed.ranks} == {"node01", "node03"}
    assert worst(check_nccl(parsed, PROFILE, gate_sizes_bytes=[8 << 30])) is Status.OK


def test_status_reports_every_node(rack: lab.lab.LabState) -> None:
    rows = {r[0]: r for r in lab.status()}
    assert "ssh ok" in rows["node01"][2] and rows["node04"][1].startswith("not started")


def test_scenario_reaches_targets(rack: lab.lab.LabState) -> None:
    data = json.loads(ssh(rack, "node02", "cat /etc/rackops-hwsim/scenario.json").stdout)
    assert data["nodes"]["node02"]["faults"][0]["kind"] == "cable_slow"


def test_a_second_lab_is_refused_and_leaves_the_running_one_alone(
    rack: lab.lab.LabState, tmp_path: Path
) -> None:
    """Another checkout's `lab up` (its own workdir) while this lab is up: refused on the
    lab network before it makes anything, and neither its failed start nor its `lab down`
    removes this lab's networks, bridges or containers (a CI run on a machine where a killed
    run's lab was still up once swept that lab's networks away, leaving its bridges behind)."""
    engine = Engine("podman", rack.workdir)
    engine.configure()
    nets_before = sorted(engine.networks(lab.lab.PREFIX))
    links_before = sorted(p.name for p in Path("/sys/class/net").iterdir())
    other = tmp_path / "other"
    with pytest.raises(LabError, match=r"198\.19\.0\.0/24 is already in use"):
        lab.up(nodes=2, workdir=str(other), inventory=str(tmp_path / "inv"))
    lab.down(workdir=str(other))
    assert sorted(engine.networks(lab.lab.PREFIX)) == nets_before
    assert set(rack.networks) <= set(nets_before)
    assert sorted(p.name for p in Path("/sys/class/net").iterdir()) == links_before
    rows = {r[0]: r for r in lab.status()}
    assert "ssh ok" in rows["node01"][2] and "ssh ok" in rows["node03"][2], rows
