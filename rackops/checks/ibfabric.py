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
from rackops.checks.isls import LeafEnd, judge_isl
from rackops.checks.phy import PortSample, sample_ib
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster, Switch, Uplink
from rackops.parsers.ibdiagnet import DumpPort, Ibdiagnet, SubnetManager
from rackops.parsers.perfquery import PerfQuery

# the ibdiagnet stages about the fabric's identity and topology, whose errors no file the
# sweep reads shows (duplicate GUIDs, node descriptions or LIDs, link inconsistencies,
# partitions, routing). The SM, speed/width and counter stages are judged from the files, and
# host-side link stages (BER, cables) by the node checks: their errors are not repeated.
FABRIC_STAGES = ("discovery", "lids check", "links check", "partition keys", "routing")
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


@dataclass(frozen=True)
class Seen:
    """What one net_dump says of the switches, keyed by the design's short name of each
    (``MF0;leaf1-r0:MQM9790/U1`` and the inventory's ``Leaf1-R0.example.net`` are both
    ``leaf1-r0``). Two switches describing themselves alike (a director's ASICs, a cloned
    name) are ``duplicates``: no row of theirs is trusted, and they are not read."""

    rows: dict[tuple[str, int], DumpPort]
    guids: dict[str, str]
    lids: dict[str, int]
    duplicates: dict[str, tuple[str, ...]]


def seen(dump: Ibdiagnet) -> Seen:
    by_name: dict[str, set[str]] = {}
    lid_of: dict[str, int] = {}
    for p in dump.ports:
        by_name.setdefault(short(p.switch), set()).add(p.switch_guid)
        if p.switch_lid:
            lid_of[p.switch_guid] = p.switch_lid
    dups = {n: tuple(sorted(g)) for n, g in by_name.items() if len(g) > 1}
    guids = {n: next(iter(g)) for n, g in by_name.items() if len(g) == 1}
    lid_users: dict[int, int] = {}
    for g in guids.values():
        if g in lid_of:
            lid_users[lid_of[g]] = lid_users.get(lid_of[g], 0) + 1
    lids = {  # a LID two switches claim would read one of them as the other: neither
        n: lid_of[g] for n, g in guids.items() if g in lid_of and lid_users[lid_of[g]] == 1
    }
    rows = {(short(p.switch), p.port): p for p in dump.ports if short(p.switch) in guids}
    return Seen(rows, guids, lids, dups)


def switch_lids(dump: Ibdiagnet) -> dict[str, int]:
    """design short switch name -> its LID, for the switches the sweep can read alone."""
    return seen(dump).lids


def link_rate(row: DumpPort) -> float | None:
    lane = LANE_GBPS.get((row.speed or "").strip())
    width = (row.width or "").strip().lower().rstrip("x")
    return lane * int(width) if lane is not None and width.isdigit() else None


def judge_isls(cluster: Cluster, dump: Ibdiagnet) -> dict[str, list[Finding]]:
    """Every designed ISL, by its leaf end: there, to the designed spine port, at its rate.
    leaf -> findings."""
    view = seen(dump)
    out: dict[str, list[Finding]] = {}
    for leaf, up in cluster.isls():
        subj = Subject(
            switch=leaf.name, switch_port=up.port, peer=f"{up.spine} port {up.spine_port}"
        )
        where = f"{leaf.name} port {up.port} ↔ {up.spine} port {up.spine_port}"
        found = out.setdefault(leaf.name, [])
        name = short(leaf.name)
        if name in view.duplicates or name not in view.guids:
            if not any(f.code == "IBF-SWITCH" for f in found):
                found.append(_unseen(leaf.name, view))
            continue
        row = view.rows.get((name, ib_port_number(up.port) or -1))
        found.append(_isl_finding(leaf, up, row, view, subj, where))
    return out


