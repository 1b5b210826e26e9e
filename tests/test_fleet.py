"""The fleet: facts read from real-format outputs (hwsim's), judged against a golden node,
by majority, and against version floors."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rackops.findings import Status
from rackops.fleet import judge
from rackops.fleet.compare import against_floors, against_golden, below, by_majority
from rackops.fleet.facts import Fact, node_facts
from rackops.inventory import load_inventory
from rackops.inventory.model import Cluster
from rackops.parsers.host_facts import SCRIPT
from rackops.profiles import Floor, Profile, load_profile
from rackops.tools import parse
from rackops.validate.golden import golden_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rackops" / "lab"))
from hwsim.node import Node
from hwsim.pci import dmidecode, lspci, mlxconfig
from hwsim.rdma import ibv_devinfo, ofed_info
from hwsim.smi import nvidia_smi
from hwsim.tree import hw_tree

NODES = [f"node{i:02d}" for i in range(1, 9)]
FAULTS: dict[str, list[dict[str, Any]]] = {  # one of each fleet fault, each on its own node
    "node02": [{"kind": "hca_firmware", "hca": "mlx5_3", "version": "28.39.1002"}],
    "node03": [{"kind": "vbios", "gpu": 2, "version": "96.00.74.00.0D"}],
    "node04": [{"kind": "pcie_downtrained", "hca": "mlx5_1", "pcie_width": 8}],
    "node05": [{"kind": "acs_enabled", "gpu": 5}],
    "node06": [{"kind": "mlxconfig", "hca": "mlx5_6", "key": "ATS_ENABLED", "value": "True(1)"}],
    "node07": [{"kind": "power_limit", "gpu": 0, "watts": 500}],
}
# what must be named: (node, device, fact) — and nothing else
NAMED = {
    ("node02", "mlx5_3", "firmware"),
    ("node03", "gpu2", "vbios"),
    ("node04", "mlx5_1", "pcie.width"),
    ("node05", "gpu5", "acs.mlx5_5.0"),
    ("node06", "mlx5_6", "mlxconfig.ATS_ENABLED"),
    ("node07", "gpu0", "power_limit_w"),
}


def _cluster() -> Cluster:
    """example-roce's node01 (HCA n pairs with GPU n) eight times over."""
    base = load_inventory("inventories/example-roce").raise_for_errors()
    first = base.nodes[0]
    nodes = tuple(
        first.model_copy(update={"name": n, "address": f"10.0.0.{i + 1}"})
        for i, n in enumerate(NODES)
    )
    return base.model_copy(update={"nodes": nodes})


def _run(fn: Any, node: Node, args: list[str]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = fn(node, args)
    return out if isinstance(out, str) else buf.getvalue()


def _outputs(name: str, faults: list[dict[str, Any]], tmp: Path) -> dict[str, Any]:
    """Every fleet source tool's output for one simulated node, parsed by the registry."""
    scenario = {"hardware": {"link_layer": "Ethernet"}, "nodes": {name: {"faults": faults}}}
    node = Node(scenario, name)
    root = tmp / name
    hw_tree(node, [str(root)])
    texts = {
        "nvidia-smi-xml": _run(nvidia_smi, node, ["-q", "-x"]),
        "nvidia-smi-topo": _run(nvidia_smi, node, ["topo", "-m"]),
        "ibv_devinfo": _run(ibv_devinfo, node, []),
        "ofed_info": _run(ofed_info, node, ["-s"]),
        "lspci": _run(lspci, node, ["-vvv"]),
        "dmidecode": _run(dmidecode, node, ["-t", "bios", "-t", "system"]),
        "host-facts": subprocess.run(
            ["sh", "-c", SCRIPT, "host-facts", str(root), *node.hcas()],
            capture_output=True,
            text=True,
            check=True,
        ).stdout,
    }
    for dev in node.hcas():
        texts[f"mlxconfig/{dev}"] = _run(mlxconfig, node, ["-d", dev, "q"])
    return {k: parse(k.split("/")[0], v) for k, v in texts.items()}


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Fact]]:
    tmp = tmp_path_factory.mktemp("hw")
    cluster = _cluster()
    return {n: node_facts(cluster.node(n), _outputs(n, FAULTS.get(n, []), tmp)) for n in NODES}


