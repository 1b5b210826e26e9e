"""``ethtool -S <netdev>``: a NIC's statistics, as name → value.

Forms::

    NIC statistics:
         rx_packets: 845320277
         rx_pcs_symbol_err_phy: 0
         [0]: rx_bytes: 209487403324          (bnx2x and others: a queue prefix in the name)

The header is missing when the output was piped through ``grep``; the name is everything
before the *last* ``": "``. Which counters exist depends on the driver, firmware and port
settings (mlx5 prints ``rx_prio<N>_pause*`` only for priorities with PFC on): the parser
keeps every counter and the checks say which they need. ``no stats available`` and
``Cannot get stats strings information`` raise ParseError (the tool could not read the
NIC). A last line cut before its value makes the result ``complete: false``.

np_cnp_sent / rp_cnp_handled are not ethtool counters (they live in the RDMA device's
``hw_counters``); see ``rackops/checks/phy.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rackops.parsers._common import ParseError


@dataclass(frozen=True)
class EthtoolStats:
    counters: dict[str, int]
    complete: bool
    errors: tuple[str, ...]


_LINE = re.compile(r"^\s+(.+): (\d+)\s*$")
_FAIL = re.compile(
    r"(no stats available|Cannot get stats|Cannot get driver information|"
    r"No such device|Operation not supported)",
    re.IGNORECASE,
)


def parse_ethtool_stats(text: str) -> EthtoolStats:
    fails = [line.strip() for line in text.splitlines() if _FAIL.search(line)]
    counters: dict[str, int] = {}
    complete = True
    bad: list[str] = []
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    for i, raw in enumerate(lines):
        if not raw.strip() or raw.strip() == "NIC statistics:" or _FAIL.search(raw):
            continue
        m = _LINE.match(raw)
        if m:
            counters[m.group(1).strip()] = int(m.group(2))
        elif i == len(lines) - 1 and re.match(r"^\s+\S", raw):
            complete = False  # the last counter was cut before its value
        else:
            bad.append(raw.strip())
    if not counters:
        reason = fails[-1] if fails else "no 'name: value' counter lines"
        raise ParseError(f"no NIC statistics: {reason}")
    if bad:
        raise ParseError(f"not ethtool -S output: unexpected line {bad[0]!r}")
    return EthtoolStats(counters, complete, tuple(fails))
