"""ibdiagnet (ibutils2, 2.x): the fabric sweep from one node — its console output (or
``ibdiagnet2.log``, the same lines without the screen's cap), ``ibdiagnet2.sm`` and
``ibdiagnet2.net_dump``. One parser reads all three; the first lines say which it is.

Console / log::

    Running version: "IBDIAGNET 2.7.0.MLNX20210617.4883fca","IBDIAG 2.1.1.4883fca",...
    ---------------------------------------------
    Speed / Width checks
    -E- Link: sw041/U1/P24<-->S900a...40/N900a...40/P49 - Unexpected width, actual link ...
    ...
    Master SM: Port=1 LID=10 GUID=0x98039b0300952b30 devid=4123 Priority:15 Node_Type=CA ...
    Standby SM : No Standby SM
    ---------------------------------------------
    Summary
    -I- Stage                               Warnings   Errors     Comment
    -I- Speed / Width checks                0          15

The Summary table is printed last: a run without it was cut (or ibdiagnet died), and is
never complete. The screen shows at most ``--screen_num_errs`` (default 5) detail lines per
check, so the Summary's counts can exceed the ``-E-`` lines; the log has them all.

``ibdiagnet2.sm``: ``SM - <state>`` groups of ``Port=0 lid=0x0004 guid=0x... dev=54000
priority:15`` lines (a fabric with no SM has the report with no group). ``ibdiagnet2.net_dump``:
per switch a ``"<NodeDesc>", <vendor>, <guid>, LID <lid>`` line, a ``#`` header naming the
``:``-separated columns (``IB# : Sta : PhysSta : MTU : LWA : LSA : ...``), one row per port.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rackops.parsers._common import ParseError, bounded, check_limits, to_int
from rackops.scale import DEFAULT, Limits

_VERSION = re.compile(r'^Running version\s*:?\s*"IBDIAGNET ([0-9][^"]*)"')
_OLD_RUNNING = re.compile(r"^Running:\s*ibdiagnet\b")
_RULE = re.compile(r"^-{20,}\s*$")
_MSG = re.compile(r"^-([EWI])-\s*(.*?)\s*$")
_SUMMARY_HEADER = re.compile(r"^-I-\s+Stage\s+Warnings\s+Errors(\s+Comment)?\s*$")
_SUMMARY_ROW = re.compile(r"^-I-\s+(\S.*?)\s+(\d+)\s+(\d+)(?:\s+(\S.*?))?\s*$")
_LINKS_AT = re.compile(r"^Links at\s+(\d+x[\d.]+|\S+)\s*:\s*(\d+)\s*$")
_SM_LINE = re.compile(
    r"^(Master|Standby) SM\s*:\s*Port=(\d+)\s+LID=(\d+)\s+GUID=(0x[0-9a-fA-F]+)"
    r"(?:\s+devid=(\d+))?(?:\s+Priority:(\d+))?(?:\s+Node_Type=(\S+))?"
    r"(?:\s+Node_Description=(.*?))?\s*$"
)
_NO_SM = re.compile(r"^(Master|Standby) SM\s*:\s*No (Master|Standby) SM\s*$", re.I)
_LINK = re.compile(r"^Link:\s*(?P<a>\S+)<-->(?P<b>\S+)\s+-\s+(?P<what>.*)$")
_SPEED = re.compile(r"Unexpected actual link speed\s+(\S+)")
_WIDTH = re.compile(r"Unexpected width, actual link width is\s+(\d+x)")
_COUNTER = re.compile(
    r'^(?P<port>\S+)\s+-\s+"(?P<counter>[A-Za-z0-9_]+)"\s+increased during the run\s+'
    r"\(difference value=(?P<value>\d+),\s*difference allowed threshold=(?P<thr>\d+)\)"
)
_STATUS = re.compile(r"finished (with (errors|warnings)|successfully)\s*$")
_SM_REPORT = re.compile(r"^ibdiagnet fabric SM report\s*$")
_SM_GROUP = re.compile(r"^SM\s*-\s*([A-Za-z-]+)\s*$")
_SM_ENTRY = re.compile(
    r"^Port=(\d+)\s+lid=(0x[0-9a-fA-F]+|\d+)\s+guid=(0x[0-9a-fA-F]+)"
    r"(?:\s+dev=(\d+))?(?:\s+priority:(\d+))?\s*$"
)
_SWITCH = re.compile(
    r'^"(?P<desc>[^"]*)",\s*(?P<vendor>[^,]*),\s*(?P<guid>0x[0-9a-fA-F]+),\s*LID\s+(?P<lid>\d+)\s*$'
)
_ENDPOINT = re.compile(r"^(?P<node>.+?)/P(?P<port>\d+)$")
_GUID_NODE = re.compile(r"^S([0-9a-fA-F]{1,16})/N([0-9a-fA-F]{1,16})$")
MAX_IB_PORT = 255  # a port number is 8 bits
MAX_UNICAST_LID = 0xBFFF
WIDTHS = ("1x", "2x", "4x", "8x", "12x")
MAX_NODE_DESC = 64  # NodeDescription is 64 bytes


@dataclass(frozen=True)
class Endpoint:
    """A port as ibdiagnet names it: ``<desc>/U1/P24`` or ``S<sys guid>/N<node guid>/P49``."""

    node: str
    port: int | None
    guid: str | None = None  # the node GUID when the name carries it


@dataclass(frozen=True)
class Message:
    level: str  # E | W
    stage: str
    text: str
    kind: str = "other"  # link_speed | link_width | link | counter | status | other
    ends: tuple[Endpoint, ...] = ()
    actual: str | None = None  # the link's speed (Gb/s per lane) or width
    counter: str | None = None
    value: int | None = None
    threshold: int | None = None


@dataclass(frozen=True)
class Stage:
    name: str
    warnings: int
    errors: int
    comment: str = ""


@dataclass(frozen=True)
class SubnetManager:
    state: str  # master | standby | discovering | not-active
    port: int
    lid: int
    guid: str
    priority: int | None = None
    devid: int | None = None
    node_type: str | None = None
    description: str | None = None


@dataclass(frozen=True)
class DumpPort:
    """One row of ibdiagnet2.net_dump."""

    switch: str
    switch_guid: str
    port: int
    state: str
    phys_state: str
    width: str | None
    speed: str | None  # per lane, as printed (50 = HDR, 100 = NDR)
    neighbor_guid: str | None
    neighbor_port: int | None
    neighbor: str | None
    switch_lid: int | None = None


@dataclass(frozen=True)
class Ibdiagnet:
    kind: str  # console | sm | net_dump
    complete: bool
    version: str | None = None
    stages: tuple[Stage, ...] = ()
    messages: tuple[Message, ...] = ()
    links_at: dict[str, int] = field(default_factory=dict)
    sms: tuple[SubnetManager, ...] = ()
    sm_reported: bool = False  # the console's Fabric Summary (or the .sm file) had the SM lines
    ports: tuple[DumpPort, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def masters(self) -> list[SubnetManager]:
        return [s for s in self.sms if s.state == "master"]


def _guid(text: str) -> str:
    return f"0x{int(text, 16):016x}"


def endpoint(text: str) -> Endpoint:
    """ibdiagnet's name of a port (or of a node, without ``/P<n>``)."""
    m = _ENDPOINT.match(text)
    node, port = (m.group("node"), int(m.group("port"))) if m else (text, None)
    g = _GUID_NODE.match(node)
    return Endpoint(node, port, _guid(g.group(2)) if g else None)


