"""The InfiniBand fabric as one sweep from one node sees it (``ibdiagnet`` and ``perfquery
-x -l`` per switch), judged against the design: the subnet manager (exactly one master), every
inter-switch link's far end and rate, the stages ibdiagnet itself failed, and what grew on
every switch port between the sweeps before and after the pair rounds (by the host ports'
own rules, :func:`rackops.checks.phy.judge_counters`, through
:func:`rackops.checks.switchports.judge_switch`).

An ISL finding names the link by its leaf end and its designed far end (``Subject.peer``), so
the report's localisation makes both ends of one cable one culprit. Host cables are the node
checks' (``iblinkinfo``, cabling): the sweep only counts their switch-side errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from rackops.checks.cabling import ib_port_number, short
from rackops.checks.phy import PortSample, sample_ib
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster, Switch, Uplink
from rackops.parsers.ibdiagnet import DumpPort, Ibdiagnet, SubnetManager
from rackops.parsers.perfquery import PerfQuery

# the stages whose errors the sweep judges itself, from the files (not from the screen)
JUDGED_STAGES = ("Subnet Manager", "Speed / Width checks", "Port Counters")
# ibdiagnet's per-lane speed (LSA, Gb/s as printed) -> that lane's data rate
LANE_GBPS = {"2.5": 2.5, "5": 5, "10": 10, "14": 14, "25": 25, "50": 50, "100": 100, "200": 200}


@dataclass(frozen=True)
class Sweep:
    """One sweep's parsed files (None where a file could not be read)."""

    console: Ibdiagnet | None
    sm: Ibdiagnet | None
    dump: Ibdiagnet | None


def design_ports(sw: Switch) -> dict[int, str]:
    """IB port number -> the design's name of it (``1/2`` and ``2`` are both port 2)."""
    return {n: p for p in sw.ports if (n := ib_port_number(p)) is not None}


def dump_rows(dump: Ibdiagnet) -> dict[tuple[str, int], DumpPort]:
    """(design switch name, IB port) -> its net_dump row."""
    return {(short(p.switch), p.port): p for p in dump.ports}


def switch_lids(dump: Ibdiagnet) -> dict[str, int]:
    """design switch name -> its LID, as the sweep found it."""
    return {short(p.switch): p.switch_lid for p in dump.ports if p.switch_lid is not None}


def link_rate(row: DumpPort) -> float | None:
    lane = LANE_GBPS.get((row.speed or "").strip())
    width = (row.width or "").strip().lower().rstrip("x")
    return lane * int(width) if lane is not None and width.isdigit() else None


def judge_isls(cluster: Cluster, dump: Ibdiagnet) -> dict[str, list[Finding]]:
    """Every designed ISL, by its leaf end: there, to the designed spine port, at its rate.
    leaf -> findings."""
    rows = dump_rows(dump)
    out: dict[str, list[Finding]] = {}
    for leaf, up in cluster.isls():
        subj = Subject(
            switch=leaf.name, switch_port=up.port, peer=f"{up.spine} port {up.spine_port}"
        )
        where = f"{leaf.name} port {up.port} ↔ {up.spine} port {up.spine_port}"
        row = rows.get((leaf.name, ib_port_number(up.port) or -1))
        out.setdefault(leaf.name, []).append(_isl_finding(leaf, up, row, subj, where))
    return out


def _isl_finding(
    leaf: Switch, up: Uplink, row: DumpPort | None, subj: Subject, where: str
) -> Finding:
    if row is None or row.state.upper() not in ("ACT", "ACTIVE"):
        state = "not in the sweep" if row is None else f"{row.state}/{row.phys_state}"
        return Finding(
            "IBF-ISL-DOWN",
            Status.FAIL,
            subj,
            f"ISL {where}: the leaf port is {state}",
            remediation=f"reseat or replace the cable from {leaf.name} port {up.port} to "
            f"{up.spine} port {up.spine_port}; check both ports are enabled",
        )
    far, far_port = short(row.neighbor or ""), row.neighbor_port
    want_port = ib_port_number(up.spine_port)
    if far != up.spine.lower() or (want_port is not None and far_port != want_port):
        return Finding(
            "IBF-ISL-MISCABLED",
            Status.FAIL,
            subj,
            f"ISL {where}: the cable from {leaf.name} port {up.port} is in {far or '?'} "
            f"IB port {far_port}, not {up.spine} port {up.spine_port} (IB port {want_port})",
            remediation=f"move the cable to {up.spine} port {up.spine_port}, as designed",
            observed={"neighbor": row.neighbor, "neighbor_port": far_port},
        )
    rate, want = link_rate(row), float(leaf.uplink_speed(up))
    if rate is not None and rate < want:
        return Finding(
            "IBF-ISL-RATE",
            Status.FAIL,
            subj,
            f"ISL {where}: trained at {rate:g} Gb/s ({row.width} at {row.speed} Gb/s a "
            f"lane), the design says {want:g} Gb/s",
            remediation="check the cable and both ports' enabled speeds; replace the cable "
            "(a degraded lane trains a link down)",
            observed={"rate_gbps": rate, "width": row.width, "lane": row.speed},
        )
    return Finding("IBF-ISL-OK", Status.OK, subj, f"ISL {where}: up at {rate or '?'} Gb/s")