def _facts_named(findings: list[Any], table: dict[str, list[Fact]]) -> set[tuple[str, str, str]]:
    """(node, device, fact) of every non-OK finding, the fact found by its value."""
    out = set()
    for f in findings:
        if f.status is Status.OK:
            continue
        s = f.subject
        dev = f"gpu{s.gpu}" if s.gpu is not None else (s.hca or "node")
        match = [x for x in table[s.node] if x.device == dev and x.value == f.observed]
        assert len(match) == 1, (f, match)
        out.add((s.node, dev, match[0].name))
    return out


def test_a_clean_node_has_every_kind_of_fact(table: dict[str, list[Fact]]) -> None:
    names = {f.name for f in table["node01"]}
    for want in (
        "driver",
        "cuda",
        "ofed",
        "kernel",
        "bios",
        "system",
        "vbios",
        "power_limit_w",
        "ecc_mode",
        "mig_mode",
        "firmware",
        "psid",
        "pcie.width",
        "pcie.speed_max",
        "acs.mlx5_0.0",
        "mlxconfig.ATS_ENABLED",
        "mlxconfig.LINK_TYPE_P1",
        "numa",
        "topo.mlx5_0",
    ):
        assert want in names, want
    assert len(table["node01"]) > 150


def test_majority_names_exactly_the_faults(table: dict[str, list[Fact]]) -> None:
    findings = by_majority(table)
    assert _facts_named(findings, table) == NAMED
    fw = next(f for f in findings if f.subject.hca == "mlx5_3")
    assert "7 of 8 nodes have 28.41.1000" in fw.message and fw.status is Status.FAIL


def test_golden_names_exactly_the_faults(table: dict[str, list[Fact]], tmp_path: Path) -> None:
    golden = golden_of(table["node01"], "node01", tmp_path)
    findings = [f for n in NODES for f in against_golden(n, table[n], golden)]
    assert _facts_named(findings, table) == NAMED
    fw = next(f for f in findings if f.subject.hca == "mlx5_3")
    assert fw.message.startswith("mlx5_3: firmware 28.39.1002, golden 28.41.1000 (node01)")
    assert "mlxfwmanager" in (fw.remediation or "")
    acs = next(f for f in findings if f.subject.gpu == 5)
    assert acs.status is Status.FAIL and acs.subject.bus_id  # the bridge is named


def test_a_split_rack_is_one_finding_not_half_the_nodes() -> None:
    facts = {
        n: [Fact("mlx5_0", "firmware", "28.41.1000" if i < 4 else "28.39.1002", "ibv_devinfo")]
        for i, n in enumerate(NODES)
    }
    findings = by_majority(facts)
    assert len(findings) == 1
    f = findings[0]
    assert f.subject.node is None and f.status is Status.FAIL
    assert "4 have 28.39.1002" in f.message and "4 have 28.41.1000" in f.message


def test_a_gpu_idle_link_speed_is_a_warning_an_hca_one_a_failure() -> None:
    facts = {
        n: [Fact("gpu0", "pcie.speed", "32", "lspci"), Fact("mlx5_0", "pcie.speed", "32", "lspci")]
        for n in NODES
    }
    facts["node08"] = [
        Fact("gpu0", "pcie.speed", "2.5", "lspci"),
        Fact("mlx5_0", "pcie.speed", "16", "lspci"),
    ]
    by = {f.subject.hca or f"gpu{f.subject.gpu}": f.status for f in by_majority(facts)}
    assert by == {"gpu0": Status.WARN, "mlx5_0": Status.FAIL}


@pytest.mark.parametrize(
    ("value", "floor", "low"),
    [
        ("550.54.15", "550.127.05", True),
        ("570.172.08", "550.127.05", False),
        ("28.39.1002", "28.40.1000", True),
        ("5.15.0-91-generic", "5.15.0-101", True),
        ("25.07-0.9.7", "24.10-1.1.4", False),
        ("580.95.05", "580.95.05", False),
    ],
)
def test_version_order(value: str, floor: str, low: bool) -> None:
    assert below(value, floor) is low