def _message(level: str, stage: str, text: str) -> Message:
    if m := _LINK.match(text):
        ends = (endpoint(m.group("a")), endpoint(m.group("b")))
        if s := _SPEED.search(m.group("what")):
            return Message(level, stage, text, "link_speed", ends, actual=s.group(1))
        if w := _WIDTH.search(m.group("what")):
            return Message(level, stage, text, "link_width", ends, actual=w.group(1))
        return Message(level, stage, text, "link", ends)
    if c := _COUNTER.match(text):
        return Message(
            level,
            stage,
            text,
            "counter",
            (endpoint(c.group("port")),),
            counter=c.group("counter"),
            value=int(c.group("value")),
            threshold=int(c.group("thr")),
        )
    if _STATUS.search(text):
        return Message(level, stage, text, "status")  # a check's own result line
    return Message(level, stage, text)


def _sane(sm: SubnetManager) -> bool:
    """An SM entry whose numbers a real fabric can have (a forged or garbled one is refused)."""
    return (
        sm.port <= MAX_IB_PORT
        and sm.lid <= MAX_UNICAST_LID
        and (sm.priority is None or sm.priority <= 15)
        and (sm.devid is None or sm.devid <= 0xFFFF)
        and len(sm.description or "") <= MAX_NODE_DESC
    )


