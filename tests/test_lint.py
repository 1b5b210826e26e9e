"""Every lint rule: an inventory that breaks exactly that rule, and the example that passes it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import Rack

from rackops.cli import main
from rackops.diagnostics import Level
from rackops.lint import lint_inventory, rule_table


@dataclass(frozen=True)
class Case:
    id: str
    base: str
    mutate: Callable[[Rack], None]
    code: str
    names: tuple[str, ...]  # strings the message or key must contain (host, key, value)
    level: Level = Level.ERROR


def _swap_rails(r: Rack) -> None:
    hcas = r.hcas("node02")
    hcas[1]["switch"], hcas[2]["switch"] = hcas[2]["switch"], hcas[1]["switch"]
    hcas[1]["port"], hcas[2]["port"] = hcas[2]["port"], hcas[1]["port"]
    r.hostvar("node02", "rackops_hcas", hcas)


def _hca(host: str, index: int, field: str, value: object) -> Callable[[Rack], None]:
    def mutate(r: Rack) -> None:
        hcas = r.hcas(host)
        hcas[index][field] = value
        r.hostvar(host, "rackops_hcas", hcas)

    return mutate


def _second_hca_on_rail1(r: Rack) -> None:
    r.hostvar(
        "leaf-r1",
        "rackops_switch_ports",
        [f"Ethernet{8 * i}" for i in range(9)],
    )
    hcas = r.hcas("node01")
    hcas[2].update(rail=1, switch="leaf-r1", port="Ethernet64")
    r.hostvar("node01", "rackops_hcas", hcas)
    # five hosts on leaf-r1's four uplinks: a design that allows it (else ISL003 errs)
    r.set("group_vars/all/fabric.yml", "rackops_fabric.oversubscription", 1.25)


def _drop_hca(r: Rack) -> None:
    r.hostvar("node04", "rackops_hcas", r.hcas("node04")[:7])


def _dup_hca(r: Rack) -> None:
    hcas = r.hcas("node04")
    hcas[7]["device"] = "mlx5_6"
    r.hostvar("node04", "rackops_hcas", hcas)


def _switch_in_nodes(r: Rack) -> None:
    r.set(
        "hosts.yml",
        "all.children.switches.children.sonic.hosts.node01",
        {"ansible_host": "203.0.113.99", "rackops_switch_rail": 0},
    )


def _profile_above_peak(r: Rack) -> None:
    from rackops.profiles import BUILTIN_PROFILES_DIR

    text = (BUILTIN_PROFILES_DIR / "h100-sxm-roce400.yaml").read_text()
    text = text.replace("name: h100-sxm-roce400", "name: site-h100")
    text = text.replace("ib_write_bw_gbps_min: 360 ", "ib_write_bw_gbps_min: 450 ")
    r.write("profiles/site-h100.yaml", text)
    r.set("hosts.yml", "all.children.gpu_nodes.vars.rackops_profile", "site-h100")


def hv(host: str, key: str, value: object) -> Callable[[Rack], None]:
    return lambda r: r.hostvar(host, key, value)


def design(
    key: str, value: object, file: str = "group_vars/all/fabric.yml"
) -> Callable[[Rack], None]:
    return lambda r: r.set(file, key, value)


def floor(component: str, minimum: str) -> Callable[[Rack], None]:
    """The rack's profile, copied beside the inventory, with a version floor."""

    def mutate(r: Rack) -> None:
        (r.path / "profiles").mkdir(exist_ok=True)
        src = Path(__file__).parent.parent / "validators" / "profiles" / "h100-sxm-ndr.yaml"
        (r.path / "profiles" / "h100-sxm-ndr.yaml").write_text(src.read_text())
        item = {
            "component": component,
            "min": minimum,
            "reason": "CVE-2099-0001 in the driver",
            "source": "https://example.invalid/bulletin",
        }
        r.set("profiles/h100-sxm-ndr.yaml", "floors", [item])

    return mutate