def test_a_floor_fails_with_its_reason(table: dict[str, list[Fact]]) -> None:
    floor = Floor(
        component="hca_firmware",
        min="28.40.1000",
        reason="RoCE retransmit erratum",
        source="ConnectX-7 firmware 28.40.1000 release notes",
    )
    findings = against_floors("node02", table["node02"], [floor])
    assert [(f.subject.hca, f.status) for f in findings] == [("mlx5_3", Status.FAIL)]
    assert "below the floor 28.40.1000: RoCE retransmit erratum" in findings[0].message
    assert against_floors("node01", table["node01"], [floor]) == []


def test_judge_uses_golden_of_the_profile(table: dict[str, list[Fact]], tmp_path: Path) -> None:
    cluster = _cluster()
    base = load_profile("h100-sxm-roce400").profile
    golden = golden_of(table["node01"], "node01", tmp_path)
    with_golden = Profile.model_validate({**base.model_dump(), "golden": golden.model_dump()})
    got = judge(table, cluster, {"h100-sxm-roce400": with_golden})
    assert _facts_named(got, table) == NAMED
    assert judge({n: table["node01"] for n in NODES[:1]}, cluster, {"h100-sxm-roce400": base}) == []


def test_a_setting_cut_from_one_nodes_table_is_named(
    table: dict[str, list[Fact]], tmp_path: Path
) -> None:
    """mlxconfig prints no trailer: a table cut between rows reads as whole. The key the
    golden node (or the majority) has is then missing on that node: a WARN naming it."""
    cut = {
        n: [
            f
            for f in fs
            if not (n == "node08" and f.device == "mlx5_0" and f.name == "mlxconfig.ATS_ENABLED")
        ]
        for n, fs in table.items()
    }
    golden = golden_of(table["node01"], "node01", tmp_path)
    (g,) = against_golden("node08", cut["node08"], golden)
    assert (g.code, g.status, g.subject.hca) == ("FLEET-MISSING", Status.WARN, "mlx5_0")
    assert "ATS_ENABLED not in mlxconfig -d mlx5_0 q" in g.message
    missing = [f for f in by_majority(cut) if f.code == "FLEET-MISSING"]
    assert [(f.subject.node, f.subject.hca) for f in missing] == [("node08", "mlx5_0")]
    assert "7 of 8 nodes" in missing[0].message


def test_a_hostile_value_is_a_marker_never_the_text() -> None:
    """A node's tool output is untrusted: a 'version' of 10,000 characters or with control
    characters is compared, stored and shown as a marker, which differs from any real one."""
    from types import SimpleNamespace

    from rackops.fleet.facts import node_facts

    node = _cluster().node("node01")
    long = node_facts(node, {"ofed_info": SimpleNamespace(version="9" * 10_000)})
    esc = node_facts(node, {"ofed_info": SimpleNamespace(version="25.07\x1b[2J")})
    assert [(f.name, f.value, f.source) for f in long + esc] == [
        ("ofed", "<unreadable: 10000 characters>", "ofed_info -s"),
        ("ofed", "<unreadable: 9 characters>", "ofed_info -s"),
    ]


def test_an_hca_below_its_capability_fails_with_no_sibling_to_compare(
    table: dict[str, list[Fact]],
) -> None:
    """node04's mlx5_1 trained at x8 of x16: named on its own too, and once only when the
    majority names it as well."""
    cluster = _cluster()
    base = load_profile("h100-sxm-roce400").profile
    alone = judge({"node04": table["node04"]}, cluster, {base.name: base})
    assert [(f.subject.hca, f.code, f.observed, f.expected) for f in alone] == [
        ("mlx5_1", "PCIE-001", "8", "16")
    ]
    rack = [f for f in judge(table, cluster, {base.name: base}) if f.subject.node == "node04"]
    assert [(f.subject.hca, f.code) for f in rack] == [("mlx5_1", "FLEET-PCIE")]


@pytest.mark.parametrize(
    ("block", "watts"),
    [
        # R535+ (gpu_power_readings) and older drivers (power_readings: the enforced limit)
        (
            "<gpu_power_readings><current_power_limit>700.00 W</current_power_limit>"
            "<default_power_limit>700.00 W</default_power_limit></gpu_power_readings>",
            700.0,
        ),
        (
            "<power_readings><power_limit>250.00 W</power_limit><default_power_limit>300.00 W"
            "</default_power_limit><enforced_power_limit>190.00 W</enforced_power_limit>"
            "</power_readings>",
            190.0,
        ),
    ],
)
def test_the_power_limit_in_force_is_read_from_either_layout(block: str, watts: float) -> None:
    xml = (
        '<?xml version="1.0" ?><nvidia_smi_log><driver_version>550.54.15</driver_version>'
        f'<attached_gpus>1</attached_gpus><gpu id="00000000:18:00.0">{block}</gpu></nvidia_smi_log>'
    )
    (gpu,) = parse("nvidia-smi-xml", xml).gpus
    assert gpu.power_limit_w == watts


