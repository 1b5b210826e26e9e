"""``ibnetdiscover`` (rdma-core infiniband-diags): the fabric's nodes and cabled ports.

Command: ``ibnetdiscover`` (topology file; also ``-g``) or ``ibnetdiscover -p`` (ports report).
Forms handled (TABs shown as spaces, long lines wrapped here)::

    #
    # Topology file: generated on Mon Jul 25 11:30:26 2016
    # Initiated from node 0002c9030004e938 port 0002c9030004e939

    vendid=0x2c9
    devid=0xcb20
    sysimgguid=0xe41d2d030003e470
    switchguid=0xe41d2d030003e470(e41d2d030003e470)
    Switch    36 "S-e41d2d030003e470"    # "SwitchIB Mellanox Technologies" base port 0 lid 268
        lmc 0
    [3]    "S-f4521403005764b0"[1]    # "MF0;switch-de779e:SX6012/U1" lid 174 4xFDR
    [34]    "H-e41d2d030061f957"[1](e41d2d030061f957)     # "r-ufm216 HCA-2" lid 2 4xEDR

    vendid=0x2c9
    devid=0x1013
    caguid=0xe41d2d030061f957
    Ca    1 "H-e41d2d030061f957"    # "r-ufm216 HCA-2"
    [1](e41d2d030061f957)     "S-e41d2d030003e470"[34]    # lid 2 lmc 0
        "SwitchIB Mellanox Technologies" lid 268 4xEDR

    CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0
        ( 'o0001 HCA-1' - 'ib-i1l1s01' )
    SW  2052 37 0x506b4b03005c2740 4x ???                                    'ib-i4l1s01'

TABs, TABs expanded to spaces (man pages) and runs collapsed to one space (web pages) all
parse; the blank line between blocks is not required (a block starts at ``vendid=``). ``-g``
chassis lines, ``[ext N]``, ``-f`` ``s=.. w=.. v=..``, ``slot N`` and ``(scp)`` suffixes are
read past. ``Rt`` (router) blocks parse like ``Ca``. ``--diff`` and the ``-l``/``-S``/``-H``
lists are not handled.

The topology file prints only *connected* ports. ``-p`` prints every port (an unconnected one
has no peer and speed ``???`` → ``None``), but it lacks: node GUIDs (each line carries the
*port* GUID, so ``IbNode.guid`` and ``IbPort.peer_guid`` are port GUIDs there: equal to the node
GUID on switches, not on CAs), ``num_ports`` (None), the node-id type letters (taken from
``SW``/``CA``/``RT``) and LMC. A CA's ports are grouped by being adjacent with the same
description and falling port numbers; a switch's by its GUID.

``IbNode.guid`` is the node id's GUID (``"H-0002c903003421b0"`` → ``"0x0002c903003421b0"``),
zero-padded like the ids so peers join to nodes; ``IbNode.lid`` is the switch's port-0 LID or
the CA's lowest port's LID. Ports are sorted by number in both modes.

libibnetdisc ``file.c:NN; umad ... bad status 110; Connection timed out`` and ``ibwarn:`` lines
are kept in ``errors`` and leave ``complete`` alone: discovery goes on, and a node behind the
timed-out path is simply absent (a check should not call that absence a cabling fault while
``errors`` is non-empty). ``complete=False`` when the text is detectably cut or mangled:

* a line of no known form (a partial last line), or a port line before any node line;
* a ``vendid=`` block with no node line, or a node with no port lines;
* ``iberror`` / ``ibpanic`` / ``discover failed``;
* every link is printed from both ends (both modes list every discovered node), so a port line
  whose far end has no block, or whose far end's block lacks the return port, means lines
  are missing: a switch block cut part-way, or blocks cut at the end. A ``grep``-ed or
  hand-picked subset of ``-p`` lines reads as cut for the same reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import ParseError, check_limits
from rackops.scale import DEFAULT, Limits

__all__ = ["IbNetDiscover", "IbNode", "IbPort", "parse_ibnetdiscover"]


@dataclass(frozen=True)
class IbPort:
    port: int
    peer_type: str | None  # "S" | "H" | "R"; None when unconnected
    peer_guid: str | None  # topology: the peer's node GUID; -p: the peer's port GUID
    peer_port: int | None
    peer_desc: str | None
    peer_lid: int | None
    width: str | None  # "4X"
    speed: str | None  # "SDR" "DDR" "QDR" "FDR10" "FDR" "EDR" "HDR" "NDR" "XDR"


@dataclass(frozen=True)
class IbNode:
    type: str  # "Switch" | "Ca" | "Rt"
    guid: str  # "0x" + 16 hex digits
    desc: str
    num_ports: int | None
    lid: int | None
    ports: tuple[IbPort, ...]


@dataclass(frozen=True)
class IbNetDiscover:
    nodes: tuple[IbNode, ...]
    complete: bool
    errors: tuple[str, ...]


_SPEEDS = {"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"}
_WS = r"(?P<width>\d+x|\?\?)(?P<speed>FDR10|[SDQFEHNX]DR|\?\?\?)"
_SUFFIX = r"(?:\s+s=\d+\s+w=\d+\s+v=\d+)?(?:\s+slot\s+\d+)?(?:\s+\(scp\))?"
_ID = r"\"(?P<ptype>[SHR?])-(?P<pguid>[0-9a-fA-F]+)\"\[(?P<pport>\d+)\](?:\[ext \d+\])?"

_BLOCK_START = re.compile(r"^vendid=0x[0-9a-fA-F]+$")
_ID_LINE = re.compile(
    r"^(?:devid=0x[0-9a-fA-F]+|sysimgguid=0x[0-9a-fA-F]+(?:\s*#.*)?"
    r"|switchguid=0x[0-9a-fA-F]+\([0-9a-fA-F]+\)(?:\s*#.*)?|(?:ca|rt)guid=0x[0-9a-fA-F]+)$"
)
_CHASSIS = re.compile(
    r"^(?:#.*|Non-Chassis Nodes|Chassis \d+(?: \(guid 0x[0-9a-fA-F]+\))?|Hostname: .*)$"
)
_SWITCH = re.compile(
    r"^Switch\s+(?P<n>\d+)\s+\"S-(?P<guid>[0-9a-fA-F]+)\"\s*#\s*\"(?P<desc>.*)\"\s+"
    r"(?:base|enhanced)\s+port\s+0\s+lid\s+(?P<lid>\d+)\s+lmc\s+\d+$"
)
_CA = re.compile(
    r"^(?P<type>Ca|Rt)\s+(?P<n>\d+)\s+\"[HR?]-(?P<guid>[0-9a-fA-F]+)\"\s*#\s*"
    r"\"(?P<desc>.*)\"(?:\s+\(scp\))?$"
)
_SWITCH_PORT = re.compile(
    r"^\[(?P<port>\d+)\](?:\[ext \d+\])?\s*" + _ID + r"(?:\([0-9a-fA-F]+\))?\s*#\s*"
    r"\"(?P<desc>.*)\"\s+lid\s+(?P<lid>\d+)\s+" + _WS + _SUFFIX + "$"
)
_CA_PORT = re.compile(
    r"^\[(?P<port>\d+)\](?:\([0-9a-fA-F]+\))?\s*" + _ID + r"(?:\s*\([0-9a-fA-F]+\))?\s*#\s*"
    r"lid\s+(?P<own_lid>\d+)\s+lmc\s+\d+\s+"
    r"\"(?P<desc>.*)\"\s+lid\s+(?P<lid>\d+)\s+" + _WS + _SUFFIX + "$"
)
_P_HEAD = (
    r"^(?P<type>SW|CA|RT)\s+(?P<lid>\d+)\s+(?P<port>\d+)\s+(?P<guid>0x[0-9a-fA-F]+)\s+"
    r"(?P<width>\d+x|\?\?)\s+(?P<speed>FDR10|[SDQFEHNX]DR|\?\?\?)"
)
_P_LINKED = re.compile(
    _P_HEAD + r"\s+-\s+(?P<ptype>SW|CA|RT)\s+(?P<plid>\d+)\s+(?P<pport>\d+)\s+"
    r"(?P<pguid>0x[0-9a-fA-F]+)\s+\(\s*'(?P<descs>.*)'\s*\)$"
)
_P_ALONE = re.compile(_P_HEAD + r"\s+'(?P<desc>.*)'$")
_P_TYPE = {"SW": "Switch", "CA": "Ca", "RT": "Rt"}
_P_PEER = {"SW": "S", "CA": "H", "RT": "R"}
_FATAL = re.compile(r"iberror|ibpanic|discover failed|can't open|Failed to ", re.IGNORECASE)
_WARNING = re.compile(r"^ibwarn:|^\S+\.c:\d+;|bad status|timed out|timeout", re.IGNORECASE)


def _guid(hexdigits: str) -> str:
    return f"0x{int(hexdigits, 16):016x}"


def _width(text: str) -> str | None:
    return None if text.startswith("?") else text.upper()


def _speed(text: str) -> str | None:
    return text if text in _SPEEDS else None


@dataclass
class _Node:
    type: str
    guid: str
    desc: str
    num_ports: int | None
    lid: int | None
    # (port, its own LID where printed, its own port GUID where it is the link's key: -p)
    ports: list[tuple[IbPort, int | None, str | None]]

    def freeze(self) -> IbNode:
        ordered = sorted(self.ports, key=lambda p: p[0].port)
        lid = self.lid
        if lid is None:
            lid = next((own for _, own, _ in ordered if own is not None), None)
        return IbNode(
            self.type, self.guid, self.desc, self.num_ports, lid, tuple(p for p, _, _ in ordered)
        )


class _Reader:
    def __init__(self) -> None:
        self.nodes: list[_Node] = []
        self.errors: list[str] = []
        self.complete = True
        self.current: _Node | None = None
        self.block_open = False  # a vendid= seen, its node line not yet
        self.by_port_guid: dict[str, _Node] = {}  # -p switches

    def bad(self, line: str) -> None:
        self.errors.append(line)
        self.complete = False

    def close_block(self) -> None:
        if self.block_open:
            self.complete = False  # ids with no node line: cut inside the block
        self.block_open = False

    def topology(self, line: str) -> bool:
        if _BLOCK_START.match(line):
            self.close_block()
            self.block_open, self.current = True, None
            return True
        if _ID_LINE.match(line) or _CHASSIS.match(line):
            return True
        if m := _SWITCH.match(line):
            self.block_open = False
            self.current = _Node(
                "Switch", _guid(m["guid"]), m["desc"], int(m["n"]), int(m["lid"]), []
            )
            self.nodes.append(self.current)
            return True
        if m := _CA.match(line):
            self.block_open = False
            self.current = _Node(m["type"], _guid(m["guid"]), m["desc"], int(m["n"]), None, [])
            self.nodes.append(self.current)
            return True
        m = _SWITCH_PORT.match(line)
        own_lid: int | None = None
        if m is None:
            m = _CA_PORT.match(line)
            if m is not None:
                own_lid = int(m["own_lid"])
        if m is None:
            return False
        if self.current is None or (self.current.type == "Switch" and own_lid is not None):
            self.bad(line)  # a port line with no (or the wrong kind of) node above it
            return True
        port = IbPort(
            port=int(m["port"]),
            peer_type=m["ptype"] if m["ptype"] != "?" else None,
            peer_guid=_guid(m["pguid"]),
            peer_port=int(m["pport"]),
            peer_desc=m["desc"],
            peer_lid=int(m["lid"]),
            width=_width(m["width"]),
            speed=_speed(m["speed"]),
        )
        self.current.ports.append((port, own_lid, None))
        return True

    def ports_report(self, line: str) -> bool:
        m = _P_LINKED.match(line) or _P_ALONE.match(line)
        if m is None:
            return False
        linked = "pguid" in m.groupdict()
        if linked:  # "( 'this node' - 'far node' )"
            desc, sep, peer_desc = m["descs"].partition("' - '")
            if not sep:
                return False
        else:
            desc, peer_desc = m["desc"], ""
        port = IbPort(
            port=int(m["port"]),
            peer_type=_P_PEER[m["ptype"]] if linked else None,
            peer_guid=_guid(m["pguid"][2:]) if linked else None,
            peer_port=int(m["pport"]) if linked else None,
            peer_desc=peer_desc if linked else None,
            peer_lid=int(m["plid"]) if linked else None,
            width=_width(m["width"]),
            speed=_speed(m["speed"]),
        )
        kind, guid, lid = _P_TYPE[m["type"]], _guid(m["guid"][2:]), int(m["lid"])
        self.current = None  # -p lines never continue a topology block
        if kind == "Switch":
            node = self.by_port_guid.get(guid)
            if node is None:
                node = _Node(kind, guid, desc, None, lid, [])
                self.by_port_guid[guid] = node
                self.nodes.append(node)
            node.ports.append((port, None, guid))
            return True
        last = self.nodes[-1] if self.nodes else None
        if (
            last is not None
            and last.num_ports is None
            and last.type == kind
            and last.desc == desc
            and last.ports
            and last.ports[-1][0].port > port.port
        ):
            last.ports.append((port, lid, guid))
        else:
            self.nodes.append(_Node(kind, guid, desc, None, None, [(port, lid, guid)]))
        return True

    def feed(self, line: str) -> None:
        if self.topology(line) or self.ports_report(line):
            return
        self.errors.append(line)
        if _FATAL.search(line) or not _WARNING.search(line):
            self.complete = False


def _cross_check(nodes: list[_Node]) -> str | None:
    """Every link is printed from both ends: name the links seen from one end only."""
    ends = {(own or node.guid, p.port) for node in nodes for p, _, own in node.ports}
    one_sided = [
        f"{node.desc!r} port {p.port} -> {p.peer_desc!r} port {p.peer_port}"
        for node in nodes
        for p, _, _ in node.ports
        if p.peer_guid is not None
        and p.peer_port is not None
        and (p.peer_guid, p.peer_port) not in ends
    ]
    if one_sided:
        return "incomplete: links with no line from their far end: " + _few(one_sided)
    return None


def _few(items: list[str]) -> str:
    more = f" and {len(items) - 5} more" if len(items) > 5 else ""
    return "; ".join(items[:5]) + more


def parse_ibnetdiscover(text: str, limits: Limits = DEFAULT) -> IbNetDiscover:
    """ibnetdiscover of a fabric, within ``limits`` (its lines bounded by the design's size,
    rackops.scale.fabric_limits, where the caller knows it)."""
    check_limits(text, limits)
    reader = _Reader()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line:
            reader.feed(line)
        if n > limits.count * 4:  # each port's line, and each node's block of 4-6 lines
            raise ParseError(
                f"more than {limits.count * 4} ibnetdiscover lines: {limits.why} (a line a "
                "port, a few a node)"
            )
    reader.close_block()
    if not reader.nodes:
        why = f": {reader.errors[-1]}" if reader.errors else ""
        raise ParseError(f"no ibnetdiscover node or port lines found{why}")
    complete = reader.complete
    errors = list(reader.errors)
    if any(not n.ports for n in reader.nodes):
        complete = False  # a node is printed only with its links; none after it: cut
    if problem := _cross_check(reader.nodes):
        complete = False
        errors.append(problem)
    return IbNetDiscover(tuple(n.freeze() for n in reader.nodes), complete, tuple(errors))
