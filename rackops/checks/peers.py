"""The peer gate: within one rack, a straggler fails even above the absolute floor.

Robust statistics: median and MAD (median absolute deviation). A value fails
when it is below ``median - k * MAD`` *and* at least ``drop_pct`` below the
median (so a rack of identical results, MAD 0, does not fail on noise).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from rackops.findings import Finding, Status, Subject


def peer_gate(
    values: Mapping[Subject, float],
    *,
    metric: str,
    unit: str,
    k: float,
    drop_pct: float,
    min_peers: int = 4,
) -> list[Finding]:
    if len(values) < min_peers:
        return []
    data = list(values.values())
    med = statistics.median(data)
    mad = statistics.median(abs(v - med) for v in data)
    limit = min(med - k * mad, med * (1 - drop_pct / 100))
    out = []
    for subj, v in values.items():
        if v < limit:
            out.append(
                Finding(
                    "PEER-001",
                    Status.FAIL,
                    subj,
                    f"{metric} {v:.2f} {unit} is a straggler: rack median {med:.2f} {unit}, "
                    f"MAD {mad:.2f}, limit {limit:.2f} {unit}",
                    v,
                    round(limit, 2),
                    unit,
                    "slower than its peers even if above the floor: re-test against known-good "
                    "partners to tell the node from the link",
                )
            )
    return out
