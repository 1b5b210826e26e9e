"""Multi-node NCCL across an NVLink domain's trays, from NCCL's own log: every rank's
communicator used MNNVL, its GPUs were in one fabric clique, and every channel between two
trays went over NVLink (``via P2P/MNNVL``), not the network (``via NET/…``).

A busbw at the MNNVL floor is not proof on its own: a domain whose fabric or IMEX failed
falls back to the NICs, and a small domain's NICs can carry a mid-size message fast enough to
pass. The log can say it (NCCL_DEBUG=INFO, subsystem INIT: the lines of
``parsers/nccl_debug.py``); this judges it. A tray is named by the host name NCCL printed when
it is one of the run's nodes; else the run's nodes are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from rackops.findings import Finding, Status, Subject
from rackops.parsers.nccl_debug import Channel, NcclDebug

FIX_FABRIC = (
    "check the tray's fabric partition (nvidia-smi -q: Fabric, CliqueId, ClusterUUID) and its "
    "IMEX daemon (nvidia-imex-ctl -N, /dev/nvidia-caps-imex-channels); NCCL_MNNVL_ENABLE must "
    "not be 0"
)


def judge_mnnvl(log: NcclDebug, nodes: Sequence[str], *, stage: bool = True) -> list[Finding]:
    """Findings for one multi-node NCCL run over the trays ``nodes`` of one domain
    (``stage``: they are the run's own nodes, each of which must show in the log; False when
    they were read out of the log itself)."""
    group = Subject(node=",".join(nodes))
    known = set(nodes)

    def who(hosts: set[str]) -> Subject:
        named = sorted(hosts & known)
        return Subject(node=",".join(named)) if named and len(named) < len(known) else group

    if not log.comms:
        return [
            Finding(
                "NCCL-MNNVL-000",
                Status.ERROR,
                group,
                "NCCL's log has no communicator line (comm … MNNVL): whether the traffic "
                "stayed on NVLink is not shown",
                remediation="run NCCL with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS including INIT",
            )
        ]
    out: list[Finding] = []
    if not log.complete:
        out.append(
            Finding(
                "NCCL-MNNVL-000",
                Status.ERROR,
                group,
                "NCCL's log is cut (its last line ends mid-way): what it would have said is not "
                "known",
            )
        )
    if len(known) < 2:  # proves nothing about a domain: never a pass
        return out or [
            Finding(
                "NCCL-MNNVL-000",
                Status.WARN,
                group,
                "NCCL ran on one node: no traffic between trays to judge",
            )
        ]
    host_of = {c.rank: c.host for c in log.comms}
    ranks = max(c.ranks for c in log.comms)
    trays = {c.host for c in log.comms}
    out += _coverage(ranks, host_of, sorted(known - trays) if stage else [], group)
    if log.warnings:
        out.append(
            Finding(
                "NCCL-MNNVL-001",
                Status.FAIL,
                group,
                f"NCCL: {log.warnings[0]}",
                remediation=FIX_FABRIC,
                action="switch",
            )
        )
    off = {c.host for c in log.comms if not c.mnnvl}
    if off:
        out.append(
            Finding(
                "NCCL-MNNVL-001",
                Status.FAIL,
                who(off),
                f"NCCL did not use MNNVL on {len(off)} of {len(trays)} trays "
                f"({', '.join(sorted(off))}: comm … MNNVL 0): their traffic went over the NICs",
                remediation=FIX_FABRIC,
            )
        )
    out += _apart(log, ranks, who, group)
    out += _channels(log, host_of, who, group)
    if out:
        return out
    between = _between(log, host_of)
    said = (
        f"; all {len(between)} channels between trays via P2P/MNNVL"
        if between
        else "; NCCL printed no channel between trays"
    )
    return [
        Finding(
            "NCCL-MNNVL-OK",
            Status.OK,
            group,
            f"NCCL used MNNVL on all {ranks} ranks of {len(trays)} trays{said}",
        )
    ]


Who = Callable[[set[str]], Subject]


def _apart(log: NcclDebug, ranks: int, who: Who, group: Subject) -> list[Finding]:
    """GPUs NCCL saw outside the domain's fabric clique, or a clique short of the ranks."""
    out = []
    joined = [g for g in log.fabric if g.state == 3 and g.uuid != "0.0"]
    if joined:
        parts = Counter((g.uuid, g.clique) for g in joined)
        (major, _n), *_ = parts.most_common()
        apart = {g.host for g in log.fabric if (g.uuid, g.clique) != major or g.state != 3}
        if apart:
            out.append(
                Finding(
                    "NCCL-MNNVL-003",
                    Status.FAIL,
                    who(apart),
                    f"NCCL saw GPUs of {', '.join(sorted(apart))} outside the domain's fabric "
                    f"clique (UUID {major[0]}, clique 0x{major[1]:x}): they cannot reach the "
                    "others over NVLink",
                    remediation=FIX_FABRIC,
                )
            )
    small = [(h, size) for h, on, _c, size in log.cliques if on and size < ranks]
    if small and not out:
        out.append(
            Finding(
                "NCCL-MNNVL-003",
                Status.FAIL,
                group,
                f"NCCL's MNNVL clique holds {min(s for _h, s in small)} of the {ranks} ranks: "
                "the rest reached it over the network",
                remediation=FIX_FABRIC,
            )
        )
    return out


