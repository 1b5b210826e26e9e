"""The switches' own view of their ports: counters read from each leaf and spine before and
after the pair rounds, judged by the same rules as the host ports (:mod:`rackops.checks.phy`)
and named by the cable on the port — a host's HCA from the cabling map, or the other end of
an inter-switch link from the leaves' uplinks.

Each NOS prints its counters its own way (:mod:`rackops.parsers.sonic_counters`,
``nvue_counters``, ``eos_counters``); :func:`samples` turns one switch's outputs into one
:class:`~rackops.checks.phy.PortSample` per port, in the normalised names the rules read
(``crc_errors``, ``symbol_errors``, ``rx_discards``, ``xmit_discards``, ``rx_pkts``, ...).
"""

from __future__ import annotations

import re
from typing import Any

from rackops.checks.cabling import short
from rackops.checks.isls import LeafEnd, judge_isl
from rackops.checks.phy import PortReport, PortSample, judge_counters
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster, Switch
from rackops.parsers.eos_counters import EosCounters
from rackops.parsers.nvue_counters import NvueCounters
from rackops.parsers.sonic_counters import SonicCounters
from rackops.parsers.switch_ports import PortView, SwitchPorts
from rackops.profiles import PhyThresholds

# normalised counter -> the NOS's own name (what a finding quotes)
SONIC_NAMES = {
    "crc_errors": "RX_ERR",
    "rx_discards": "RX_DRP",
    "xmit_discards": "TX_DRP",
    "rx_pkts": "RX_OK",
    "tx_pkts": "TX_OK",
    "symbol_errors": "FEC_UNCORR",
    "fec_corrected": "FEC_CORR",
}
NVUE_NAMES = {
    "crc_errors": "Error Counters.FCS Errors.Receive",
    "symbol_errors": "Error Counters.Symbol Errors.Receive",
    "rx_discards": "Drop Counters.Total Drops.Receive",
    "xmit_discards": "Drop Counters.Total Drops.Transmit",
    "rx_pkts": "Detailed Counters.Total Packets.Receive",
    "tx_pkts": "Detailed Counters.Total Packets.Transmit",
    "rx_bytes": "Detailed Counters.Total Octets.Receive",
    "tx_bytes": "Detailed Counters.Total Octets.Transmit",
}
EOS_NAMES = {
    "crc_errors": "fcsErrors",
    "symbol_errors": "symbolErrors",
    "rcv_errors": "inErrors",
    "rx_discards": "inDiscards",
    "xmit_discards": "outDiscards",
}
NAMES = {"sonic": SONIC_NAMES, "cumulus": NVUE_NAMES, "eos": EOS_NAMES}


class _Reads:
    """One switch's counters as read: port -> normalised counter -> count, and per port the
    counters printed as something other than a count (never dropped: the port's judgement
    is an ERROR that names them)."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}
        self.garbled: dict[str, list[str]] = {}

    def put(self, port: str, key: str, v: Any) -> None:
        if v is None:
            return  # not printed (n/a): not exposed, which the port's judgement says
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            self.counts.setdefault(port, {})[key] = v
        else:  # 5000.0, a word, a negative count: printed, but not a count
            self.garbled.setdefault(port, []).append(key)


def _sonic(p: SonicCounters, prio: int, out: _Reads) -> None:
    by_name = {v: k for k, v in SONIC_NAMES.items()}
    for port, row in p.ports.items():
        for name, v in row.items():
            if name in by_name:
                out.put(port, by_name[name], v)
        for d in ("rx", "tx"):
            out.put(port, f"pause_{d}_p{prio}", row.get(f"{d}_PFC{prio}"))
    for port, queues in p.queues.items():
        marked = [
            q.get("EcnMarked/pkts", q.get("ecnmarkedpacket"))
            for name, q in queues.items()
            if name == f"UC{prio}"
        ]
        if marked:
            out.put(port, "ecn_marked", marked[0])


def _nvue(port: str, p: NvueCounters, prio: int, out: _Reads) -> None:
    for key, name in NVUE_NAMES.items():
        out.put(port, key, p.values.get(name))
    for d in ("rx", "tx"):
        out.put(port, f"pause_{d}_p{prio}", p.values.get(f"{d}-stats.{d}-pfc-stats.pause-packets"))
    out.put(port, "ecn_marked", p.values.get("tx-stats.tx-ecn-stats.ecn-marked-packets"))


def _eos(p: EosCounters, prio: int, out: _Reads) -> None:
    by_name = {v: k for k, v in EOS_NAMES.items()}
    for port, row in p.ports.items():
        for name, v in row.items():
            if name in by_name:
                out.put(port, by_name[name], v)
        if p.kind == "pfc":
            out.put(port, f"pause_rx_p{prio}", row.get("rxFrames"))
            out.put(port, f"pause_tx_p{prio}", row.get("txFrames"))
    if p.kind == "ecn":
        for port, queues in p.queues.items():
            out.put(port, "ecn_marked", queues.get(str(prio)))


def samples(
    sw: Switch, outputs: list[tuple[str, Any]], roce_priority: int
) -> dict[str, PortSample]:
    """One switch's parsed outputs → its ports' samples. ``outputs``: (the port an NVUE output
    is of, or "", parsed). Only the design's ports are kept (the rest carry no cable)."""
    reads = _Reads()
    for port, parsed in outputs:
        if isinstance(parsed, SonicCounters):
            _sonic(parsed, roce_priority, reads)
        elif isinstance(parsed, NvueCounters):
            _nvue(port, parsed, roce_priority, reads)
        elif isinstance(parsed, EosCounters):
            _eos(parsed, roce_priority, reads)
    ports = (set(reads.counts) | set(reads.garbled)) & set(sw.ports)
    return {
        p: PortSample(
            sw.os, reads.counts.get(p, {}), garbled=tuple(sorted(reads.garbled.get(p, ())))
        )
        for p in ports
    }


