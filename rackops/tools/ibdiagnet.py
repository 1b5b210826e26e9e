"""ibdiagnet: the InfiniBand fabric sweep from one node — every switch port, the subnet
manager, link speed and width (`rackops parse|check ibdiagnet` on its console output, its
``ibdiagnet2.log``, ``ibdiagnet2.sm`` or ``ibdiagnet2.net_dump``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.parsers.ibdiagnet import Endpoint, Ibdiagnet, Message, parse_ibdiagnet
from rackops.tools.base import Binary, Context, Tool


def _where(e: Endpoint) -> str:
    return e.node if e.port is None else f"{e.node} port {e.port}"


def _subject(node: str | None, msg: Message) -> Subject:
    first = msg.ends[0] if msg.ends else None
    peer = _where(msg.ends[1]) if len(msg.ends) > 1 else None
    return Subject(
        node=node,
        switch=first.node if first else None,
        switch_port=str(first.port) if first and first.port is not None else None,
        peer=peer,
    )


def _message_finding(node: str | None, msg: Message) -> Finding:
    link = " ↔ ".join(_where(e) for e in msg.ends)
    if msg.kind == "link_speed":
        text = f"{link}: trained at {msg.actual} Gb/s per lane, below what both ends support"
        fix = "reseat or replace the cable; check both ports' speed settings"
    elif msg.kind == "link_width":
        text = f"{link}: trained at width {msg.actual}, below what both ends support"
        fix = "a lane is down: reseat or replace the cable"
    elif msg.kind == "counter":
        text = (
            f"{link}: {msg.counter} grew by {msg.value} during the sweep (allowed {msg.threshold})"
        )
        fix = "clean or replace the optic/cable of this port"
    else:
        text, fix = f"{msg.stage}: {msg.text}", ""
    status = Status.FAIL if msg.level == "E" else Status.WARN
    code = {"link_speed": "IBD-SPEED", "link_width": "IBD-WIDTH", "counter": "IBD-COUNTER"}
    return Finding(
        code.get(msg.kind, "IBD-E" if msg.level == "E" else "IBD-W"),
        status,
        _subject(node, msg),
        text + (f" — {fix}" if fix else ""),
    )


def sm_findings(parsed: Ibdiagnet, node: str | None) -> list[Finding]:
    """Exactly one master SM: none leaves the fabric unconfigured after any change, two fight
    over it (each re-sweeps and reprograms the routes)."""
    if not parsed.sm_reported:
        return []
    masters = parsed.masters
    if len(masters) == 1:
        m = masters[0]
        who = m.description or m.guid
        return [
            Finding(
                "IBD-SM",
                Status.OK,
                Subject(node=node),
                f"one master SM: {who} (LID {m.lid}, priority {m.priority})",
            )
        ]
    if not masters:
        text = (
            "no master subnet manager: start opensm (or the switch SM) on the node meant to run it"
        )
    else:
        names = ", ".join(f"{m.description or m.guid} (priority {m.priority})" for m in masters)
        text = (
            f"{len(masters)} master subnet managers: {names} — keep one (highest priority), "
            "stop the others or make them standby"
        )
    return [Finding("IBD-SM", Status.FAIL, Subject(node=node), text)]


def _stage_findings(parsed: Ibdiagnet, node: str | None) -> list[Finding]:
    """A stage whose errors the screen did not show (its cap is 5 per check) is still
    failed, by the Summary's count."""
    shown = Counter(m.stage for m in parsed.messages if m.level == "E" and m.kind != "status")
    out = []
    for st in parsed.stages:
        if st.errors > shown.get(st.name, 0):
            out.append(
                Finding(
                    "IBD-STAGE",
                    Status.FAIL,
                    Subject(node=node),
                    f"ibdiagnet stage {st.name!r}: {st.errors} error(s), "
                    f"{st.errors - shown.get(st.name, 0)} not shown on screen — read "
                    "ibdiagnet2.log for them",
                )
            )
    return out


def _dump_findings(parsed: Ibdiagnet, node: str | None) -> list[Finding]:
    """Every active link at the fabric's usual width and speed: the odd one is named."""
    active = [p for p in parsed.ports if p.state.upper().startswith("ACT")]
    if not active:
        return []
    usual = Counter((p.width, p.speed) for p in active).most_common(1)[0][0]
    out = []
    for p in active:
        if (p.width, p.speed) != usual:
            out.append(
                Finding(
                    "IBD-RATE",
                    Status.FAIL,
                    Subject(
                        node=node,
                        switch=p.switch,
                        switch_port=str(p.port),
                        peer=p.neighbor,
                    ),
                    f"{p.switch} port {p.port} ↔ {p.neighbor or p.neighbor_guid}: "
                    f"{p.width} at {p.speed} Gb/s per lane, the fabric's other links "
                    f"{usual[0]} at {usual[1]} — reseat or replace the cable",
                )
            )
    return out


def check(parsed: Any, ctx: Context, node: str | None) -> list[Finding]:
    assert isinstance(parsed, Ibdiagnet)
    out = [
        _message_finding(node, m)
        for m in parsed.messages
        if m.kind != "status" and (m.kind != "other" or m.level == "E")
    ]
    out += _stage_findings(parsed, node) + sm_findings(parsed, node) + _dump_findings(parsed, node)
    if not parsed.complete:
        why = "; ".join(parsed.errors[:3]) or "cut off"
        out.append(
            Finding("PARSE-000", Status.ERROR, Subject(node=node), f"ibdiagnet output: {why}")
        )
    elif not out:
        what = {"console": "no error in any stage", "net_dump": "every active link alike"}
        out.append(
            Finding("IBD-OK", Status.OK, Subject(node=node), f"ibdiagnet: {what[parsed.kind]}")
        )
    return out


# how a run sweeps: ibdiagnet writes its files into a fresh directory, exits 1 when it found
# fabric errors (its console says whether it finished), and the run reads two of its files
SWEEP_EXIT_CODES = (0, 1)
SWEEP_FILES = ("sm", "net_dump")


def sweep_argv(out_dir: str) -> list[str]:
    """The sweep of the whole fabric, its files (ibdiagnet2.*) written into ``out_dir``."""
    return ["ibdiagnet", "-o", out_dir]


def file_argv(out_dir: str, name: str) -> list[str]:
    """Read one of the sweep's files (``ibdiagnet2.<name>``, a name of SWEEP_FILES)."""
    if name not in SWEEP_FILES:
        raise ValueError(f"ibdiagnet2.{name} is not a file the run reads")
    return ["cat", f"{out_dir}/ibdiagnet2.{name}"]


TOOL = Tool(
    "ibdiagnet",
    "InfiniBand fabric sweep (subnet manager, links, switch port counters)",
    parse=parse_ibdiagnet,
    fabric_wide=True,
    check=check,
    binaries=(Binary("ibdiagnet", "ibutils2"),),
)
