"""SONiC's view of its ports: ``show lldp table`` (lldpshow) and ``show interfaces status``
(intfutil), the tables ``tabulate`` prints in its simple layout::

    LocalPort    RemoteDevice    RemotePortID    Capability    RemotePortDescr
    -----------  --------------  --------------  ------------  -----------------
    Ethernet224  ARISTA01T1      Ethernet1       BR
    --------------------------------------------------
    Total entries displayed:  5

          Interface            Lanes    Speed    MTU    FEC  ...    Oper    Admin  ...
    ---------------  ---------------  -------  -----  -----  ...  ------  -------  ...
          Ethernet0                0      25G   9100     rs  ...    down       up  ...

The LLDP table lists only ports with a neighbour (a port with two has two rows) and ends in
its ``Total entries displayed`` footer: without it, or with another count, it was cut. The
status table has no footer: a cut at a line boundary cannot be seen, a cut inside a row can
(its last cells missing). A down port's Speed is its configured one.
"""

from __future__ import annotations

import re

from rackops.parsers._common import MAX_COUNT, ParseError, check_limits
from rackops.parsers.switch_ports import (
    Neighbor,
    PortView,
    SwitchPorts,
    cells,
    speed_gbps,
    table,
)

_FOOTER = re.compile(r"^Total entries displayed:\s+(\d+)\s*$")
_RULE = re.compile(r"^-{20,}\s*$")


def _lldp(lines: list[str]) -> SwitchPorts:
    found = table(lines, "LocalPort")
    assert found is not None
    cols, i = found
    ports: dict[str, list[Neighbor]] = {}
    errors: list[str] = []
    rows, total = 0, None
    for line in lines[i:]:
        if not line.strip():
            continue
        if _RULE.match(line):
            continue
        if m := _FOOTER.match(line.strip()):
            total = int(m.group(1))
            continue
        c = cells(line, cols)
        if not c.get("LocalPort") or not c.get("RemotePortID") or total is not None:
            errors.append(line[:200])
            continue
        ports.setdefault(c["LocalPort"], []).append(
            Neighbor(c.get("RemoteDevice", ""), c["RemotePortID"])
        )
        rows += 1
        if rows > MAX_COUNT:
            raise ParseError(f"more than {MAX_COUNT} LLDP rows")
    if total is None:
        errors.append("no 'Total entries displayed' footer: the table was cut")
    elif total != rows:
        errors.append(f"the footer says {total} entries, the table has {rows}")
    views = {p: PortView(neighbors=tuple(n)) for p, n in ports.items()}
    return SwitchPorts("lldp", not errors, views, tuple(errors))


def _status(lines: list[str]) -> SwitchPorts:
    found = table(lines, "Interface")
    assert found is not None
    cols, i = found
    names = [c[0] for c in cols]
    if "Speed" not in names or "Oper" not in names:
        raise ParseError("a 'show interfaces status' table without Speed and Oper columns")
    ports: dict[str, PortView] = {}
    errors: list[str] = []
    last = cols[-1][1]
    for line in lines[i:]:
        if not line.strip():
            continue
        c = cells(line, cols)
        name = c.get("Interface", "")
        if not name or len(line.rstrip()) < last or " " in name:
            errors.append(line[:200])  # cut inside the row, or not a row
            continue
        try:
            ports[name] = PortView(speed_gbps(c["Speed"]), c["Oper"] or None)
        except ParseError as exc:
            errors.append(f"{name}: {exc}")
        if len(ports) > MAX_COUNT:
            raise ParseError(f"more than {MAX_COUNT} interfaces")
    if not ports:
        errors.append("no interface rows")
    return SwitchPorts("status", not errors, ports, tuple(errors))


def parse_sonic_ports(text: str) -> SwitchPorts:
    check_limits(text)
    lines = text.splitlines()
    if table(lines, "LocalPort") is not None:
        return _lldp(lines)
    if table(lines, "Interface") is not None:
        return _status(lines)
    if text.strip().startswith("Error:"):
        raise ParseError(f"the command failed: {text.strip()[:200]}")
    raise ParseError("neither a 'show lldp table' nor a 'show interfaces status' table")
