"""Arista EOS's view of its ports, as JSON (``| json`` on the CLI, or eAPI's ``result``):

- ``show lldp neighbors`` → ``lldpNeighbors``: a list of ``{port, neighborDevice,
  neighborPort, ttl}``; a port with no neighbour is absent, one with two is listed twice;
- ``show interfaces status`` → ``interfaceStatuses.<if>.{linkStatus, bandwidth, ...}``:
  ``bandwidth`` in bit/s (a down port keeps its nominal one), ``linkStatus`` ``connected``,
  ``notconnect``, ``disabled``, ``errdisabled``...

JSON that does not close (a cut read) is never complete.
"""

from __future__ import annotations

import re
from typing import Any

from rackops.parsers._common import MAX_COUNT, ParseError
from rackops.parsers.eos_counters import eos_json
from rackops.parsers.switch_ports import Neighbor, PortView, SwitchPorts

_IF = re.compile(r"^[A-Za-z][A-Za-z0-9/._-]{0,63}$")
_TEXT = re.compile(r"^[^\x00-\x1f]{0,255}$")


def _lldp(rows: Any) -> SwitchPorts:
    if not isinstance(rows, list):
        raise ParseError("lldpNeighbors is a list")
    if len(rows) > MAX_COUNT:
        raise ParseError(f"more than {MAX_COUNT} LLDP neighbours")
    ports: dict[str, list[Neighbor]] = {}
    errors: list[str] = []
    for row in rows:
        port = row.get("port") if isinstance(row, dict) else None
        dev, far = (row.get("neighborDevice", ""), row.get("neighborPort")) if port else ("", "")
        if not (isinstance(port, str) and _IF.match(port)) or not all(
            isinstance(x, str) and _TEXT.match(x) for x in (dev, far)
        ):
            errors.append(f"an lldpNeighbors entry that is not one: {str(row)[:120]}")
            continue
        ports.setdefault(port, []).append(Neighbor(dev, far))
    views = {p: PortView(neighbors=tuple(n)) for p, n in ports.items()}
    return SwitchPorts("lldp", not errors, views, tuple(errors))


def _status(table: Any) -> SwitchPorts:
    if not isinstance(table, dict):
        raise ParseError("interfaceStatuses is an object")
    if len(table) > MAX_COUNT:
        raise ParseError(f"more than {MAX_COUNT} interfaces")
    ports: dict[str, PortView] = {}
    errors: list[str] = []
    for name, body in table.items():
        bw = body.get("bandwidth") if isinstance(body, dict) else None
        link = body.get("linkStatus") if isinstance(body, dict) else None
        if (
            not _IF.match(name)
            or not isinstance(link, str)
            or not isinstance(bw, int)
            or isinstance(bw, bool)
            or not 0 <= bw <= 10**13
        ):
            errors.append(f"{name[:64]}: no linkStatus and bandwidth (bit/s) of a port")
            continue
        oper = "up" if link == "connected" else "down"
        ports[name] = PortView(bw / 1e9 if bw else None, oper)
    return SwitchPorts("status", not errors, ports, tuple(errors))


def parse_eos_ports(text: str) -> SwitchPorts:
    data = eos_json(text, "port views")
    if isinstance(data, str):
        return SwitchPorts("unknown", False, errors=(data,))
    if "lldpNeighbors" in data:
        return _lldp(data["lldpNeighbors"])
    if "interfaceStatuses" in data:
        return _status(data["interfaceStatuses"])
    raise ParseError("neither lldpNeighbors nor interfaceStatuses: not an EOS port view")