def _uplink(leaf: str, index: int, **change: object) -> Callable[[Rack], None]:
    """One of a leaf's uplinks (host_vars/<leaf>.yml) changed."""

    def mutate(r: Rack) -> None:
        file = r.path / "host_vars" / f"{leaf}.yml"
        ups = yaml.safe_load(file.read_text())["rackops_switch_uplinks"]
        ups[index].update(change)
        r.hostvar(leaf, "rackops_switch_uplinks", ups)

    return mutate


def _drop_uplinks(leaf: str, keep: int) -> Callable[[Rack], None]:
    def mutate(r: Rack) -> None:
        file = r.path / "host_vars" / f"{leaf}.yml"
        ups = yaml.safe_load(file.read_text())["rackops_switch_uplinks"]
        r.hostvar(leaf, "rackops_switch_uplinks", ups[:keep])

    return mutate


def _planes(r: Rack) -> None:
    """Spine planes 0 and 1, leaf-r2 in plane 1: its uplinks to spine-1 (plane 0) are wrong."""
    r.hostvar("spine-1", "rackops_switch_plane", 0)
    r.hostvar("spine-2", "rackops_switch_plane", 1)
    r.hostvar("leaf-r2", "rackops_switch_plane", 1)


def _tray_slot_twice(r: Rack) -> None:
    """tray07 says it sits in tray03's slot of the NVLink domain."""
    text = (r.path / "hosts.yml").read_text()
    r.write("hosts.yml", text.replace("{domain: nvl72-a, slot: 7}", "{domain: nvl72-a, slot: 3}"))