@pytest.mark.parametrize("with_profile", [True, False])
def test_an_inventorys_profiles_and_suites_are_not_read_as_inventory(
    tmp_path: Path, with_profile: bool
) -> None:
    """`<inventory>/profiles/` (where a golden profile goes) and `suites/`: Ansible parses
    every file of an inventory directory as inventory unless told not to."""
    import shutil

    inv = tmp_path / "inv"
    shutil.copytree("inventories/example-roce", inv)
    (inv / "profiles").mkdir()
    (inv / "suites").mkdir()
    if with_profile:
        shutil.copy("validators/profiles/h100-sxm-roce400.yaml", inv / "profiles")
    result = load_inventory(str(inv))
    cluster = result.raise_for_errors()
    assert [n.name for n in cluster.nodes] == ["node01", "node02", "node03", "node04"]
    assert not {"gpu", "hca", "thresholds", "phy"} & set(
        result.hostvars["node01"].values.get("group_names", [])
    )


def test_floors_per_branch() -> None:
    """A bulletin fixes each driver branch apart: a 535 driver is held to the 535 floor, a
    580 one to the 580 floor, and a branch no floor names is a WARN, never a pass."""
    src = "https://nvidia.custhelp.com/app/answers/detail/a_id/5821"
    floors = [
        Floor(component="driver", branch="580", min="580.159.03", reason="EoP", source=src),
        Floor(component="driver", branch="535", min="535.309.01", reason="EoP", source=src),
    ]

    def verdict(driver: str) -> list[tuple[str, Status]]:
        got = against_floors("n1", [Fact("node", "driver", driver, "nvidia-smi -q -x")], floors)
        return [(f.code, f.status) for f in got]

    assert verdict("580.159.03") == [] and verdict("535.309.01") == []
    assert verdict("580.95.05") == [("FLEET-FLOOR", Status.FAIL)]
    assert verdict("535.288.01") == [("FLEET-FLOOR", Status.FAIL)]
    assert verdict("550.163.01") == [("FLEET-FLOOR", Status.WARN)]


def test_a_gen5_card_in_a_gen4_slot_is_no_fault(tmp_path: Path) -> None:
    """The link's capability is the lower of the card's and its upstream port's: a whole
    rack of ConnectX-7 (Gen5) behind Gen4 switch ports trains at 16 GT/s, correctly."""
    cluster = _cluster()
    base = load_profile("h100-sxm-roce400").profile
    table = {}
    for n in NODES[:4]:
        out = _outputs(n, [], tmp_path)
        text = _run(lspci, Node({"hardware": {"link_layer": "Ethernet"}}, n), ["-vvv"])
        gen4 = text.replace("Speed 32GT/s, Width x16, ASPM", "Speed 16GT/s, Width x16, ASPM")
        # the ports capable of Gen4 only, the cards still Gen5: each card trains at Gen4
        blocks = gen4.split("\n\n")
        for i, b in enumerate(blocks):
            if ("Infiniband" in b or "Ethernet controller" in b) and "MT2910" in b:
                blocks[i] = b.replace(
                    "LnkCap:\tPort #0, Speed 16GT/s", "LnkCap:\tPort #0, Speed 32GT/s"
                ).replace("LnkSta:\tSpeed 32GT/s", "LnkSta:\tSpeed 16GT/s")
        out["lspci"] = parse("lspci", "\n\n".join(blocks))
        table[n] = node_facts(cluster.node(n), out)
    speeds = {
        f.value for f in table["node01"] if f.device == "mlx5_0" and f.name.startswith("pcie.speed")
    }
    assert speeds == {"16"}
    assert judge(table, cluster, {base.name: base}) == []


