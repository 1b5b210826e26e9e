"""Two runs of one rack compared (``rackops report --compare OLD NEW``): what a repair fixed,
what is new, and what got worse beyond run-to-run noise, per link, GPU and port, named as
the report names culprits.

Both reports are built from their run directories (never from a report.json that may be
stale or altered). A culprit is the same in both runs when it names the same thing (kind,
node, GPU, HCA, switch port); its message may differ (a figure moved).
"""

from __future__ import annotations

import math
from typing import Any

from rackops.names import natural_key
from rackops.validate.records import is_number, one_line

# a figure that moved by less than this is run-to-run noise (perftest and NCCL repeat
# within 1-3 % on a healthy fabric; GEMM and HBM within 1-2 %)
NOISE_PCT = 5.0
# a port's error count during a run: a few symbol errors come and go on a healthy link (the
# BER floor allows them); this many, and twice the earlier run's, is a port getting worse
PORT_NOISE = 10


def _identity(c: dict[str, Any]) -> tuple[Any, ...]:
    """What a culprit names: a link by its two ends in either order; a culprit of no node
    (the fabric, the SM, the fleet) also by the codes of its evidence, so two different
    problems of the fabric are two culprits."""
    if c["kind"] == "link" and c.get("peer"):
        ends = sorted([f"{c.get('node')}/{c.get('hca')}", str(c["peer"]).split(" ")[0]])
        return ("link", *ends)
    codes = () if c.get("node") else tuple(
        sorted({str(e.get("code")) for e in c.get("evidence") or [] if isinstance(e, dict)})
    )  # fmt: skip
    return (c["kind"], c.get("node"), c.get("gpu"), c.get("hca"), c.get("switch"),
            c.get("switch_port"), c.get("peer") if not c.get("node") else None, codes)  # fmt: skip