def cables(cluster: Cluster, sw: Switch) -> dict[str, Subject]:
    """The switch's cabled ports, each with what its cable reaches: a host's HCA, or the far
    end of an inter-switch link (the design's index of its cables, built once a run)."""
    out = {
        c.port: Subject(node=c.node, hca=c.hca, switch=sw.name, switch_port=c.port, peer=c.peer)
        for c in cluster.cables(sw.name)
    }
    return {p: out[p] for p in sw.ports if p in out}


def judge_switch(
    cluster: Cluster,
    sw: Switch,
    before: dict[str, PortSample],
    after: dict[str, PortSample],
    phy: PhyThresholds,
    interval_s: float,
) -> tuple[list[Finding], dict[str, PortReport]]:
    """Every cabled port of the switch: what grew on it during the run."""
    out: list[Finding] = []
    reports: dict[str, PortReport] = {}
    for port, subj in cables(cluster, sw).items():
        if port not in before or port not in after:
            when = "before" if port not in before else "after"
            out.append(
                Finding(
                    "SWP-001",
                    Status.ERROR,
                    subj,
                    f"{sw.name} port {port}: not in the switch's counters read {when} the run",
                    remediation="check the port name against the switch (breakout, naming) "
                    "and that the read was whole",
                )
            )
            continue
        reports[port] = PortReport()
        found = judge_counters(
            before[port],
            after[port],
            subj,
            phy,
            interval_s,
            reports[port],
            float(sw.port_speed_gbps),
            NAMES.get(sw.os),
        )
        out += found or [
            Finding("SWP-000", Status.OK, subj, f"{sw.name} port {port}: no error grew")
        ]
    return out, reports


# --- what a RoCE leaf says is at its uplinks: its LLDP neighbours and interface status ------

_MAC = re.compile(r"^[0-9a-f]{2}([:.-]?[0-9a-f]{2}){5}$|^[0-9a-f]{4}(\.[0-9a-f]{4}){2}$", re.I)


def port_views(parsed: list[SwitchPorts]) -> dict[str, PortView]:
    """One switch's port-view outputs (LLDP, status, or both in one) merged per port."""
    out: dict[str, PortView] = {}
    for p in parsed:
        for port, v in p.ports.items():
            old = out.get(port, PortView())
            out[port] = PortView(
                v.speed_gbps if v.speed_gbps is not None else old.speed_gbps,
                v.oper or old.oper,
                v.neighbors or old.neighbors,
            )
    return out


def _far_port_ok(sent: str, designed: str) -> bool | None:
    if _MAC.match(sent.strip()):
        return None  # the neighbour sends its MAC as port ID: no port name to compare
    return sent.strip().lower() == designed.strip().lower()


def judge_uplinks(cluster: Cluster, sw: Switch, views: dict[str, PortView]) -> list[Finding]:
    """The leaf's uplinks by its own view: up, to the designed spine port, at their rate."""
    out = []
    for leaf, up in cluster.isls():
        if leaf.name != sw.name:
            continue
        v = views.get(up.port)
        end = None
        if v is not None:
            n = next(
                (x for x in v.neighbors if short(x.system) == short(up.spine)),
                v.neighbors[0] if v.neighbors else None,
            )
            end = LeafEnd(
                # no status read (LLDP only): a neighbour heard is a link up
                up=(v.oper or "").lower() == "up" or (v.oper is None and bool(v.neighbors)),
                state=v.oper or "in no state",
                far=short(n.system) or "?" if n is not None else None,
                far_port=f"port {n.port}" if n is not None else None,
                far_port_ok=_far_port_ok(n.port, up.spine_port) if n is not None else None,
                rate_gbps=v.speed_gbps,
                rate_text=f"{v.speed_gbps:g}G" if v.speed_gbps is not None else "no speed",
            )
        out.append(judge_isl(leaf, up, end, short(up.spine)))
    return out
