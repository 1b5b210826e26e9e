"""``iblinkinfo`` (rdma-core infiniband-diags): every port of every node and its far end.

Command: ``iblinkinfo`` (also ``--switches-only``, ``--cas-only``, ``-S GUID``, ``-p``, ``-l``,
``-d``). Forms handled (column padding shortened here)::

    CA: node03 mlx5_2:
          0xec0d9a03003d62be   4    1[  ] ==( 4X   25.78125 Gbps Active/  LinkUp)==>
              2   17[  ] "leaf-r1" ( )                          (one line in the output)
    Switch: 0x506b4b0300820910 MF0;SB7700:MSB7700/U1:
          2    1[  ] ==(        Down/ Polling)==>      [  ] "" ( )
          2   17[  ] ==( 4X  25.78125 Gbps Active/  LinkUp)==>   4    1[  ] "n02 HCA-1" ( )
          2   20[  ] ==( 4X  10.0 Gbps Active/  LinkUp)==>   7  1[  ] "n9 HCA-1" ( Could be FDR10)
          2   21[  ] ==( 4X 53.125 Gbps Active/  LinkUp) (HOQ:16 VL_Stall:7)==> "Port not available"
    0x506b4b0300820910 "    MF0;SB7700:MSB7700/U1"   2   17[  ] ==( 4X ...)==>
              0xec0d9a03003d62be   4    1[  ] "n02 HCA-1" ( )      (-l: one line)

The headers are ``Switch: 0x<port-0 GUID> <description>:`` and ``CA: <description>:`` (and
``Router:``); the description may hold spaces, ``;`` and ``:`` (the header ends in one more
``:``). Link fields are read by pattern, not column, so TABs, the ``%9s``/``%18s`` speed
padding of old versions, the ``-p`` ``(HOQ:.. VL_Stall:..)`` suffix and the ``( Could be ...)``
hints all parse. ``-l`` (line mode) prints no headers: its lines carry the node description and
both GUIDs, and ``node_type`` is ``"?"`` there (the line does not say). ``--diff`` output is
not handled.

``ibwarn:`` / ``file.c:NN; umad ... bad status 110`` lines are kept in ``errors``; discovery goes
on after them, so they leave ``complete`` alone (a node behind a timed-out SMP is simply not
printed: a check should not read its absence as a cabling fault while ``errors`` is non-empty).
``complete=False`` when the text is detectably cut or mangled:

* a line that is not one of the forms above (a partial last line), or a port line before any
  header (the top was cut); a header with no port line after it;
* ``iberror`` / ``ibpanic`` / ``discover failed`` / ``Failed to ...``;
* a node that *is* printed lacks the port another line says it is linked to (iblinkinfo prints
  every port of a node, so a switch block cut at port 18 is caught when a CA names port 36);
* the output has both Switch and CA blocks (a whole-fabric listing, not ``--switches-only`` /
  ``--cas-only`` / one node) and a linked peer has no block at all.

iblinkinfo does not print a switch's port count, so a switch block cut at a line boundary with
no other line naming one of its later ports cannot be told from a whole one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import ParseError, check_limits
from rackops.scale import DEFAULT, Limits

__all__ = ["IbLink", "IbLinkInfo", "parse_iblinkinfo"]


@dataclass(frozen=True)
class IbLink:
    node_type: str  # "Switch" | "CA" | "Router" (the block it was printed in); "?" in -l mode
    node_guid: str | None  # switch: the header's port-0 GUID; CA: the port GUID on the line
    node_desc: str
    lid: int | None
    port: int
    state: str | None  # Active | Down | Initialize | Armed
    physical_state: str | None  # LinkUp | Polling | Disabled | ...
    width: str | None  # "4X"
    speed_gbps: float | None  # per-lane signalling rate as printed; None when Down
    peer_lid: int | None
    peer_port: int | None
    peer_desc: str | None  # None when not connected
    peer_guid: str | None  # only in -l mode
    messages: tuple[str, ...]  # "Could be ..." hints printed after the link


@dataclass(frozen=True)
class IbLinkInfo:
    links: tuple[IbLink, ...]
    complete: bool
    errors: tuple[str, ...]


_HEADER = re.compile(r"^(Switch|CA|Router):\s+(.*):$")
_SWITCH_GUID = re.compile(r"^(0x[0-9a-fA-F]+)\s+(.*)$")
_PORT = re.compile(
    r"^(?:(?P<guid>0x[0-9a-fA-F]+)\s+)?"
    r"(?:\"(?P<ldesc>.*?)\"\s+)?"
    r"(?P<lid>\d+)\s+(?P<port>\d+)\[\s*\d*\s*\]\s*"
    r"==\((?P<link>.*?)\)(?:\s*\(HOQ:\s*\d+\s+VL_Stall:\s*\d+\))?==>"
    r"\s*(?P<remote>.*)$"
)
_LINK = re.compile(
    r"^\s*(?:(?P<width>\d+[xX]|undefined \(\d+\))\s+(?P<speed>.+?)\s+)?"
    r"(?P<state>\S+)/\s*(?P<phys>\S+)\s*$"
)
_REMOTE = re.compile(
    r"^(?:(?P<guid>0x[0-9a-fA-F]+)\s+)?(?P<lid>\d+)\s+(?P<port>\d+)\[\s*\d*\s*\]\s*"
    r"\"(?P<desc>.*)\"\s*\((?P<msg>[^\"]*)\)$"
)
_REMOTE_DOWN = re.compile(r'^\[\s*\]\s*""\s*\(\s*\)$')
_REMOTE_NA = re.compile(r'^"Port not available"$')
_SPEED = re.compile(r"^(\d+(?:\.\d+)?)\s*Gbps(?:\s*\(\w+\))?$")
_COULD = re.compile(r"Could be .*?(?=\s+Could be |$)")

STATES = {"NoChange", "Down", "Initialize", "Armed", "Active"}
PHYS_STATES = {
    "NoChange",
    "Sleep",
    "Polling",
    "Disabled",
    "PortConfigurationTraining",
    "LinkUp",
    "LinkErrorRecovery",
    "PhyTest",
}
_UNKNOWN_STATE = re.compile(r"^\?\(\d+\)$")
_FATAL = re.compile(
    r"iberror|ibpanic|discover failed|Failed to |can't open|Cannot |loading cached fabric failed",
    re.IGNORECASE,
)
_WARNING = re.compile(
    r"^ibwarn:|^WARN:|^\S+\.c:\d+;|bad status|timed out|timeout|\bumad\b", re.IGNORECASE
)


def _known(value: str, allowed: set[str]) -> bool:
    return value in allowed or bool(_UNKNOWN_STATE.match(value))


def _messages(text: str) -> tuple[str, ...]:
    text = text.strip()
    if not text:
        return ()
    found = [m.group().strip() for m in _COULD.finditer(text)]
    return tuple(found) if found else (text,)


def _port_line(
    m: re.Match[str], node_type: str, node_guid: str | None, node_desc: str
) -> IbLink | None:
    """One port line → IbLink, or None when its link or far-end field is not whole."""
    link = _LINK.match(m.group("link"))
    if not link:
        return None
    state, phys = link.group("state"), link.group("phys")
    if not (_known(state, STATES) and _known(phys, PHYS_STATES)):
        return None
    width: str | None = None
    speed: float | None = None
    if link.group("width") is not None:
        raw_width = link.group("width")
        width = raw_width.upper() if raw_width[0].isdigit() else None
        s = _SPEED.match(link.group("speed"))
        speed = float(s.group(1)) if s else None
    remote = m.group("remote").strip()
    peer_lid = peer_port = None
    peer_desc = peer_guid = None
    messages: tuple[str, ...] = ()
    if r := _REMOTE.match(remote):
        peer_lid, peer_port = int(r.group("lid")), int(r.group("port"))
        peer_desc, peer_guid = r.group("desc"), r.group("guid")
        messages = _messages(r.group("msg"))
    elif not (_REMOTE_DOWN.match(remote) or _REMOTE_NA.match(remote)):
        return None
    return IbLink(
        node_type=node_type,
        node_guid=node_guid,
        node_desc=node_desc,
        lid=int(m.group("lid")),
        port=int(m.group("port")),
        state=state,
        physical_state=phys,
        width=width,
        speed_gbps=speed,
        peer_lid=peer_lid,
        peer_port=peer_port,
        peer_desc=peer_desc,
        peer_guid=peer_guid,
        messages=messages,
    )


def _cross_check(links: list[IbLink], block_types: set[str]) -> list[str]:
    """Reasons the listing is missing lines that other lines prove were printed."""
    problems: list[str] = []
    ports: dict[tuple[str, int | None], set[int]] = {}
    for link in links:
        ports.setdefault((link.node_desc, link.lid), set()).add(link.port)
    missing_ports: list[str] = []
    for link in links:
        if link.peer_desc is None or link.peer_port is None or not link.peer_lid:
            continue
        have = ports.get((link.peer_desc, link.peer_lid))
        if have is not None and link.peer_port not in have:
            missing_ports.append(
                f"{link.peer_desc!r} lid {link.peer_lid} port {link.peer_port}"
                f" (linked from {link.node_desc!r} port {link.port})"
            )
    if missing_ports:
        problems.append(
            "incomplete: printed nodes lack linked ports: " + "; ".join(missing_ports[:5])
        )
    if "Switch" in block_types and block_types & {"CA", "Router"}:
        descs = {link.node_desc for link in links}
        absent = sorted({lk.peer_desc for lk in links if lk.peer_desc} - descs)
        if absent:
            more = f" and {len(absent) - 5} more" if len(absent) > 5 else ""
            shown = ", ".join(repr(d) for d in absent[:5])
            problems.append(f"incomplete: linked nodes with no block: {shown}{more}")
    return problems


def parse_iblinkinfo(text: str, limits: Limits = DEFAULT) -> IbLinkInfo:
    """iblinkinfo of a fabric, within ``limits`` (its links bounded by the design's size,
    rackops.scale.fabric_limits, where the caller knows it)."""
    check_limits(text, limits)
    links: list[IbLink] = []
    errors: list[str] = []
    complete = True
    node_type: str | None = None
    node_guid: str | None = None
    node_desc = ""
    header_ports = 0
    block_types: set[str] = set()

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if h := _HEADER.match(line):
            if node_type is not None and header_ports == 0:
                complete = False  # a header is only printed ahead of a port line
            node_type, node_guid, node_desc = h.group(1), None, h.group(2).strip()
            if node_type == "Switch" and (g := _SWITCH_GUID.match(node_desc)):
                node_guid, node_desc = g.group(1), g.group(2).strip()
            header_ports = 0
            block_types.add(node_type)
            continue
        if m := _PORT.match(line):
            if m.group("ldesc") is not None:  # -l: everything is on the line
                link = _port_line(m, "?", m.group("guid"), m.group("ldesc").strip())
            elif node_type is None:
                link = None  # a port line before any header: the top was cut
            else:
                guid = node_guid if node_type == "Switch" else m.group("guid")
                link = _port_line(m, node_type, guid, node_desc)
            if link is None:
                errors.append(line)
                complete = False
            else:
                links.append(link)
                header_ports += 1
                if len(links) > limits.count:
                    raise limits.refuse(len(links), "iblinkinfo port lines")
            continue
        errors.append(line)
        if _FATAL.search(line) or not _WARNING.search(line):
            complete = False
    if node_type is not None and header_ports == 0:
        complete = False
    if not links:
        why = f": {errors[-1]}" if errors else ""
        raise ParseError(f"no iblinkinfo port lines found{why}")
    problems = _cross_check(links, block_types)
    if problems:
        complete = False
        errors.extend(problems)
    return IbLinkInfo(tuple(links), complete, tuple(errors))