def _links(report: dict[str, Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Links by their two ends (either order: rounds may pair them the other way)."""
    out = {}
    for p in report.get("pairs") or []:
        ends = sorted(
            [(p["server"], p.get("server_hca")), (p["client"], p.get("client_hca"))],
            key=lambda e: (natural_key(e[0]), natural_key(e[1])),
        )
        out[(ends[0], ends[1], p["rail"])] = p
    return out


def _change(old: Any, new: Any, lower_is_better: bool) -> float | None:
    """How much worse ``new`` is than ``old``, in percent of ``old`` (None: not numbers)."""
    if not (is_number(old) and is_number(new)) or old == 0:
        return None
    pct: float = float(new - old) / abs(old) * 100
    if not math.isfinite(pct):
        return None
    return pct if lower_is_better else -pct


def _regressed(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    old_links = _links(old)
    for key, p in _links(new).items():
        before = old_links.get(key)
        if before is None:
            continue
        (a, ha), (b, hb), rail = key
        where = f"{a} {ha} ↔ {b}/{hb} (rail {rail})"
        for figure, field, unit, lower in (
            ("bandwidth", "bw_gbps", "Gb/s", False),
            ("latency", "lat_us", "us", True),
        ):
            worse = _change(before.get(field), p.get(field), lower)
            if worse is not None and worse > NOISE_PCT:
                out.append(_row(where, f"link {figure} ({unit})", before[field], p[field], lower))
    old_gpus = {(g["node"], g["gpu"]): g for g in old.get("gpus") or []}
    for g in new.get("gpus") or []:
        before = old_gpus.get((g["node"], g["gpu"]))
        for field, what in (("gemm_tflops", "GEMM (TFLOPS)"), ("hbm_gbs", "HBM (GB/s)")):
            worse = _change((before or {}).get(field), g.get(field), False)
            if before and worse is not None and worse > NOISE_PCT:
                where = f"{g['node']} GPU {g['gpu']}"
                out.append(_row(where, what, before[field], g[field], False))
    old_ports = {(p["node"], p["hca"]): p for p in old.get("ports") or []}
    for p in new.get("ports") or []:
        before = old_ports.get((p["node"], p["hca"]))
        grew, was = _errors(p), _errors(before) if before else None
        if was is not None and grew >= PORT_NOISE and grew > 2 * was:  # counts: twice, not 5 %
            where = f"{p['node']} {p['hca']}" + (
                f" [{p['switch']} {p['switch_port']}]" if p.get("switch") else ""
            )
            out.append(_row(where, "port errors grown during the run", was, grew, True))
    return sorted(out, key=lambda d: (natural_key(d["where"]), d["figure"]))


def _errors(port: dict[str, Any]) -> int:
    """A port's error growth during its run (FEC's corrected bits are not errors)."""
    return sum(
        int(v) for c, v in (port.get("delta") or {}).items() if c != "corrected_bits" and
        is_number(v)
    )  # fmt: skip


def _row(where: str, figure: str, old: float, new: float, lower: bool) -> dict[str, Any]:
    pct = (new - old) / abs(old) * 100 if old else math.nan  # from none: no ratio
    change = round(pct, 1) if math.isfinite(pct) else None
    return {"where": where, "figure": figure, "old": old, "new": new,
            "change_pct": change, "lower_is_better": lower}  # fmt: skip


def compare(old: dict[str, Any], new: dict[str, Any], old_run: str, new_run: str) -> dict[str, Any]:
    """What changed from the ``old`` report to the ``new`` one."""
    before = {_identity(c): c for c in old["culprits"]}
    after = {_identity(c): c for c in new["culprits"]}
    tested = _tested(new)
    untested = {k: c for k, c in before.items() if k not in after and not tested(c)}
    notes = []
    for what in ("inventory", "suite"):
        if old.get(what) != new.get(what):
            notes.append(f"the runs differ in {what}: {old.get(what)!r} then {new.get(what)!r}")
    return {
        "runs": {
            "old": {"run": old_run, "verdict": old["verdict"], "started": old.get("started")},
            "new": {"run": new_run, "verdict": new["verdict"], "started": new.get("started")},
        },
        "fixed": [c for k, c in before.items() if k not in after and k not in untested],
        "untested": list(untested.values()),  # on what the later run did not test
        "new": [c for k, c in after.items() if k not in before],
        "still": [c for k, c in after.items() if k in before],
        "regressed": _regressed(old, new),
        "noise_pct": NOISE_PCT,
        "notes": notes,
    }


def _tested(report: dict[str, Any]) -> Any:
    """Whether a run tested what a culprit names: its node came to a verdict in the run (a
    limited run did not re-test the others, an unreachable node was not tested: their
    culprits are not fixed); a culprit of the fabric
    (a leaf, a leaf–spine link, the SM) where the run was not limited or read its switch."""
    # a node is tested where one of its checks or links came to a verdict (an unreachable
    # node, or one whose every check ERRORed, was not)
    nodes = {n for n, checks in (report.get("nodes") or {}).items()
             if any(st != "ERROR" for st in checks.values())}  # fmt: skip
    nodes |= {
        p[end]
        for p in report.get("pairs") or []
        if p.get("status") != "ERROR"
        for end in ("server", "client")
    }
    switches = {p.get("switch") for p in report.get("switch_ports") or []}

    def tested(c: dict[str, Any]) -> bool:
        if c.get("node"):
            return c["node"] in nodes
        return not report.get("limit") or c.get("switch") in switches

    return tested


def summary(cmp: dict[str, Any]) -> str:
    """The comparison as the terminal shows it."""
    lines = [
        f"compared {cmp['runs']['old']['run']} ({cmp['runs']['old']['verdict']}) with "
        f"{cmp['runs']['new']['run']} ({cmp['runs']['new']['verdict']})",
        *(f"NOTE   {n}" for n in cmp["notes"]),
    ]
    for label, key in (
        ("FIXED", "fixed"),
        ("NEW", "new"),
        ("STILL", "still"),
        ("UNTESTED", "untested"),
    ):
        lines += [f"{label:6} {c['where']}: {c['message']}" for c in cmp[key]]
    lines += [
        f"WORSE  {d['where']}: {d['figure']} {d['old']:g} -> {d['new']:g}"
        + (f" ({d['change_pct']:+.1f} %)" if d["change_pct"] is not None else "")
        for d in cmp["regressed"]
    ]
    lines.append(
        f"{len(cmp['fixed'])} fixed, {len(cmp['new'])} new, {len(cmp['still'])} still to fix, "
        f"{len(cmp['untested'])} not tested again, "
        f"{len(cmp['regressed'])} regressed beyond {cmp['noise_pct']:g} % noise"
    )
    return "\n".join(one_line(x) for x in lines)  # a field's ESC, BEL or newline: never raw