def _sm_line(m: re.Match[str]) -> SubnetManager:
    desc = m.group(8)
    return SubnetManager(
        state=m.group(1).lower(),
        port=int(m.group(2)),
        lid=int(m.group(3)),
        guid=_guid(m.group(4)),
        priority=int(m.group(6)) if m.group(6) else None,
        devid=int(m.group(5)) if m.group(5) else None,
        node_type=m.group(7),
        description=desc.strip() if desc else None,
    )


def _console(lines: list[str], limits: Limits) -> Ibdiagnet:
    version, stage, after_rule = None, "", False
    started = False  # the first line of a run: "Running version: ..." (2.7+) or "Running: ..."
    stages: list[Stage] = []
    messages: list[Message] = []
    links_at: dict[str, int] = {}
    sms: list[SubnetManager] = []
    sm_reported, in_summary, summary_header, tail = False, False, False, False
    errors: list[str] = []
    for line in lines:
        if not line:
            continue
        if v := _VERSION.match(line):
            version, started = v.group(1), True
            continue
        if _OLD_RUNNING.match(line):
            started = True
            continue
        if _RULE.match(line):
            after_rule = True
            continue
        if after_rule and not line.startswith("-"):
            stage, after_rule = line, False
            in_summary = stage == "Summary"
            continue
        after_rule = False
        if in_summary:
            if _SUMMARY_HEADER.match(line):
                summary_header = True
            elif line.startswith("-I- You can find detailed"):
                tail = True
            elif summary_header and not tail and (r := _SUMMARY_ROW.match(line)):
                stages.append(Stage(r.group(1), int(r.group(2)), int(r.group(3)), r.group(4) or ""))
            continue
        if m := _SM_LINE.match(line):
            sm = _sm_line(m)
            if _sane(sm):
                sms.append(sm)
            else:
                errors.append(f"an SM line with impossible values: {line[:120]}")
            sm_reported = True
        elif _NO_SM.match(line):
            sm_reported = True
        elif la := _LINKS_AT.match(line):
            links_at[la.group(1)] = int(la.group(2))
        elif (msg := _MSG.match(line)) and msg.group(1) in "EW":
            messages.append(_message(msg.group(1), stage, msg.group(2)))
        if len(messages) > limits.count:
            raise limits.refuse(len(messages), "ibdiagnet messages")
    if not (stages or messages or started or sms or any(_MSG.match(x) for x in lines)):
        raise ParseError("no ibdiagnet stage, message or Summary found")
    complete = bool(stages) and started and not errors
    if not stages:
        errors.append("no Summary table: the run was cut off, or ibdiagnet died before its end")
    if not started:
        errors.append("no 'Running' line: the top of the output is missing")
    return Ibdiagnet(
        "console",
        complete,
        version,
        tuple(stages),
        tuple(messages),
        links_at,
        tuple(sms),
        sm_reported,
        errors=tuple(errors),
    )


def _sm_file(lines: list[str]) -> Ibdiagnet:
    state: str | None = None
    sms: list[SubnetManager] = []
    errors: list[str] = []
    for line in lines:
        if not line or line.startswith("#") or _SM_REPORT.match(line):
            continue
        if g := _SM_GROUP.match(line):
            state = g.group(1).lower()
        elif (e := _SM_ENTRY.match(line)) and state is not None:
            sm = SubnetManager(
                state=state,
                port=int(e.group(1)),
                lid=int(e.group(2), 0),
                guid=_guid(e.group(3)),
                priority=int(e.group(5)) if e.group(5) else None,
                devid=int(e.group(4)) if e.group(4) else None,
            )
            if _sane(sm):
                sms.append(sm)
            else:
                errors.append(line)
        else:
            errors.append(line)
    return Ibdiagnet("sm", not errors, sms=tuple(sms), sm_reported=True, errors=tuple(errors))