def _between(log: NcclDebug, host_of: dict[int, str]) -> list[Channel]:
    """The channels between ranks on two different trays."""
    return [
        ch
        for ch in log.channels
        if ch.src in host_of and ch.dst in host_of and host_of[ch.src] != host_of[ch.dst]
    ]


def _channels(log: NcclDebug, host_of: dict[int, str], who: Who, group: Subject) -> list[Finding]:
    """Channels between trays that went over the network, not P2P/MNNVL."""
    between = _between(log, host_of)
    net = [ch for ch in between if not ch.via.startswith("P2P/MNNVL")]
    if not net:
        return []
    ends: Counter[str] = Counter()
    for ch in net:
        ends.update({host_of[ch.src], host_of[ch.dst]})
    common = {h for h, n in ends.items() if n == len(net)}
    vias = sorted({"/".join(ch.via.split("/")[:2]) for ch in net})
    return [
        Finding(
            "NCCL-MNNVL-002",
            Status.FAIL,
            who(common) if common else group,
            f"{len(net)} of {len(between)} NCCL channels between trays went via "
            f"{', '.join(vias)}, not P2P/MNNVL"
            + (f": every one of them to or from {', '.join(sorted(common))}" if common else ""),
            remediation=FIX_FABRIC,
        )
    ]


def _ranks(ranks: list[int]) -> str:
    """``0-3, 8`` for a sorted list of ranks (at most 20 shown)."""
    spans: list[list[int]] = []
    for r in ranks:
        if spans and r == spans[-1][1] + 1:
            spans[-1][1] = r
        else:
            spans.append([r, r])
    said = [f"{a}-{b}" if b > a else str(a) for a, b in spans[:20]]
    return ", ".join(said) + (" …" if len(spans) > 20 else "")


def _coverage(
    ranks: int, host_of: dict[int, str], unseen: list[str], group: Subject
) -> list[Finding]:
    """The log shows the whole run: every rank's communicator line, a line from every node."""
    missing = sorted(set(range(ranks)) - set(host_of))
    if not missing and not unseen:
        return []
    parts = []
    if missing:
        parts.append(f"no communicator line of rank(s) {_ranks(missing)} of {ranks}")
    if unseen:
        parts.append(f"no line from {', '.join(unseen)}")
    return [
        Finding(
            "NCCL-MNNVL-000",
            Status.ERROR,
            group,
            "NCCL's log does not show the whole run: "
            + "; ".join(parts)
            + " (every rank prints one: a log cut, or ranks that never started)",
            remediation="run NCCL with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS including INIT "
            "on every rank, and keep all of their output",
        )
    ]