def _names(sweep: Sweep) -> dict[str, str]:
    """Port GUID -> its node description ("node01 mlx5_0"), from whatever the sweep says."""
    out: dict[str, str] = {}
    if sweep.dump is not None:
        out.update(
            {
                p.neighbor_guid: p.neighbor
                for p in sweep.dump.ports
                if p.neighbor_guid and p.neighbor
            }
        )
    if sweep.console is not None:
        out.update({s.guid: s.description for s in sweep.console.sms if s.description})
    return out


def _sm_name(sm: SubnetManager, names: dict[str, str]) -> str:
    desc = names.get(sm.guid)
    prio = f", priority {sm.priority}" if sm.priority is not None else ""
    return f"{desc or 'GUID ' + sm.guid} (LID {sm.lid}{prio})"


def judge_sm(sweep: Sweep) -> list[Finding]:
    """Exactly one master subnet manager, named with its priority and where it runs."""
    src = sweep.sm if sweep.sm is not None and sweep.sm.complete else sweep.console
    if src is None or not src.sm_reported:
        return [
            Finding(
                "IBF-SM",
                Status.ERROR,
                Subject(),
                "the sweep reported no subnet manager section (ibdiagnet2.sm unreadable and "
                "no 'Master SM' line on the console): the SM is not judged",
            )
        ]
    names = _names(sweep)
    masters = [s for s in src.sms if s.state == "master"]
    standby = [s for s in src.sms if s.state == "standby"]
    if len(masters) == 1:
        return [
            Finding(
                "IBF-SM",
                Status.OK,
                Subject(),
                f"one master subnet manager: {_sm_name(masters[0], names)}; {len(standby)} standby",
                observed={"masters": [_sm_name(masters[0], names)]},
            )
        ]
    if not masters:
        text = "no master subnet manager: nobody assigns LIDs or routes"
        fix = "start opensm (or enable the switch's SM) on one management port"
    else:
        text = (
            f"{len(masters)} master subnet managers: "
            + ", ".join(_sm_name(s, names) for s in masters)
            + " — they fight over LIDs and routes"
        )
        fix = "keep one SM master: stop the others, or give them a lower priority"
    return [
        Finding(
            "IBF-SM",
            Status.FAIL,
            Subject(),
            text,
            remediation=fix,
            observed={"masters": [_sm_name(s, names) for s in masters]},
        )
    ]


def judge_stages(console: Ibdiagnet) -> list[Finding]:
    """A stage ibdiagnet failed that the sweep does not judge from its files (duplicate
    GUIDs or LIDs, links, partitions, ...): a FAIL of the fabric, quoting its lines."""
    out = []
    for st in console.stages:
        if st.errors and st.name not in JUDGED_STAGES:
            lines = [m.text for m in console.messages if m.level == "E" and m.stage == st.name]
            out.append(
                Finding(
                    "IBF-STAGE",
                    Status.FAIL,
                    Subject(),
                    f"ibdiagnet stage '{st.name}': {st.errors} error(s)"
                    + (f": {'; '.join(lines[:3])}" if lines else ""),
                    remediation="see ibdiagnet2.log in the run directory for every line",
                )
            )
    return out


def switch_samples(sw: Switch, parsed: PerfQuery) -> dict[str, PortSample]:
    """``perfquery -x -l`` of one switch -> design port -> its sample."""
    names = design_ports(sw)
    return {names[b.port]: sample_ib(b) for b in parsed.ports if b.port in names}