def test_a_split_of_five_against_three_is_a_split() -> None:
    facts = {
        n: [Fact("mlx5_0", "firmware", "28.41.1000" if i < 5 else "28.39.1002", "ibv_devinfo")]
        for i, n in enumerate(NODES)
    }
    (f,) = by_majority(facts)
    assert f.subject.node is None and "5 have 28.41.1000" in f.message


def test_acs_that_redirects_nothing_is_no_difference(tmp_path: Path) -> None:
    """Only ReqRedir/CmpltRedir/EgressCtrl send GPUDirect through the root complex (the
    lspci rule): SrcValid+ alone on one node's bridge is not a difference."""
    cluster = _cluster()
    base = load_profile("h100-sxm-roce400").profile
    table = {n: node_facts(cluster.node(n), _outputs(n, [], tmp_path)) for n in NODES[:3]}
    node = Node({"hardware": {"link_layer": "Ethernet"}}, "node03")
    root, downstream, rest = _run(lspci, node, ["-vvv"]).split("ACSCtl:", 2)
    # the second ACS control is the switch port above GPU 0, on its path to mlx5_0
    text = "ACSCtl:".join([root, downstream, rest.replace("SrcValid-", "SrcValid+", 1)])
    out = _outputs("node03", [], tmp_path)
    out["lspci"] = parse("lspci", text)
    table["node03"] = node_facts(cluster.node("node03"), out)
    assert judge(table, cluster, {base.name: base}) == []


def test_names_and_versions_from_a_node_are_not_trusted() -> None:
    """An HCA the inventory does not name is no fact (it could be called 'gpu3'); a -dev
    package is not the runtime's version; a version that is not a number fails a floor."""
    cluster = _cluster()
    ibv = parse(
        "ibv_devinfo",
        "hca_id:\tgpu3\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t1.0\n"
        "\tnode_guid:\t\t\t0000:0000:0000:0000\n\tsys_image_guid:\t\t\t0000:0000:0000:0000\n"
        "\tvendor_id:\t\t\t0x02c9\n\tvendor_part_id:\t\t\t4129\n\thw_ver:\t\t\t\t0x0\n"
        "\tboard_id:\t\t\tMT_1\n\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n"
        "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n"
        "\t\t\tactive_mtu:\t\t4096 (5)\n\t\t\tsm_lid:\t\t\t0\n\t\t\tport_lid:\t\t0\n"
        "\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\tEthernet\n\n",
    )
    hf = parse(
        "host-facts",
        "# rackops host-facts 1\nkernel 6.8.0\nos ubuntu 24.04\n"
        "pkg nvidia-fabricmanager-580 580.95.05-1\npkg nvidia-fabricmanager-dev-580 580.95.05-1\n"
        "end\n",
    )
    facts = node_facts(cluster.node("node01"), {"ibv_devinfo": ibv, "host-facts": hf})
    assert not [f for f in facts if f.device == "gpu3"]
    assert [f.value for f in facts if f.name == "pkg.fabric_manager"] == ["580.95.05-1"]
    floor = Floor(component="bios", min="2.0", reason="erratum", source="vendor notes")
    (f,) = against_floors("node01", [Fact("node", "bios", "International", "dmidecode")], [floor])
    assert (f.code, f.status) == ("FLEET-FLOOR", Status.FAIL) and "not a version" in f.message


def test_a_setting_made_but_not_in_force_is_read_as_what_is_in_force() -> None:
    """mlxconfig -e: ATS_ENABLED set for the next boot only is still off now; the fleet
    compares what is in force (Current), the check says it is pending."""
    from rackops.tools import evaluate
    from rackops.tools.base import Context

    fault = {"kind": "mlxconfig", "hca": "mlx5_0", "key": "ATS_ENABLED", "value": "True(1)"}
    scenario = {"hardware": {}, "nodes": {"node01": {"faults": [{**fault, "pending": True}]}}}
    text = _run(mlxconfig, Node(scenario, "node01"), ["-e", "-d", "mlx5_0", "q"])
    dev = parse("mlxconfig", text).devices[0]
    assert (dev.value("ATS_ENABLED"), dev.next_boot("ATS_ENABLED")) == ("False(0)", "True(1)")
    ctx = Context(load_profile("h100-sxm-roce400").profile, None, None, None)
    (f,) = evaluate("mlxconfig", text, ctx, "node01")
    assert (f.code, f.status) == ("MLXCFG-002", Status.WARN) and "not in force" in f.message
