"""``rackops check``: evaluate one captured output offline, as an engineer does with an
output pasted into a ticket. Parse → pick the check for the tool → findings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rackops.checks.cabling import check_cabling, seen_from_iblinkinfo, seen_from_lldp
from rackops.checks.dcgm import check_dcgm
from rackops.checks.gpu import check_gpu_query, check_gpu_xml, check_nvlink
from rackops.checks.hca import check_hca_ports
from rackops.checks.host import check_gids, check_mlnx_qos, check_ofed, check_topo
from rackops.checks.nccl import check_nccl
from rackops.checks.perftest import check_perftest
from rackops.checks.phy import PortReport, judge_ber, judge_optics
from rackops.checks.tuning import check_host_tuning, check_jumbo_ping, designed_mtu
from rackops.errors import RackopsError
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster, Node, RoceQos
from rackops.parsers import ParseError, parse
from rackops.parsers.rdma_link import PHYS_STATES
from rackops.profiles import Profile, load_profile
from rackops.suites import Suite, load_suite


@dataclass(frozen=True)
class Context:
    profile: Profile
    node: Node | None
    cluster: Cluster | None
    suite: Suite | None


def _needs_node(ctx: Context, tool: str) -> Node:
    if ctx.node is None:
        raise RackopsError(f"checking {tool} needs the cabling map: pass -i INVENTORY --node N")
    return ctx.node


def evaluate(tool: str, text: str, ctx: Context, node_name: str | None) -> list[Finding]:
    try:
        parsed = parse(tool, text)
    except ParseError as exc:
        return [
            Finding(
                "PARSE-000",
                Status.ERROR,
                Subject(node=node_name),
                f"unreadable {tool} output: {exc}",
                remediation="capture the whole output again (stdout and stderr)",
            )
        ]
    checks = ctx.suite.checks if ctx.suite else None
    hcas = ctx.node.hcas if ctx.node else None
    driver = ctx.cluster.versions.driver if ctx.cluster else None
    if tool in ("ibstat", "ibstatus", "ibv_devinfo"):
        return check_hca_ports(parsed, ctx.profile, node=node_name, hcas=hcas)
    if tool == "nvidia-smi-query":
        return check_gpu_query(parsed, ctx.profile, node=node_name, driver_version=driver)
    if tool == "nvidia-smi-xml":
        return check_gpu_xml(parsed, ctx.profile, node=node_name, driver_version=driver)
    if tool == "nvidia-smi-nvlink":
        return check_nvlink(parsed, ctx.profile, node=node_name)
    if tool == "nvidia-smi-topo":
        return check_topo(parsed, _needs_node(ctx, tool).hcas, node=node_name)
    if tool == "dcgmi-diag":
        level = checks.dcgm.level if checks and checks.dcgm else None
        return check_dcgm(parsed, node=node_name, level=level)
    if tool == "perftest":
        size = checks.perftest_bw.message_size_bytes if checks and checks.perftest_bw else None
        if parsed.kind == "lat":
            size = (
                checks.perftest_lat.message_size_bytes if checks and checks.perftest_lat else None
            )
        return check_perftest(
            parsed,
            ctx.profile,
            subject=Subject(node=node_name, hca=parsed.device),
            message_size_bytes=size,
        )
    if tool == "nccl-tests":
        hosts = {r.host for r in parsed.ranks}
        params = (
            (checks.nccl_multi_node if len(hosts) > 1 else checks.nccl_single_node)
            if checks
            else None
        )
        return check_nccl(
            parsed,
            ctx.profile,
            node=node_name,
            gate_sizes_bytes=params.gate_sizes_bytes if params else None,
        )
    if tool == "mlnx_qos":
        roce = ctx.cluster.fabric.roce if ctx.cluster and ctx.cluster.fabric.roce else RoceQos()
        return check_mlnx_qos(parsed, roce, subject=Subject(node=node_name))
    if tool == "ofed_info":
        if ctx.cluster is None:
            raise RackopsError("checking ofed_info needs the pinned version: pass -i INVENTORY")
        return check_ofed(parsed, ctx.cluster.versions.ofed, node=node_name)
    if tool == "host-tuning":
        if ctx.cluster is None or ctx.node is None:
            raise RackopsError("checking host-tuning needs the design: pass -i INVENTORY --node N")
        return check_host_tuning(parsed, ctx.node, ctx.cluster)
    if tool == "ping":
        mtu = (
            designed_mtu(ctx.node, ctx.cluster)
            if ctx.node and ctx.cluster
            else (parsed.packet_bytes or 9000)
        )
        return check_jumbo_ping(parsed, mtu, subject=Subject(node=node_name))
    if tool == "show_gids":
        return check_gids(parsed, _needs_node(ctx, tool).hcas, node=node_name)
    return _physical(tool, parsed, ctx, node_name)


def _physical(tool: str, parsed: Any, ctx: Context, node_name: str | None) -> list[Finding]:
    """The physical-layer tools: BER and optics judge one output; cabling needs the map;
    counters are judged on what grew during a run (``rackops validate``), not one read."""
    subj = Subject(node=node_name)
    if tool == "mlxlink":
        report = PortReport()
        out = judge_ber(parsed, subj, ctx.profile, report)
        if parsed.optics is not None:
            out += judge_optics(parsed.optics, subj, report)
        return out or [Finding("PHY-OK", Status.OK, subj, "BER and optics within limits")]
    if tool == "ethtool-module":
        out = judge_optics(parsed.optics, subj, PortReport())
        if not parsed.complete:
            out.append(Finding("PHY-000", Status.ERROR, subj, "ethtool -m output is cut off"))
        return out or [Finding("PHY-OK", Status.OK, subj, "optics within the module's limits")]
    if tool in ("lldpctl", "iblinkinfo"):
        if ctx.cluster is None:
            raise RackopsError(f"checking {tool} needs the cabling map: pass -i INVENTORY")
        if tool == "iblinkinfo":
            seen = seen_from_iblinkinfo(parsed, ctx.cluster)
        else:
            node = _needs_node(ctx, tool)
            seen = seen_from_lldp(parsed, node.name, {h.netdev: h.device for h in node.hcas})
        out = check_cabling(ctx.cluster, seen, how="LLDP" if tool == "lldpctl" else tool)
        if not parsed.complete:
            out.append(Finding("PARSE-000", Status.ERROR, subj, f"{tool} output is cut off"))
        return out
    if tool == "rdma-link":
        hcas = {h.device for h in ctx.node.hcas} if ctx.node else None
        out = [
            Finding(
                "HCA-001",
                Status.FAIL,
                Subject(node=node_name, hca=link.device, port=link.port),
                f"port {link.state}/{link.physical_state}, expected ACTIVE/LINK_UP",
                link.state,
                "ACTIVE",
            )
            for link in parsed.links
            if (hcas is None or link.device in hcas)
            and link.physical_state in PHYS_STATES  # a line cut inside its states says nothing
            and (link.state, link.physical_state) != ("ACTIVE", "LINK_UP")
        ]
        if not parsed.complete:
            out.append(Finding("PARSE-000", Status.ERROR, subj, "rdma link output is cut off"))
        return out or [Finding("HCA-OK", Status.OK, subj, "every port ACTIVE/LINK_UP")]
    raise RackopsError(
        f"no single-output check reads {tool}: its counters are judged on what grows during "
        "a run (rackops validate); use `rackops parse` to read one output"
    )


def build_context(
    profile: str | None, inventory: str | None, node: str | None, suite: str | None
) -> Context:
    cluster = node_obj = None
    inv_dir = None
    if inventory:
        from rackops.inventory import load_inventory

        result = load_inventory(inventory)
        cluster = result.raise_for_errors()
        inv_dir = Path(inventory) if Path(inventory).is_dir() else Path(inventory).parent
        if node:
            names = [n.name for n in cluster.nodes]
            if node not in names:
                raise RackopsError(
                    f"node {node!r} is not in {inventory} (nodes: {', '.join(names)})"
                )
            node_obj = cluster.node(node)
    if profile is None:
        if node_obj is None:
            raise RackopsError("pass --profile P, or -i INVENTORY --node N to take the node's")
        profile = node_obj.profile
    return Context(
        load_profile(profile, inv_dir).profile,
        node_obj,
        cluster,
        load_suite(suite, inv_dir) if suite else None,
    )
