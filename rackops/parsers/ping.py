"""``ping -M do -s SIZE -c N -W 1 -I IF PEER`` (iputils): the jumbo-frame path check (C-25).

Forms::

    PING 198.18.0.12 (198.18.0.12) from 198.18.0.11 enp24s0np0: 8972(9000) bytes of data.
    8980 bytes from 198.18.0.12: icmp_seq=1 ttl=64 time=0.092 ms
    --- 198.18.0.12 ping statistics ---
    3 packets transmitted, 3 received, 0% packet loss, time 2003ms
    rtt min/avg/max/mdev = 0.070/0.084/0.092/0.009 ms

    ping: local error: message too long, mtu=1500          (the sender's MTU is too small)
    From 198.18.0.11 icmp_seq=1 Frag needed and DF set (mtu = 1500)   (a hop's MTU)
    3 packets transmitted, 0 received, +3 errors, 100% packet loss, time 2040ms

Without the statistics line the output was cut off or ping could not start: ParseError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import ParseError

_HEAD = re.compile(r"^PING (\S+) \((\S+)\)(?: from (\S+) (\S+?))?:? (\d+)\((\d+)\) bytes")
_STATS = re.compile(
    r"^(\d+) packets transmitted, (\d+) (?:packets )?received,"
    r"(?: \+(\d+) errors,)?(?: \+\d+ duplicates,)? ([\d.]+)% packet loss"
)
_RTT = re.compile(r"^(?:rtt|round-trip) min/avg/max/(?:mdev|stddev) = [\d.]+/([\d.]+)/")
_MTU = re.compile(r"mtu\s*=\s*(\d+)")


@dataclass(frozen=True)
class Ping:
    peer: str
    payload_bytes: int | None
    packet_bytes: int | None  # payload + 28 (IPv4 + ICMP headers): the MTU it needs
    transmitted: int
    received: int
    errors: int
    loss_pct: float
    rtt_avg_ms: float | None
    path_mtu: int | None  # from "message too long, mtu=" or "Frag needed ... (mtu = N)"
    messages: tuple[str, ...]


def parse_ping(text: str) -> Ping:
    peer, payload, packet, mtu, rtt = "", None, None, None, None
    stats = None
    messages = []
    for raw in text.splitlines():
        line = raw.strip()
        if m := _HEAD.match(line):
            peer, payload, packet = m.group(2), int(m.group(5)), int(m.group(6))
        elif m := _STATS.match(line):
            stats = m
        elif m := _RTT.match(line):
            rtt = float(m.group(1))
        elif "mtu" in line.lower() and (m := _MTU.search(line)):
            mtu = int(m.group(1))
            messages.append(line)
        elif line.startswith("ping:") or "Destination" in line or "unreachable" in line:
            messages.append(line)
    if stats is None:
        reason = f": {messages[-1]}" if messages else ""
        raise ParseError(f"no 'packets transmitted' statistics line (cut off?){reason}")
    if int(stats.group(2)) > 0 and rtt is None:
        # iputils and busybox both end with the rtt/round-trip line when a reply came back
        raise ParseError("replies received but no 'rtt min/avg/max' line after them (cut off?)")
    return Ping(
        peer=peer,
        payload_bytes=payload,
        packet_bytes=packet,
        transmitted=int(stats.group(1)),
        received=int(stats.group(2)),
        errors=int(stats.group(3) or 0),
        loss_pct=float(stats.group(4)),
        rtt_avg_ms=rtt,
        path_mtu=mtu,
        messages=tuple(dict.fromkeys(messages)),
    )
