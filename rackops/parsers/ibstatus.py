"""``ibstatus`` (infiniband-diags script reading sysfs): one block per port.

Sample::

    Infiniband device 'mlx5_0' port 1 status:
        default gid:     fe80:0000:0000:0000:b83f:d203:00e2:a0b0
        base lid:    0xc
        sm lid:      0x1
        state:       4: ACTIVE
        phys state:  5: LinkUp
        rate:        400 Gb/sec (4X NDR)
        link_layer:  InfiniBand

``rate`` carries width and speed (``200 Gb/sec (2X NDR)`` exists: NDR200).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import ParseError, to_int

FIELDS = ("state", "phys state", "rate", "link_layer")


@dataclass(frozen=True)
class IbstatusPort:
    device: str
    port: int
    default_gid: str | None
    base_lid: int | None
    sm_lid: int | None
    state: str | None
    state_code: int | None
    physical_state: str | None
    physical_state_code: int | None
    rate_gbps: float | None
    width: str | None
    speed: str | None
    link_layer: str | None


@dataclass(frozen=True)
class Ibstatus:
    ports: tuple[IbstatusPort, ...]
    complete: bool


_HEAD = re.compile(r"^Infiniband device '([^']+)' port (\d+) status:\s*$")
_CODED = re.compile(r"^(\d+):\s*(\S+)$")
_RATE = re.compile(r"^([\d.]+)\s*Gb/sec(?:\s*\((\d+X)\s*([A-Z]*)\))?")


def _coded(value: str | None) -> tuple[int | None, str | None]:
    if value is None:
        return None, None
    m = _CODED.match(value)
    return (int(m.group(1)), m.group(2)) if m else (None, value)


def parse_ibstatus(text: str) -> Ibstatus:
    blocks: list[tuple[str, int, dict[str, str]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := _HEAD.match(line):
            blocks.append((m.group(1), int(m.group(2)), {}))
            continue
        if ":" in line and blocks:
            key, _, value = line.partition(":")
            blocks[-1][2][key.strip()] = value.strip()
            continue
        if blocks:
            raise ParseError(f"unexpected line in ibstatus output: {line!r}")
    if not blocks:
        raise ParseError("no 'Infiniband device ... status:' block: this is not ibstatus output")
    ports = []
    complete = True
    for device, port, kv in blocks:
        if any(f not in kv for f in FIELDS):
            complete = False
        state_code, state = _coded(kv.get("state"))
        phys_code, phys = _coded(kv.get("phys state"))
        rate = _RATE.match(kv.get("rate", ""))
        ports.append(
            IbstatusPort(
                device=device,
                port=port,
                default_gid=kv.get("default gid"),
                base_lid=to_int(kv.get("base lid")),
                sm_lid=to_int(kv.get("sm lid")),
                state=state,
                state_code=state_code,
                physical_state=phys,
                physical_state_code=phys_code,
                rate_gbps=float(rate.group(1)) if rate else None,
                width=rate.group(2) if rate else None,
                speed=(rate.group(3) or None) if rate else None,
                link_layer=kv.get("link_layer"),
            )
        )
    return Ibstatus(tuple(ports), complete)
