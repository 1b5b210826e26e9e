"""``ibstat`` (rdma-core infiniband-diags): CAs and their ports.

Command: ``ibstat`` (all CAs) or ``ibstat mlx5_0``. Sample::

    CA 'mlx5_0'
        CA type: MT4129
        Number of ports: 1
        Firmware version: 28.39.1002
        ...
        Port 1:
                State: Active
                Physical state: LinkUp
                Rate: 400
                Base lid: 12
                ...
                Link layer: InfiniBand

Tabs or spaces both parse. An ``ibpanic:`` line, a CA with fewer port blocks
than it declares, or a port block cut before ``Link layer`` makes the result
``complete=False``: the ports that did print are never a pass on their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import ParseError, to_float, to_int

PORT_FIELDS = ("State", "Physical state", "Rate", "Link layer")


@dataclass(frozen=True)
class IbstatPort:
    port: int
    state: str | None
    physical_state: str | None
    rate_gbps: float | None
    base_lid: int | None
    sm_lid: int | None
    lmc: int | None
    capability_mask: str | None
    port_guid: str | None
    link_layer: str | None


@dataclass(frozen=True)
class IbstatCa:
    name: str | None
    type: str | None
    num_ports: int | None
    firmware: str | None
    hardware: str | None
    node_guid: str | None
    system_image_guid: str | None
    ports: tuple[IbstatPort, ...]


@dataclass(frozen=True)
class Ibstat:
    cas: tuple[IbstatCa, ...]
    complete: bool
    errors: tuple[str, ...]

    def ca(self, name: str) -> IbstatCa | None:
        return next((c for c in self.cas if c.name == name), None)


_CA = re.compile(r"^CA:?\s+'([^']+)'\s*$")
_PORT = re.compile(r"^Port\s+(\d+):\s*$")
_KEY = re.compile(r"[A-Za-z][A-Za-z ]*")  # a key is split off at the first ':' (str methods)


def _port(num: int, kv: dict[str, str]) -> IbstatPort:
    return IbstatPort(
        port=num,
        state=kv.get("State"),
        physical_state=kv.get("Physical state"),
        rate_gbps=to_float(kv.get("Rate")),
        base_lid=to_int(kv.get("Base lid")),
        sm_lid=to_int(kv.get("SM lid")),
        lmc=to_int(kv.get("LMC")),
        capability_mask=kv.get("Capability mask"),
        port_guid=kv.get("Port GUID"),
        link_layer=kv.get("Link layer"),
    )


def parse_ibstat(text: str) -> Ibstat:
    cas: list[IbstatCa] = []
    errors: list[str] = []
    complete = True
    ca_name: str | None = None
    ca_kv: dict[str, str] = {}
    ports: list[IbstatPort] = []
    port_num: int | None = None
    port_kv: dict[str, str] = {}
    seen_any = False

    def close_port() -> None:
        nonlocal port_num, port_kv, complete
        if port_num is not None:
            if any(f not in port_kv for f in PORT_FIELDS):
                complete = False
            ports.append(_port(port_num, port_kv))
        port_num, port_kv = None, {}

    def close_ca() -> None:
        nonlocal ca_name, ca_kv, ports, complete
        close_port()
        if ca_name is not None or ports:
            declared = to_int(ca_kv.get("Number of ports"))
            if declared is not None and len(ports) < declared:
                complete = False
            cas.append(
                IbstatCa(
                    name=ca_name,
                    type=ca_kv.get("CA type"),
                    num_ports=declared,
                    firmware=ca_kv.get("Firmware version"),
                    hardware=ca_kv.get("Hardware version"),
                    node_guid=ca_kv.get("Node GUID"),
                    system_image_guid=ca_kv.get("System image GUID"),
                    ports=tuple(ports),
                )
            )
        ca_name, ca_kv, ports = None, {}, []

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith(("ibpanic:", "ibwarn:", "ibstat:")) or "ibpanic" in line:
            errors.append(line)
            if "ibpanic" in line or line.startswith("ibstat:"):
                complete = False
            continue
        if m := _CA.match(line):
            close_ca()
            ca_name, seen_any = m.group(1), True
            continue
        if m := _PORT.match(line):
            close_port()
            port_num, seen_any = int(m.group(1)), True
            continue
        key, colon, value = line.partition(":")
        if colon and _KEY.fullmatch(key):
            value = value.strip()
            if port_num is not None:
                port_kv[key] = value
            else:
                ca_kv[key] = value
            continue
        if seen_any:
            errors.append(line)
            complete = False
    close_ca()
    if not cas and not errors:
        raise ParseError("no CA block found: this is not ibstat output")
    if not cas:
        complete = False
    return Ibstat(tuple(cas), complete, tuple(errors))