CASES = [
    Case(
        "ISL001-spine",
        "example-roce",
        _uplink("leaf-r3", 2, spine="spine-9"),
        "ISL001",
        ("leaf-r3", "spine-9", "rackops_switch_uplinks.2.spine"),
    ),
    Case(
        "ISL001-leaf-port",
        "example-roce",
        _uplink("leaf-r0", 0, port="Ethernet64"),
        "ISL001",
        ("leaf-r0", "Ethernet64", "rackops_switch_ports"),
    ),
    Case(
        "ISL001-spine-port",
        "example-roce",
        _uplink("leaf-r6", 1, spine_port="Ethernet128"),
        "ISL001",
        ("spine-2", "Ethernet128", "rackops_switch_uplinks.1.spine_port"),
    ),
    Case(
        "ISL001-not-a-spine",
        "example-roce",
        _uplink("leaf-r6", 1, spine="leaf-r7"),
        "ISL001",
        ("leaf-r7", "a leaf"),
    ),
    Case(
        "ISL002-spine-port",
        "example-roce",
        _uplink("leaf-r1", 0, spine_port="Ethernet0"),  # leaf-r0's
        "ISL002",
        ("spine-1 port Ethernet0", "leaf-r0 port Ethernet32"),
    ),
    Case(
        "ISL002-host-port",
        "example-roce",
        _uplink("leaf-r4", 3, port="swp2"),
        "ISL002",
        ("leaf-r4 port swp2", "node02/mlx5_4"),
    ),
    Case(
        "ISL003-oversubscribed",
        "example-roce",
        _drop_uplinks("leaf-r5", 3),
        "ISL003",
        ("leaf-r5", "1.33:1", "1 more uplink"),
    ),
    Case(
        "ISL003-none",
        "example-roce",
        _drop_uplinks("leaf-r7", 0),
        "ISL003",
        ("leaf-r7", "no uplinks", "4 more"),
    ),
    Case("ISL004-plane", "example-roce", _planes, "ISL004", ("leaf-r2", "plane 1", "spine-2")),
    Case(
        "ISL006-unreadable",
        "example-ib",
        hv("leaf-r3", "rackops_switch_ports", ["1/1", "1/2", "1/3", "3/7"]),
        "ISL006",
        ("leaf-r3 port '3/7'", "rackops_switch_ports.3"),
    ),
    Case(
        "ISL006-twice",
        "example-ib",
        hv("leaf-r3", "rackops_switch_ports", ["1/1", "1/2", "1/3", "2/1"]),
        "ISL006",
        ("'1/3' and '2/1' are both IB port 3",),
    ),
    Case(
        "ISL005",
        "example-ib",
        lambda r: r.set("group_vars/all/fabric.yml", "rackops_fabric.sweep_node", "ufm-1"),
        "ISL005",
        ("'ufm-1'", "rackops_fabric.sweep_node"),
    ),
    Case(
        "ISL004-speed",
        "example-roce",
        _uplink("leaf-r0", 3, speed_gbps=200),
        "ISL004",
        ("leaf-r0 port Ethernet56", "200 Gb/s", "rackops_switch_uplinks.3.speed_gbps"),
    ),
    Case(
        "C-45-pfc",
        "example-roce",
        hv("spine-2", "rackops_switch_qos", {"pfc_priorities": [4]}),
        "C-45",
        ("spine-2 ↔ leaf-r0, leaf-r1", "0,0,0,1,0,0,0,0 at the leaf", "pfc_priorities"),
    ),
    Case(
        "VER001",
        "example-ib",
        floor("driver", "580.100.01"),
        "VER001",
        ("580.95.05", "580.100.01", "CVE-2099-0001", "rackops_versions.driver"),
    ),
    Case(
        "INV001-tuning",
        "example-roce",
        hv("node02", "rackops_host_tuning", {"hugepages": {"size_kb": 4096, "total": 8}}),
        "INV001",
        ("node02", "rackops_host_tuning.hugepages.size_kb"),
    ),
    Case(
        "INV001-irqbalance",
        "example-roce",
        hv("node01", "rackops_host_tuning", {"irqbalance": "off"}),
        "INV001",
        ("node01", "rackops_host_tuning.irqbalance"),
    ),
    Case(
        "INV001-type",
        "example-roce",
        _hca("node02", 1, "rail", "one"),
        "INV001",
        ("node02", "rackops_hcas.1.rail"),
    ),
    Case(
        "INV001-missing-cabling",
        "example-roce",
        lambda r: r.write("host_vars/node03.yml", "---\n{}\n"),
        "INV001",
        ("node03", "rackops_hcas", "required"),
    ),
    Case(
        "INV002",
        "example-roce",
        hv("node03", "rackops_profile", "h100-sxm-foo"),
        "INV002",
        ("node03", "h100-sxm-foo", "h100-sxm-ndr"),
    ),
    Case(
        "INV003-host",
        "example-roce",
        hv("node02", "ansible_host", "192.0.2.21"),
        "INV003",
        ("node02", "192.0.2.21", "node01"),
    ),
    Case(
        "INV003-fabric",
        "example-roce",
        _hca("node02", 0, "address", "198.51.100.1"),
        "INV003",
        ("node02/mlx5_0", "198.51.100.1", "node01/mlx5_0"),
    ),
    Case("INV004", "example-roce", _switch_in_nodes, "INV004", ("node01", "switches")),
    Case(
        "INV005",
        "example-roce",
        hv(
            "node03",
            "rackops_fabric",
            {"type": "roce", "mtu": {"host": 9000, "switch": 9216}, "roce": {"nccl_ib_tc": 106}},
        ),
        "INV005",
        ("node03", "rackops_fabric"),
    ),
    Case(
        "CAB001",
        "example-roce",
        _hca("node02", 0, "port", "Ethernet0"),
        "CAB001",
        ("node02/mlx5_0", "leaf-r0", "Ethernet0", "node01/mlx5_0"),
    ),
    Case(
        "CAB002-switch",
        "example-roce",
        _hca("node02", 0, "switch", "leaf-r9"),
        "CAB002",
        ("node02/mlx5_0", "leaf-r9"),
    ),
    Case(
        "CAB002-port",
        "example-roce",
        _hca("node02", 3, "port", "swp99"),
        "CAB002",
        ("node02/mlx5_3", "swp99", "leaf-r3"),
    ),
    Case("CAB003", "example-roce", _swap_rails, "CAB003", ("node02/mlx5_1", "rail 1", "leaf-r2")),
    Case("CAB004-count", "example-roce", _drop_hca, "CAB004", ("node04", "7 HCAs", "8")),
    Case("CAB004-twice", "example-roce", _dup_hca, "CAB004", ("node04/mlx5_6", "twice")),
    Case(
        "CAB005", "example-roce", _hca("node01", 2, "gpu", 9), "CAB005", ("node01/mlx5_2", "GPU 9")
    ),
    Case(
        "CAB006",
        "example-roce",
        _second_hca_on_rail1,
        "CAB006",
        ("node01/mlx5_2", "rail 1"),
        Level.WARNING,
    ),
    Case(
        "C-01-unset",
        "example-roce",
        design("rackops_fabric.roce.nccl_ib_tc", None),
        "C-01",
        ("NCCL_IB_TC", "unset", "106", "rackops_fabric.roce.nccl_ib_tc"),
    ),
    Case(
        "C-01-wrong",
        "example-roce",
        hv("node02", "rackops_host_qos", {"nccl_ib_tc": 96}),
        "C-01",
        ("node02", "DSCP 24", "106"),
    ),
    Case(
        "C-02",
        "example-roce",
        design("rackops_fabric.roce.nccl_ib_tc", 104),
        "C-02",
        ("104", "ECT(0)"),
        Level.WARNING,
    ),
    Case(
        "C-05",
        "example-roce",
        hv("node02", "rackops_host_qos", {"dscp2prio": {26: 2}}),
        "C-05",
        ("node02", "DSCP 26", "priority 2", "rackops_host_qos.dscp2prio.26"),
    ),
    Case(
        "C-07",
        "example-roce",
        hv("leaf-r0", "rackops_switch_qos", {"dscp_to_tc": {26: 1}}),
        "C-07",
        ("leaf-r0", "DSCP 26", "TC 1", "lossy"),
    ),
    Case(
        "C-08-class",
        "example-roce",
        hv("leaf-r4", "rackops_switch_qos", {"dscp_to_tc": {48: 7}}),
        "C-08",
        ("leaf-r4", "CNP DSCP 48", "TC 7"),
    ),
    Case(
        "C-08-strict",
        "example-roce",
        hv("leaf-r6", "rackops_switch_qos", {"cnp_scheduler": "dwrr"}),
        "C-08",
        ("leaf-r6", "dwrr", "strict"),
    ),
    Case(
        "C-04",
        "example-roce",
        design("rackops_fabric.roce.trust", "pcp"),
        "C-04",
        ("trust pcp", "expected dscp", "rackops_fabric.roce.trust"),
    ),
    Case(
        "C-09",
        "example-roce",
        hv("node01", "rackops_host_qos", {"cnp_dscp": 4}),
        "C-09",
        ("node01", "CNP DSCP 4", "48"),
    ),
    Case(
        "C-12",
        "example-roce",
        hv("node03", "rackops_host_qos", {"pfc_priorities": [3, 4]}),
        "C-12",
        ("node03", "[3, 4]", "[3]"),
    ),
    Case(
        "C-13",
        "example-roce",
        hv("leaf-r6", "rackops_switch_qos", {"pfc_priorities": [4]}),
        "C-13",
        ("leaf-r6", "[4]", "[3]"),
    ),
    Case(
        "C-14-switch",
        "example-roce",
        hv("leaf-r1", "rackops_switch_qos", {"pfc_priorities": [3, 6]}),
        "C-14",
        ("leaf-r1", "CNP priority 6"),
    ),
    Case(
        "C-14-design",
        "example-roce",
        design("rackops_fabric.roce.pfc_priorities", [3, 6]),
        "C-14",
        ("CNP priority 6", "rackops_fabric.roce.pfc_priorities"),
    ),
    Case(
        "C-16",
        "example-roce",
        design("rackops_fabric.roce.pfc_watchdog.enabled", False),
        "C-16",
        ("watchdog",),
        Level.WARNING,
    ),
    Case(
        "C-22",
        "example-roce",
        hv("leaf-r3", "rackops_switch_mtu", 9000),
        "C-22",
        ("leaf-r3", "9000", "9018"),
    ),
    Case(
        "C-23-design",
        "example-roce",
        design("rackops_fabric.mtu.host", 1500),
        "C-23",
        ("1500", "4192"),
    ),
    Case(
        "C-23-host",
        "example-roce",
        hv("node04", "rackops_host_qos", {"mtu": 4200}),
        "C-23",
        ("node04", "4200", "9000"),
    ),
    Case("C-24-ib", "example-ib", design("rackops_fabric.mtu.ib", 2048), "C-24", ("2048", "4096")),
    Case(
        "C-24-ipoib",
        "example-ib",
        design("rackops_fabric.mtu.host", 2044),
        "C-24",
        ("2044", "4092"),
    ),
    Case(
        "C-28",
        "example-ib",
        design("rackops_versions.fabric_manager", "580.95.04", "group_vars/all/versions.yml"),
        "C-28",
        ("580.95.04", "580.95.05", "rackops_versions.fabric_manager"),
    ),
    Case(
        "RND001",
        "example-roce",
        hv("leaf-r0", "rackops_switch_qos", {"dscp_to_tc": {26: 1}}),
        "RND001",
        ("leaf-r0", "Ethernet0", "C-07"),
    ),
    Case(
        "THR001",
        "example-roce",
        _profile_above_peak,
        "THR001",
        ("site-h100", "ib_write_bw_gbps_min", "450", "400"),
    ),
    Case(
        "NVL001",
        "example-gb200-nvl72",
        _tray_slot_twice,
        "NVL001",
        ("tray03", "tray07", "slot 3"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule_fires_on_its_breakage_only(case: Case, request: pytest.FixtureRequest) -> None:
    fixture = {"example-roce": "roce", "example-gb200-nvl72": "nvl72"}.get(case.base, "ib")
    rack: Rack = request.getfixturevalue(fixture)
    assert case.code not in {d.code for d in rack.lint().diagnostics}  # the passing inventory
    case.mutate(rack)
    report = rack.lint()
    hits = [d for d in report.diagnostics if d.code == case.code]
    assert hits, f"{case.code} not raised; got {[d.human() for d in report.diagnostics]}"
    named = [h for h in hits if all(n in f"{h.message} {h.key} {h.subject}" for n in case.names)]
    assert named, f"no {case.code} names {case.names}: {[h.human() for h in hits]}"
    hit = named[0]
    assert hit.level is case.level
    assert hit.path and hit.path != "<inventory>"
    assert report.exit_code == (2 if case.level is Level.ERROR else 1)


def test_every_rule_code_has_a_breaking_case() -> None:
    # INV006: test_reading_an_inventory_never_runs_its_lookups
    tested = {c.code for c in CASES} | {"INV000", "INV006"}
    assert set(rule_table()) <= tested, set(rule_table()) - tested


@pytest.mark.parametrize("name", ["example-ib", "example-roce", "example-gb200-nvl72", "vagrant"])
def test_examples_are_clean(name: str) -> None:
    from conftest import EXAMPLES

    report = lint_inventory(EXAMPLES / name)
    assert report.diagnostics == ()
    assert report.exit_code == 0


def test_diagnostic_points_at_the_line_that_set_the_value(roce: Rack) -> None:
    _hca("node02", 0, "port", "Ethernet0")(roce)
    hit = next(d for d in roce.lint().diagnostics if d.code == "CAB001")
    assert hit.path is not None and hit.path.endswith("host_vars/node02.yml")
    lines = (roce.path / "host_vars/node02.yml").read_text().splitlines()
    assert hit.line is not None
    assert "Ethernet0" in "\n".join(lines[hit.line - 1 : hit.line + 6])


# --- the deliberately broken inventories of the issue, through the CLI ---------------------

BROKEN = {
    "bad-yaml": (
        lambda r: r.write(
            "group_vars/all/fabric.yml", "rackops_fabric:\n  type: roce\n   mtu: 1\n"
        ),
        64,
        "INV000",
        "fabric.yml:3",
    ),
    "unknown-profile": (hv("node02", "rackops_profile", "h900"), 2, "INV002", "node02"),
    "missing-cabling": (
        lambda r: r.write("host_vars/node01.yml", "---\nrackops_gpus: 8\n"),
        2,
        "INV001",
        "rackops_hcas",
    ),
    "pfc-on-cnp": (
        hv("leaf-r0", "rackops_switch_qos", {"pfc_priorities": [3, 6]}),
        2,
        "C-14",
        "leaf-r0",
    ),
    "switch-mtu": (design("rackops_fabric.mtu.switch", 9000), 2, "C-22", "9018"),
    "fm-not-driver": (
        design("rackops_versions.fabric_manager", "575.57.08", "group_vars/all/versions.yml"),
        2,
        "C-28",
        "575.57.08",
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_inventory_one_line_each(
    name: str, roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    mutate, code, rule_code, needle = BROKEN[name]
    mutate(roce)
    rc = main(["lint", "-i", str(roce.path)])
    out, err = capsys.readouterr()
    assert rc == code
    assert "Traceback" not in out + err
    lines = [
        line for line in out.splitlines() if line.partition(": ")[2].split()[1:2] == [rule_code]
    ]
    assert lines, out
    assert needle in lines[0]
    # file:line: LEVEL CODE message
    loc, _, rest = lines[0].partition(": ")
    assert loc.split(":")[-1].isdigit(), lines[0]
    assert rest.split()[0] in ("ERROR", "WARNING") and rest.split()[1] == rule_code


def test_json_format(roce: Rack, capsys: pytest.CaptureFixture[str]) -> None:
    hv("leaf-r3", "rackops_switch_mtu", 9000)(roce)
    rc = main(["lint", "-i", str(roce.path), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 2 and data["errors"] == 1
    assert data["diagnostics"][0]["code"] == "C-22"
    assert data["diagnostics"][0]["subject"] == "leaf-r3"


def _sonic_ports(n: int) -> list[str]:
    return [f"Ethernet{8 * i}" for i in range(n)]


def _sonic_lanes(n: int) -> dict[str, str]:
    return {f"Ethernet{8 * i}": ",".join(str(8 * i + k) for k in range(8)) for i in range(n)}


def test_ini_inventory_reads_like_yaml(roce: Rack) -> None:
    """The same rack written as INI gives the same model (ansible-core does the reading)."""
    from rackops.inventory import load_inventory

    yaml_model = load_inventory(roce.path).cluster
    (roce.path / "hosts.yml").unlink()
    roce.write(
        "hosts.ini",
        "\n".join(
            [
                "[gpu_nodes]",
                *(f"node0{i} ansible_host=192.0.2.2{i}" for i in range(1, 5)),
                "[gpu_nodes:vars]",
                "rackops_profile=h100-sxm-roce400",
                "[sonic]",
                *(
                    f"leaf-r{i} ansible_host=203.0.113.2{i} rackops_switch_rail={i}"
                    for i in range(3)
                ),
                "[sonic:vars]",
                f"rackops_switch_ports={_sonic_ports(8)}",
                'rackops_switch_os_version="202405"',
                "rackops_switch_buffers={'model': 'dynamic'}",
                f"rackops_switch_port_lanes={_sonic_lanes(8)}",
                "[cumulus]",
                *(
                    f"leaf-r{i} ansible_host=203.0.113.2{i} rackops_switch_rail={i}"
                    # inline INI values lose one level of quotes (ansible's shlex split)
                    + (" rackops_switch_os_version='\"5.15\"'" if i == 5 else "")
                    for i in range(3, 6)
                ),
                "[cumulus:vars]",
                f"rackops_switch_ports={[f'swp{i}' for i in range(1, 9)]}",
                'rackops_switch_os_version="5.14"',
                "[eos]",
                *(
                    f"leaf-r{i} ansible_host=203.0.113.2{i} rackops_switch_rail={i}"
                    for i in range(6, 8)
                ),
                "[eos:vars]",
                "rackops_switch_mtu=9214",
                'rackops_switch_os_version="4.32.2F"',
                f"rackops_switch_ports={[f'Ethernet{i}/1' for i in range(1, 9)]}",
                "[spines]",
                "spine-1 ansible_host=203.0.113.30",
                "spine-2 ansible_host=203.0.113.31",
                "[spines:vars]",
                "rackops_switch_role=spine",
                "rackops_switch_os=sonic",
                'rackops_switch_os_version="202405"',
                "rackops_switch_buffers={'model': 'dynamic'}",
                f"rackops_switch_ports={_sonic_ports(16)}",
                f"rackops_switch_port_lanes={_sonic_lanes(16)}",
                "[switches:children]",
                "sonic",
                "cumulus",
                "eos",
                "spines",
                "[switches:vars]",
                "rackops_switch_role=leaf",
                "",
            ]
        ),
    )
    result = load_inventory(roce.path)
    assert result.diagnostics == []
    assert result.cluster == yaml_model


def test_not_an_inventory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["lint", "-i", str(tmp_path / "missing")])
    assert rc == 64
    assert "no such inventory" in capsys.readouterr().err


def test_inventory_without_gpu_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    a: {}\n")
    rc = main(["lint", "-i", str(tmp_path)])
    assert rc == 64
    assert "gpu_nodes" in capsys.readouterr().err


@pytest.mark.parametrize(
    "template",
    [
        "{{ lookup('pipe', 'touch MARK && echo 9000') }}",
        "{{ query('pipe', 'touch MARK && echo 9000') | first }}",
        "{% set f = lookup %}{{ f('pipe', 'touch MARK && echo 9000') }}",
    ],
    ids=["lookup", "query", "aliased"],
)
def test_reading_an_inventory_never_runs_its_lookups(
    template: str, roce: Rack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mark = tmp_path / "ran"
    with (roce.path / "group_vars/gpu_nodes/tuning.yml").open("a") as fh:
        fh.write('rackops_host_qos: {mtu: "{{ site_mtu }}"}\n')
        fh.write(f'site_mtu: "{template.replace("MARK", str(mark))}"\n')
    assert main(["lint", "-i", str(roce.path)]) == 2
    out = capsys.readouterr().out
    assert not mark.exists(), "lint ran the inventory's lookup"
    assert "INV006 node01: rackops_host_qos runs" in out and "(through site_mtu)" in out
    assert "tuning.yml:" in out and "--allow-lookups" in out
    assert main(["lint", "-i", str(roce.path), "--allow-lookups"]) == 0
    assert mark.exists()  # run only when asked


EVIL = ["x;touch /tmp/rackops-pwned", "$(reboot)", "a b", "x\ninterface Ethernet9"]


def _set_hca(r: Rack, field: str, value: str) -> None:
    hcas = yaml.safe_load((r.path / "host_vars/node01.yml").read_text())["rackops_hcas"]
    hcas[0][field] = value
    r.hostvar("node01", "rackops_hcas", hcas)


FIELDS_THAT_REACH_COMMANDS = {
    # HCA device: perftest -d, NCCL_IB_HCA in nccl.conf, roce-qos.env DEVICES (sourced by sh)
    "hca-device": (lambda r, v: _set_hca(r, "device", v), "rackops_hcas"),
    # netdev: mlnx_qos -i, ethtool, ping -I, roce-qos.env / irq-affinity.env NETDEVS, netplan
    "hca-netdev": (lambda r, v: _set_hca(r, "netdev", v), "rackops_hcas"),
    # address: the perftest server address and the jumbo ping target
    "hca-address": (lambda r, v: _set_hca(r, "address", v), "rackops_hcas"),
    # port: a line of the EOS config and a key of SONiC/NVUE configs
    "hca-port": (lambda r, v: _set_hca(r, "port", v), "rackops_hcas"),
    "switch-port": (
        lambda r, v: r.hostvar("leaf-r6", "rackops_switch_ports", ["Ethernet1/1", v]),
        "rackops_switch_ports",
    ),
    # versions: apt package=version arguments and apt-cache madison in the roles
    "ofed-version": (
        lambda r, v: r.set("group_vars/all/versions.yml", "rackops_versions.ofed", v),
        "rackops_versions",
    ),
    "dcgm-version": (
        lambda r, v: r.set("group_vars/all/versions.yml", "rackops_versions.dcgm", v),
        "rackops_versions",
    ),
}


@pytest.mark.parametrize("evil", EVIL, ids=["semicolon", "subshell", "space", "newline"])
@pytest.mark.parametrize("field", sorted(FIELDS_THAT_REACH_COMMANDS))
def test_shell_metacharacters_in_fields_that_reach_commands_are_refused(
    field: str, evil: str, roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    mutate, key = FIELDS_THAT_REACH_COMMANDS[field]
    mutate(roce, evil)
    assert main(["lint", "-i", str(roce.path)]) == 2
    out = capsys.readouterr().out
    assert any("INV001" in line and key in line for line in out.splitlines()), out
