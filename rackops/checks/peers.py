"""The peer gate: within one rack, a straggler is named even above the absolute floor.

Robust statistics: median and MAD (median absolute deviation). A value is a straggler
when it is worse than the median by more than ``k`` MADs *and* by at least ``drop_pct``
percent of the median. The MAD term adapts to the rack's real spread (a rack of healthy
but noisy links does not flag its slowest member), and the percent floor keeps a rack of
near-identical results (MAD ≈ 0) from flagging noise. With the profiles' k = 4 and 5 %,
this is stricter than the common "1.5 × the median" straggler rule (a 33 % drop for
bandwidth, 50 % for latency) while still robust to a few outliers, which a mean/σ rule is
not. Stragglers are WARN: above the floor the rack still works, but the named node or
link is the first place to look.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from rackops.findings import Finding, Status, Subject


def gate_limit(
    data: list[float], k: float, drop_pct: float, lower_is_better: bool = False
) -> tuple[float, float, float]:
    """The rack's median, its MAD, and the gate: k MADs or drop_pct of the median (the
    wider) on the bad side of the median."""
    med = statistics.median(data)
    mad = statistics.median(abs(v - med) for v in data)
    margin = max(k * mad, abs(med) * drop_pct / 100)
    return med, mad, med + margin if lower_is_better else med - margin


def peer_gate(
    values: Mapping[Subject, float],
    *,
    metric: str,
    unit: str,
    k: float,
    drop_pct: float,
    min_peers: int = 4,
    lower_is_better: bool = False,
) -> list[Finding]:
    if len(values) < min_peers:
        return []
    med, mad, limit = gate_limit(list(values.values()), k, drop_pct, lower_is_better)
    out = []
    for subj, v in values.items():
        if (v > limit) if lower_is_better else (v < limit):
            worse = "above" if lower_is_better else "below"
            out.append(
                Finding(
                    "PEER-001",
                    Status.WARN,
                    subj,
                    f"{metric} {v:.2f} {unit} is a straggler: {abs(v - med) / med * 100:.0f} % "
                    f"{worse} the rack median {med:.2f} {unit} (MAD {mad:.2f}; limit "
                    f"{limit:.2f} {unit})",
                    v,
                    round(limit, 2),
                    unit,
                    "worse than its peers even if within the floor: re-test against "
                    "known-good partners (--pairing suspects) to tell the node from the link",
                )
            )
    return out
