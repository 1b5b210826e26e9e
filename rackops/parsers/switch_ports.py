"""What a switch says is at each of its ports — its LLDP neighbour and its operational speed —
in one model for every NOS (:mod:`sonic_ports`, :mod:`nvue_ports`, :mod:`eos_ports`), and the
column reader their text tables share.

A NOS prints these as tables whose columns are runs of dashes under a header; a cell lies
within its column's dashes (left- or right-aligned), may be blank, and the last column runs
to the end of the line. Speeds are normalised to Gb/s (``400G``, ``100000`` Mb/s, ``1000M``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rackops.parsers._common import ParseError

_DASHES = re.compile(r"^\s*-{2,}[-\s…]*$")
_SPEED = re.compile(r"^(\d+(?:\.\d+)?)\s*([MGT])(?:b(?:ps|/s)?)?$", re.I)


@dataclass(frozen=True)
class Neighbor:
    system: str  # the LLDP system name (SysName), "" when the neighbour sent none
    port: str  # its port ID as sent (an ifname, a number, a MAC)


@dataclass(frozen=True)
class PortView:
    speed_gbps: float | None = None
    oper: str | None = None  # up | down | ...
    neighbors: tuple[Neighbor, ...] = ()


@dataclass(frozen=True)
class SwitchPorts:
    kind: str  # lldp | status | both (one command said both, NVUE's interface table)
    complete: bool
    ports: dict[str, PortView] = field(default_factory=dict)
    errors: tuple[str, ...] = ()


def speed_gbps(text: str) -> float | None:
    """``400G``, ``2.5G``, ``1000M``, ``1T`` -> Gb/s; None for blank or N/A."""
    t = text.strip()
    if not t or t.upper() in ("N/A", "NA", "-"):
        return None
    m = _SPEED.match(t)
    if m is None:
        raise ParseError(f"unreadable speed {t[:40]!r}")
    scale = {"M": 0.001, "G": 1.0, "T": 1000.0}[m.group(2).upper()]
    return float(m.group(1)) * scale


def columns(header: str, dashes: str) -> list[tuple[str, int, int]]:
    """(name, start, end) of every column; the last one's end is open (-1)."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"[-…]+", dashes)]
    if not spans:
        raise ParseError("a table with no column rule")
    out = []
    for i, (a, b) in enumerate(spans):
        lo = 0 if i == 0 else spans[i - 1][1]
        out.append((header[lo:b].strip(), a, -1 if i == len(spans) - 1 else b))
    return out


def cells(line: str, cols: list[tuple[str, int, int]]) -> dict[str, str]:
    """A row's cells by column name (a right-aligned cell may start left of its dashes: each
    cell is what lies between the previous column's end and its own)."""
    out = {}
    for i, (name, _a, b) in enumerate(cols):
        lo = 0 if i == 0 else cols[i - 1][2]
        out[name] = (line[lo:] if b == -1 else line[lo:b]).strip()
    return out


def table(lines: list[str], first: str) -> tuple[list[tuple[str, int, int]], int] | None:
    """The columns of the first table whose header starts with ``first`` (after blanks) and
    the index of its first row; None when there is none."""
    for i in range(len(lines) - 1):
        if lines[i].strip().startswith(first) and _DASHES.match(lines[i + 1]):
            return columns(lines[i], lines[i + 1]), i + 2
    return None