def _unseen(name: str, view: Seen) -> Finding:
    dups = view.duplicates.get(short(name))
    if dups:
        text = (
            f"{name}: {len(dups)} switches in the sweep describe themselves as "
            f"{short(name)!r} (GUIDs {', '.join(dups[:4])}): its ports cannot be told apart; "
            "not judged"
        )
        fix = "give every switch its own node description (or name the design's by GUID)"
    else:
        names = ", ".join(sorted(view.guids)[:5])
        text = (
            f"{name}: no switch in the sweep describes itself so (seen: {names}"
            f"{', ...' if len(view.guids) > 5 else ''}); its ISLs and counters are not judged"
        )
        fix = "set the switch's node description to its inventory name, or rename it there"
    return Finding("IBF-SWITCH", Status.ERROR, Subject(switch=name), text, remediation=fix)


def _isl_finding(
    leaf: Switch, up: Uplink, row: DumpPort | None, view: Seen, subj: Subject, where: str
) -> Finding:
    if row is not None and row.state.upper() in ("INI", "INIT", "ARM", "ARMED"):
        return Finding(
            "IBF-ISL-INIT",
            Status.ERROR,
            subj,
            f"ISL {where}: trained ({row.phys_state}) but {row.state}: no subnet manager "
            "activated it; not judged",
            remediation="see the subnet manager finding; a running master SM activates it",
        )
    want_port = ib_port_number(up.spine_port)
    if want_port is None:
        return Finding(
            "IBF-ISL-NAME",
            Status.ERROR,
            subj,
            f"ISL {where}: {up.spine_port!r} says no IB port number, so where the cable "
            "lands is not checked (rackops lint: ISL006)",
            remediation="name the spine port as ibdiagnet labels it (N, IB1/N, P/S, 1/P/S)",
        )
    end = None
    if row is not None:
        spine_guid = view.guids.get(short(up.spine))
        same_switch = spine_guid is None or row.neighbor_guid in (None, spine_guid)
        end = LeafEnd(
            up=row.state.upper() in ("ACT", "ACTIVE"),
            state=f"{row.state}/{row.phys_state}",
            far=short(row.neighbor or "?") if same_switch else f"GUID {row.neighbor_guid}",
            far_port=f"IB port {row.neighbor_port}",
            far_port_ok=row.neighbor_port == want_port,
            rate_gbps=link_rate(row),
            rate_text=f"{row.width} at {row.speed} Gb/s a lane",
        )
    return judge_isl(leaf, up, end, short(up.spine))


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
    desc = (names.get(sm.guid) or "")[:64]
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
        more = f" and {len(masters) - 5} more" if len(masters) > 5 else ""
        text = (
            f"{len(masters)} master subnet managers: "
            + ", ".join(_sm_name(s, names) for s in masters[:5])
            + more
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
            observed={"masters": [_sm_name(s, names) for s in masters[:5]]},
        )
    ]


def judge_stages(console: Ibdiagnet) -> list[Finding]:
    """A fabric stage ibdiagnet failed (:data:`FABRIC_STAGES`): a FAIL of the fabric,
    quoting its lines."""
    out = []
    for st in console.stages:
        if st.errors and " ".join(st.name.lower().split()) in FABRIC_STAGES:
            lines = [
                m.text[:200] for m in console.messages if m.level == "E" and m.stage == st.name
            ]
            out.append(
                Finding(
                    "IBF-STAGE",
                    Status.FAIL,
                    Subject(),
                    f"ibdiagnet stage '{st.name[:64]}': {st.errors} error(s)"
                    + (f": {'; '.join(lines[:3])}" if lines else ""),
                    remediation="see ibdiagnet2.log in the run directory for every line",
                )
            )
    return out


def switch_samples(sw: Switch, parsed: PerfQuery) -> dict[str, PortSample]:
    """``perfquery -x -l`` of one switch -> design port -> its sample."""
    names = design_ports(sw)
    return {names[b.port]: sample_ib(b) for b in parsed.ports if b.port in names}
