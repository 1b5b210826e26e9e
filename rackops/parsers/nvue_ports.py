"""Cumulus Linux NVUE's interface table, ``nv show interface``: each port's state, speed and
LLDP neighbour in one table (``Remote Host``, ``Remote Port``)::

    Interface  Admin Status  Oper Status  Speed  MTU    Type  Remote Host      Remote Port  Summary
    ---------  ------------  -----------  -----  -----  ----  ---------------  -----------  -------
    eth0       up            up           1G     1500   eth   oob-mgmt-switch  swp10        IP ...
                                                                                            IP ...
    swp2       down          down                1500   swp

Releases before 5.11 print one ``State`` column instead of Admin/Oper Status; ``--view=lldp``
prints Interface, Speed, Type, Remote Host, Remote Port. A line with no Interface continues
the row above (its Summary). The table has no footer: a row cut before its Type is seen, a
cut at a line boundary is not. A down port's Speed is blank.
"""

from __future__ import annotations

from rackops.parsers._common import MAX_COUNT, ParseError, check_limits
from rackops.parsers.switch_ports import (
    Neighbor,
    PortView,
    SwitchPorts,
    cells,
    speed_gbps,
    table,
)


def parse_nvue_ports(text: str) -> SwitchPorts:
    check_limits(text)
    lines = text.splitlines()
    found = table(lines, "Interface")
    if found is None:
        raise ParseError("no 'nv show interface' table (an Interface column over dashes)")
    cols, i = found
    names = [c[0] for c in cols]
    if "Type" not in names or "Speed" not in names:
        raise ParseError("an interface table without Speed and Type columns")
    oper_col = "Oper Status" if "Oper Status" in names else "State" if "State" in names else None
    ports: dict[str, PortView] = {}
    errors: list[str] = []
    for line in lines[i:]:
        if not line.strip() or line.strip() == "...":
            continue  # a blank line, or the docs' elision
        c = cells(line, cols)
        name = c.get("Interface", "")
        if not name:
            continue  # the Summary of the row above, continued
        if not c.get("Type") or " " in name:
            errors.append(line[:200])  # cut before its Type, or not a row
            continue
        try:
            speed = speed_gbps(c["Speed"].rstrip("…"))
        except ParseError as exc:
            errors.append(f"{name}: {exc}")
            continue
        host, port = c.get("Remote Host", ""), c.get("Remote Port", "")
        ports[name] = PortView(
            speed,
            (c.get(oper_col) or None) if oper_col else None,
            (Neighbor(host, port),) if host or port else (),
        )
        if len(ports) > MAX_COUNT:
            raise ParseError(f"more than {MAX_COUNT} interfaces")
    if not ports:
        errors.append("no interface rows")
    kind = "both" if oper_col and "Remote Port" in names else "lldp"
    return SwitchPorts(
        kind if "Remote Port" in names else "status", not errors, ports, tuple(errors)
    )