def _bounded_int(text: str, top: int, low: int = 0) -> int | None:
    """An integer cell within ``low..top``, None where the cell is empty/N-A; out of range
    (``N#`` of 10**23: no real output) is a ParseError, and the row an error."""
    value = to_int(text)
    return None if value is None else bounded(value, "a net_dump cell", top, low)


def _dump_row(cols: list[str], cells: list[str], switch: re.Match[str]) -> DumpPort | None:
    row = dict(zip(cols, (c.strip() for c in cells), strict=True))
    try:
        port = _bounded_int(row.get("IB#", ""), MAX_IB_PORT, 1)
        nport = _bounded_int(row.get("N#", ""), MAX_IB_PORT)
        lid = _bounded_int(switch.group("lid"), MAX_UNICAST_LID)
    except ParseError:
        return None
    width = (row.get("LWA") or "").lower() or None
    if port is None or (width is not None and width not in WIDTHS):
        return None
    neighbor = row.get("Neighbor Description", "")
    if neighbor and not (neighbor.startswith('"') and neighbor.endswith('"')):
        return None  # cut inside the description
    nguid = row.get("Neighbor Guid", "")
    return DumpPort(
        switch=switch.group("desc"),
        switch_guid=_guid(switch.group("guid")),
        port=port,
        state=row.get("Sta", ""),
        phys_state=row.get("PhysSta", ""),
        width=row.get("LWA") or None,  # as printed (checked against WIDTHS above)
        speed=row.get("LSA") or None,
        neighbor_guid=_guid(nguid) if re.fullmatch(r"0x[0-9a-fA-F]+", nguid) else None,
        neighbor_port=nport,
        neighbor=neighbor.strip('"') or None,
        switch_lid=lid,
    )


def _net_dump(lines: list[str], limits: Limits) -> Ibdiagnet:
    version = None
    switch: re.Match[str] | None = None
    cols: list[str] = []
    ports: list[DumpPort] = []
    errors: list[str] = []
    for line in lines:
        if not line:
            continue
        if line.startswith("#"):
            body = line.lstrip("#").strip()
            if "IB#" in body and ":" in body:
                cols = [c.strip() for c in body.split(":")]
            elif v := _VERSION.match(body.replace("Running version   :", "Running version:")):
                version = v.group(1)
            continue
        if s := _SWITCH.match(line):
            switch, cols = s, []
            continue
        cells = line.split(":", len(cols) - 1) if cols else []
        port = _dump_row(cols, cells, switch) if switch and len(cells) == len(cols) else None
        if port is None:
            errors.append(line)
        else:
            ports.append(port)
        if len(ports) > limits.count:
            raise limits.refuse(len(ports), "switch port rows in the net_dump")
    if not ports:
        raise ParseError("no switch port rows in the ibdiagnet2.net_dump")
    return Ibdiagnet("net_dump", not errors, version, ports=tuple(ports), errors=tuple(errors))


def parse_ibdiagnet(text: str, limits: Limits = DEFAULT) -> Ibdiagnet:
    """One of ibdiagnet's outputs (its console, ibdiagnet2.sm, ibdiagnet2.net_dump), within
    ``limits``: a sweep's files list every port of the fabric, bounded by the design's size
    (rackops.scale.fabric_limits) where the caller knows it."""
    check_limits(text, limits)
    lines = [raw.rstrip("\r").strip() for raw in text.splitlines()]
    if not any(lines):
        raise ParseError("empty ibdiagnet output")
    if any(_SM_REPORT.match(x) for x in lines[:20]):
        return _sm_file(lines)
    if any(_SWITCH.match(x) for x in lines) and any("IB#" in x for x in lines):
        return _net_dump(lines, limits)
    return _console(lines, limits)
