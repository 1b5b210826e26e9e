"""The fabric in the report: every switch port the run read (its cable, its status, what its
counters grew by) and the leaf–spine links, each with both of its ends — from the run's
``switch`` records alone (rackops.validate.stages.switches)."""

from __future__ import annotations

from typing import Any

from rackops.findings import STATUS_VALUE

ERROR_COUNTERS = ("crc_errors", "symbol_errors", "rcv_errors")
SWITCH_COLUMNS = (
    "rx_pkts",
    "tx_pkts",
    "crc_errors",
    "symbol_errors",
    "rcv_errors",
    "rx_discards",
    "xmit_discards",
    "pause_rx_p3",
    "pause_tx_p3",
    "ecn_marked",
)


def _worst(findings: list[dict[str, Any]]) -> str:
    return max((f["status"] for f in findings), key=STATUS_VALUE.__getitem__, default="OK")


def switch_ports(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per judged switch port: its cable (a host's HCA, or the ISL's far end). A
    port a finding names but whose counters were not judged (an ISL down, miscabled, at half
    rate, with no counter read) has its row too, with no deltas."""
    out = []
    for r in records:
        meta = r.get("meta") or {}
        named: dict[str, dict[str, Any]] = {
            f["subject"]["switch_port"]: {}
            for f in r["findings"]
            if f["subject"].get("switch_port") and f["subject"].get("peer")
        }
        if r["kind"] != "switch" or ("ports" not in meta and not named):
            continue
        name = meta.get("switch") or r["findings"][0]["subject"].get("switch")
        for port, rep in sorted({**named, **(meta.get("ports") or {})}.items()):
            fs = [f for f in r["findings"] if f["subject"].get("switch_port") == port]
            subj = fs[0]["subject"] if fs else {}
            node, hca, peer = subj.get("node"), subj.get("hca"), subj.get("peer")
            delta = rep.get("delta") or {}
            out.append(
                {
                    "switch": name,
                    "role": meta.get("role"),
                    "port": port,
                    "cable": f"{node}/{hca}" if node and hca else peer,
                    "isl": bool(peer) and not node,
                    "status": _worst(fs),
                    "delta": {k: delta[k] for k in SWITCH_COLUMNS if k in delta},
                    "interval_s": meta.get("interval_s"),
                }
            )
    return out


def isls(ports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The leaf–spine links: each once, with both ends' status and error growth."""
    ends = {f"{p['switch']} port {p['port']}": p for p in ports if p["isl"]}
    out, seen = [], set()
    for here, p in sorted(ends.items()):
        far = ends.get(p["cable"] or "")
        key = tuple(sorted((here, p["cable"] or "")))
        if key in seen:
            continue
        seen.add(key)
        a, b = (far, p) if p["role"] == "spine" else (p, far)
        sides = [x for x in (a, b) if x is not None]
        errors = sum(
            x["delta"].get(k, 0)
            for x in sides
            for k in ("crc_errors", "symbol_errors", "rcv_errors")
        )
        out.append(
            {
                "leaf": f"{a['switch']} port {a['port']}" if a else p["cable"],
                "spine": f"{b['switch']} port {b['port']}" if b else p["cable"],
                "status": max((x["status"] for x in sides), key=STATUS_VALUE.__getitem__),
                "errors": errors,
                "packets": max((x["delta"].get("rx_pkts", 0) for x in sides), default=0),
                "read_both_ends": far is not None,
            }
        )
    return out
