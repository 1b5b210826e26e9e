"""``mlnx_qos -i <netdev>`` (mlnx-tools): trust, DSCP→priority, PFC and ETS.

Sample::

    DCBX mode: OS controlled
    Priority trust state: dscp
    dscp2prio mapping:
        prio:3 dscp:31,30,29,28,27,26,25,24,
        prio:6 dscp:55,54,53,52,51,50,49,48,
    Cable len: 7
    PFC configuration:
        priority    0   1   2   3   4   5   6   7
        enabled     0   0   0   1   0   0   0   0
        buffer      0   0   0   1   0   0   0   0
    tc: 3 ratelimit: unlimited, tsa: vendor
             priority:  3

The trust line and the PFC ``enabled`` row are required (they are what the
checks gate on, as NVIDIA's nic-configuration-operator does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import ParseError, to_int


@dataclass(frozen=True)
class TrafficClass:
    tc: int
    ratelimit: str | None
    tsa: str | None
    bw_pct: int | None
    priorities: tuple[int, ...]


@dataclass(frozen=True)
class MlnxQos:
    dcbx_mode: str | None
    trust: str
    dscp2prio: dict[int, int]
    cable_len_m: int | None
    pfc_enabled: tuple[int, ...]
    pfc_buffer: tuple[int, ...] | None
    receive_buffer_bytes: tuple[int, ...] | None
    tcs: tuple[TrafficClass, ...]

    @property
    def pfc_priorities(self) -> tuple[int, ...]:
        return tuple(p for p, on in enumerate(self.pfc_enabled) if on)


_TC = re.compile(r"^tc:\s*(\d+)\s+ratelimit:\s*([^,]+),\s*tsa:\s*(\w+)(?:,\s*bw:\s*(\d+)%)?")
_PRIO = re.compile(r"^prio:\s*(\d+)\s+dscp:\s*([\d,\s]*)$")


def parse_mlnx_qos(text: str) -> MlnxQos:
    dcbx = trust = None
    dscp2prio: dict[int, int] = {}
    cable = None
    enabled: tuple[int, ...] | None = None
    buffer: tuple[int, ...] | None = None
    rx_buf: tuple[int, ...] | None = None
    tcs: list[list[object]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        low = line.lower()
        if low.startswith("dcbx mode:"):
            dcbx = line.split(":", 1)[1].strip()
        elif low.startswith(("priority trust state:", "priority trust mode:")):
            trust = line.split(":", 1)[1].strip()
        elif m := _PRIO.match(line):
            for d in (x for x in m.group(2).replace(" ", "").split(",") if x):
                dscp2prio[int(d)] = int(m.group(1))
        elif low.startswith("cable len:"):
            cable = to_int(line.split(":", 1)[1])
        elif low.startswith("enabled") and not low.startswith("enabled:"):
            enabled = tuple(int(x) for x in line.split()[1:])
        elif low.startswith("buffer ") and not low.startswith("buffer size"):
            buffer = tuple(int(x) for x in line.split()[1:])
        elif low.startswith("receive buffer size"):
            values = line.split(":", 1)[1].split(",")
            rx_buf = tuple(int(v) for v in values if v.strip().isdigit())
        elif m := _TC.match(line):
            tcs.append(
                [
                    int(m.group(1)),
                    m.group(2).strip(),
                    m.group(3),
                    int(m.group(4)) if m.group(4) else None,
                    [],
                ]
            )
        elif low.startswith("priority:") and tcs:
            prios = tcs[-1][4]
            assert isinstance(prios, list)
            prios.extend(int(x) for x in line.split(":", 1)[1].replace(",", " ").split())
    if trust is None:
        raise ParseError("no 'Priority trust state:' line: not mlnx_qos output, or cut short")
    if enabled is None or len(enabled) != 8 or any(v not in (0, 1) for v in enabled):
        raise ParseError("no complete PFC 'enabled' row of 8 priorities")
    # mlnx_qos ends with every traffic class, tc 0 to 7, each with its priority line
    if [t[0] for t in tcs] != list(range(8)) or not all(t[4] for t in tcs):
        raise ParseError("the traffic classes tc 0..7 are not all listed: cut short?")
    return MlnxQos(
        dcbx_mode=dcbx,
        trust=trust,
        dscp2prio=dscp2prio,
        cable_len_m=cable,
        pfc_enabled=enabled,
        pfc_buffer=buffer,
        receive_buffer_bytes=rx_buf,
        tcs=tuple(
            TrafficClass(
                int(str(t[0])),
                str(t[1]),
                str(t[2]),
                t[3] if isinstance(t[3], int) else None,
                tuple(t[4]) if isinstance(t[4], list) else (),
            )
            for t in tcs
        ),
    )
