"""Cabling against the map: is every HCA's cable in the switch port the design says?

What each HCA's cable is really plugged into comes from the fabric (RoCE: the LLDP
neighbour of its netdev, ``lldpctl -f json``; InfiniBand: the subnet manager's view,
``iblinkinfo``). Mismatches are read as a whole rack, so one mistake gives one finding:

* two HCAs each in the other's designed port: **one swap** ("node03 mlx5_2 is in leaf-r2
  Ethernet24, designed Ethernet16; node04 mlx5_2 the reverse");
* a cable on a leaf of another rail: a **miscabling** to that rail;
* a cable in another port of the right leaf (or a switch the design does not have);
* no neighbour at all: not verifiable (WARN: LLDP off on that switch port, or the link down,
  which the port checks judge).

Switch names compare by their short name (``leaf-r1.example.net`` is ``leaf-r1``); a port
matches by name or by the number a subnet manager prints for it (``C/S`` on a 64-port NDR
switch is IB port ``2C-2+S``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster
from rackops.parsers.iblinkinfo import IbLinkInfo
from rackops.parsers.lldpctl import Lldp

Key = tuple[str, str]  # (node, hca device)
FIX = "move the cable(s) to the designed port(s), or fix the cabling map if the map is wrong"


@dataclass(frozen=True)
class Seen:
    switch: str
    port: str
    port_alt: str | None = None  # a second name for the same port (LLDP PortDescr)


def short(name: str) -> str:
    """A switch's short name: ``leaf-r1.example.net`` and the node description an NVIDIA IB
    switch reports, ``MF0;leaf-r1:MQM9700/U1``, are both ``leaf-r1``."""
    m = re.match(r"^\s*(?:MF0;)?([^:;]+)", name)
    host = m.group(1) if m else name
    return host.split(".", 1)[0].strip().lower()


_IB_PREFIX = re.compile(r"^(?:ib|eth|ethernet ?)", re.I)


def ib_port_number(name: str) -> int | None:
    """The IB port number of an NVIDIA switch port as a design names it, or None where the
    name does not say: ``17`` and ``IB1/17`` (slot 1) are port 17; ``P/S`` (ibdiagnet's
    label of a split Quantum port, split 1 or 2) and ``1/P/S`` (slot 1, or Quantum-2's
    ASIC/cage/port) are port ``2P-2+S``. Another slot, a 4-part label, or a 0 maps to None."""
    parts = _IB_PREFIX.sub("", name.strip()).split("/")
    if not all(p.isdigit() and len(p) <= 3 for p in parts) or "0" in [
        p.lstrip("0") or "0" for p in parts
    ]:
        return None
    n = [int(p) for p in parts]
    if len(n) == 1:
        return n[0]
    if len(n) == 2 and n[0] == 1:
        return n[1]  # slot 1, port P (= port 1 split P in the P/S label: the same number)
    if len(n) == 2 and n[1] in (1, 2):
        return 2 * n[0] - 2 + n[1]
    if len(n) == 3 and n[0] == 1 and n[2] in (1, 2):
        return 2 * n[1] - 2 + n[2]
    return None


def same_port(design: str, seen: Seen) -> bool:
    names = {seen.port, seen.port_alt} - {None}
    if design in names or design.lower() in {n.lower() for n in names if n}:
        return True
    num = ib_port_number(design)
    return num is not None and any(n is not None and n.strip() == str(num) for n in names)


def seen_from_lldp(
    parsed: Lldp, node: str, netdev_to_hca: dict[str, str]
) -> dict[Key, Seen | None]:
    """The neighbour of each cabled netdev of one node (None where LLDP heard nobody)."""
    out: dict[Key, Seen | None] = {}
    for netdev, hca in netdev_to_hca.items():
        # a neighbour without a system name (only its chassis MAC) cannot be matched to a
        # switch of the design: not verifiable, like no neighbour
        ns = [n for n in parsed.of(netdev) if n.chassis_name]
        if not ns:
            out[(node, hca)] = None
            continue
        n = ns[0]
        out[(node, hca)] = Seen(str(n.chassis_name), n.port_id or "?", n.port_descr)
    return out


def seen_from_iblinkinfo(parsed: IbLinkInfo, cluster: Cluster) -> dict[Key, Seen | None]:
    """Each cabled HCA's switch and port from the CA blocks (and switch blocks) of
    iblinkinfo; a CA is found by its node description ``<host> <device>``."""
    out: dict[Key, Seen | None] = {}
    by_desc: dict[tuple[str, str], Seen] = {}
    for link in parsed.links:
        if link.node_type.lower().startswith("ca") and link.peer_desc:
            parts = link.node_desc.split()
            if len(parts) >= 2:
                by_desc[(short(parts[0]), parts[1])] = Seen(
                    link.peer_desc, str(link.peer_port), None
                )
        elif link.node_type.lower().startswith("switch") and link.peer_desc:
            parts = link.peer_desc.split()
            if len(parts) >= 2:
                by_desc.setdefault(
                    (short(parts[0]), parts[1]), Seen(link.node_desc, str(link.port), None)
                )
    for node in cluster.nodes:
        for h in node.hcas:
            out[(node.name, h.device)] = by_desc.get((short(node.name), h.device))
    return out


def check_cabling(cluster: Cluster, seen: dict[Key, Seen | None], *, how: str) -> list[Finding]:
    """``seen``: what the fabric says for every cabled HCA that could be read; ``how``
    names the source in messages ("LLDP", "iblinkinfo")."""
    design: dict[Key, tuple[str, str, int]] = {}
    owner: dict[tuple[str, str], Key] = {}
    for node in cluster.nodes:
        for h in node.hcas:
            design[(node.name, h.device)] = (h.switch, h.port, h.rail)
            owner[(short(h.switch), h.port)] = (node.name, h.device)
    rail_of = {short(s.name): s.rail for s in cluster.switches}

    def subject(k: Key) -> Subject:
        sw, port, _ = design[k]
        return Subject(node=k[0], hca=k[1], port=1, switch=sw, switch_port=port)

    def matches(k: Key, s: Seen) -> bool:
        sw, port, _ = design[k]
        return short(s.switch) == short(sw) and same_port(port, s)

    def in_port_of(s: Seen) -> Key | None:
        """Whose designed port the cable is in (by switch and port name)."""
        for (sw, port), k in owner.items():
            if sw == short(s.switch) and same_port(port, s):
                return k
        return None

    out: list[Finding] = []
    wrong = {k: s for k, s in seen.items() if k in design and s is not None and not matches(k, s)}
    done: set[Key] = set()
    for k in sorted(wrong):
        if k in done:
            continue
        s = wrong[k]
        sw, port, rail = design[k]
        other = in_port_of(s)
        back = wrong.get(other) if other else None
        if other is not None and back is not None and in_port_of(back) == k:
            done |= {k, other}
            o_sw, o_port, _ = design[other]
            msg = (
                f"{k[0]} {k[1]} is in {s.switch} {s.port}, designed {port}; {other[0]} "
                f"{other[1]} the reverse: the two cables are swapped ({how})"
            )
            out.append(
                Finding(
                    "CAB-SWAP",
                    Status.FAIL,
                    subject(k),
                    msg,
                    {"ends": [_where(k, s), _where(other, back)], "hcas": [list(k), list(other)]},
                    {"ends": [_where(k, Seen(sw, port)), _where(other, Seen(o_sw, o_port))]},
                    remediation="swap the two cables back: " + FIX,
                )
            )
            continue
        done.add(k)
        seen_rail = rail_of.get(short(s.switch))
        if short(s.switch) != short(sw) and seen_rail is not None and seen_rail != rail:
            msg = (
                f"{k[0]} {k[1]} (rail {rail}) is cabled to {s.switch} {s.port}, a leaf of rail "
                f"{seen_rail}; designed {sw} {port} ({how})"
            )
            code = "CAB-RAIL"
        elif short(s.switch) != short(sw):
            msg = (
                f"{k[0]} {k[1]} is cabled to {s.switch} {s.port}, a switch the design does "
                f"not have for it; designed {sw} {port} ({how})"
            )
            code = "CAB-SWITCH"
        else:
            taken = f" (designed for {other[0]} {other[1]})" if other else ""
            msg = f"{k[0]} {k[1]} is in {s.switch} {s.port}{taken}, designed {port} ({how})"
            code = "CAB-PORT"
        out.append(
            Finding(
                code,
                Status.FAIL,
                subject(k),
                msg,
                {"ends": [_where(k, s)], "hcas": [list(k)]},
                {"ends": [_where(k, Seen(sw, port))]},
                remediation=FIX,
            )
        )
    for k in sorted(k for k, s in seen.items() if s is None and k in design):
        out.append(
            Finding(
                "CAB-NONE",
                Status.WARN,
                subject(k),
                f"no {how} neighbour: the cable of {k[0]} {k[1]} could not be checked against "
                f"the map (designed {design[k][0]} {design[k][1]})",
                remediation="enable LLDP on the switch port (RoCE) or check the link is up",
            )
        )
    for k in sorted(k for k, s in seen.items() if s is not None and k in design and matches(k, s)):
        out.append(Finding("CAB-OK", Status.OK, subject(k), f"cabled as designed ({how})"))
    return out


def _where(k: Key, s: Seen) -> str:
    return f"{k[0]}/{k[1]} [{s.switch} {s.port}]"
