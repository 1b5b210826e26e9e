"""The physical layer of every cabled port: counters under load, BER, optics, flaps.

Counters are read twice, before the pair rounds and after them (``PortSample``: perfquery
on InfiniBand, ``ethtool -S`` plus the RDMA ``hw_counters`` on RoCE, normalised to one set
of names). Findings are on the *delta*, what grew while the rack moved traffic; the
absolute values travel along for context. A counter the host does not expose is WARN
(nothing was judged), never a pass. Every finding names the port at both ends of its
cable: the node's HCA and the switch port of the cabling map.

Thresholds are the profile's ``phy`` section (each number with its source there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.parsers.ethtool_module import Optics, Window
from rackops.parsers.ethtool_stats import EthtoolStats
from rackops.parsers.mlxlink import MlxLink
from rackops.parsers.perfquery import PortCounters
from rackops.profiles import PhyThresholds, Profile

# normalised counter -> its name on each family (what the finding quotes)
IB_NAMES = {
    "symbol_errors": "SymbolErrorCounter",
    "link_recovery": "LinkErrorRecoveryCounter",
    "link_downed": "LinkDownedCounter",
    "rcv_errors": "PortRcvErrors",
    "remote_phys_errors": "PortRcvRemotePhysicalErrors",
    "xmit_discards": "PortXmitDiscards",
    "local_link_integrity": "LocalLinkIntegrityErrors",
    "buffer_overrun": "ExcessiveBufferOverrunErrors",
    "xmit_wait": "PortXmitWait",
    "rx_words": "PortRcvData",
    "tx_words": "PortXmitData",
    "rx_pkts": "PortRcvPkts",
    "tx_pkts": "PortXmitPkts",
}
ROCE_NAMES = {
    "symbol_errors": "rx_pcs_symbol_err_phy",
    "corrected_bits": "rx_corrected_bits_phy",
    "crc_errors": "rx_crc_errors_phy",
    "rx_discards": "rx_discards_phy",
    "link_downed": "link_down_events_phy",
    "out_of_buffer": "rx_out_of_buffer",
    "rx_bytes": "rx_bytes_phy",
    "tx_bytes": "tx_bytes_phy",
    "rx_pkts": "rx_packets_phy",
    "tx_pkts": "tx_packets_phy",
}
HW_COUNTERS = ("np_cnp_sent", "rp_cnp_handled")  # RDMA hw_counters (not in ethtool -S)
# error counters: what grows here under load is a fault of the cable, transceiver or port
PORT_ERRORS = ("rcv_errors", "local_link_integrity", "buffer_overrun")


@dataclass(frozen=True)
class PortSample:
    """One snapshot of one cabled port, in normalised counter names."""

    family: str  # "ib" | "roce"
    counters: dict[str, int]
    missing: tuple[str, ...] = ()  # counters the host does not expose (their real names)
    saturated: tuple[str, ...] = ()
    garbled: tuple[str, ...] = ()  # counters printed as something other than a count

    def as_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "counters": self.counters,
            "missing": list(self.missing),
            "saturated": list(self.saturated),
            "garbled": list(self.garbled),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PortSample:
        return cls(
            d["family"],
            {k: int(v) for k, v in d["counters"].items()},
            tuple(d.get("missing", ())),
            tuple(d.get("saturated", ())),
            tuple(d.get("garbled", ())),
        )


def sample_ib(pc: PortCounters) -> PortSample:
    out: dict[str, int] = {}
    missing = []
    for norm, name in IB_NAMES.items():
        if name in pc.counters:
            out[norm] = pc.counters[name]
        else:
            missing.append(name)
    sat = tuple(n for n in pc.saturated if n in IB_NAMES.values())
    return PortSample("ib", out, tuple(missing), sat)


def sample_roce(
    stats: EthtoolStats, hw: dict[str, int], pfc_priorities: tuple[int, ...]
) -> PortSample:
    c = stats.counters
    out: dict[str, int] = {}
    missing = []
    for norm, name in ROCE_NAMES.items():
        if name in c:
            out[norm] = c[name]
        else:
            missing.append(name)
    for p in pfc_priorities:  # mlx5 prints pause counters only where PFC is on
        for d in ("rx", "tx"):
            for suffix, key in (
                ("pause", f"pause_{d}_p{p}"),
                ("pause_duration", f"pause_{d}_us_p{p}"),
            ):
                name = f"{d}_prio{p}_{suffix}"
                if name in c:
                    out[key] = c[name]
                else:
                    missing.append(name)
    for name in HW_COUNTERS:
        if name in hw:
            out[name] = hw[name]
        else:
            missing.append(f"hw_counters/{name}")
    return PortSample("roce", out, tuple(missing), ())


@dataclass
class PortReport:
    """What the report shows for one port: deltas, absolutes, BER, optics."""

    delta: dict[str, int] = field(default_factory=dict)
    absolute: dict[str, int] = field(default_factory=dict)
    raw_ber: float | None = None
    effective_ber: float | None = None
    rx_power_dbm: list[float | None] = field(default_factory=list)


def _end_to_end(subj: Subject) -> str:
    """Both ends of the port's cable: the node's HCA and its switch port (from the map), or
    a switch port and the far end of its inter-switch link."""
    if subj.node is None and subj.switch and subj.peer:
        return f"{subj.switch} port {subj.switch_port} ↔ {subj.peer}"
    near = " ".join(x for x in (subj.node, subj.hca) if x) or "this port"
    far = f"{subj.switch} {subj.switch_port}" if subj.switch else "its switch port"
    return f"{near} ↔ {far}"


CABLE_FIX = (
    "clean or replace the transceivers and the cable at both ends ({ends}), reseat, then "
    "re-test; if it follows the port, open a case for the HCA or the switch port"
)


@dataclass(frozen=True)
class _Grew:
    """What grew on one port between its two snapshots, and what it is judged against."""

    d: dict[str, int]
    after: PortSample
    subj: Subject
    phy: PhyThresholds
    interval_s: float
    names: dict[str, str]
    ends: str
    fix: str
    line_bits: float  # bits on the wire in the interval (a BER's denominator)


def judge_counters(
    before: PortSample,
    after: PortSample,
    subj: Subject,
    phy: PhyThresholds,
    interval_s: float,
    report: PortReport,
    line_gbps: float = 0.0,
    names: dict[str, str] | None = None,
) -> list[Finding]:
    """Findings on what grew between the two snapshots of one port. Bit error rates are per
    *line* bit (the link's rate × the interval: FEC and the PCS see every bit on the wire,
    traffic or idle), falling back to the payload received when the rate is unknown."""
    unread = _unread(before, after, names)
    if unread is not None:  # a count the read lost or garbled: what grew there is unknown
        return [
            Finding(
                "PHY-017",
                Status.ERROR,
                subj,
                unread,
                action="rerun",
                remediation="read the port's counters again, whole; if the switch "
                "prints them so, report its output",
            )
        ]
    d = {k: after.counters[k] - before.counters[k] for k in after.counters if k in before.counters}
    report.delta.update(d)
    report.absolute.update(after.counters)
    wrapped = [k for k, v in d.items() if v < 0]
    if wrapped:  # a counter reset (or wrapped) between the snapshots: the delta says nothing
        return [
            Finding(
                "PHY-009",
                Status.WARN,
                subj,
                f"counters went backwards between the snapshots ({', '.join(wrapped)}): "
                "someone cleared them during the run; not judged",
                remediation="do not clear port counters during an acceptance run",
            )
        ]
    # bits received while the rack was under load (PortRcvData counts 4-octet words), and the
    # bits on the wire in the interval, which is what a BER is counted against
    rx_bits = 32 * d.get("rx_words", 0) if after.family == "ib" else 8 * d.get("rx_bytes", 0)
    line_bits = line_gbps * 1e9 * interval_s if line_gbps > 0 and interval_s > 0 else rx_bits
    ends = _end_to_end(subj)
    g = _Grew(
        d,
        after,
        subj,
        phy,
        interval_s,
        # every counter has a name to quote: the family's own, else the normalised one
        {k: k for k in after.counters}
        | (names or (IB_NAMES if after.family == "ib" else ROCE_NAMES)),
        ends,
        CABLE_FIX.format(ends=ends),
        line_bits,
    )
    return [f for rule in COUNTER_RULES for f in rule(g, before)]


def _unread(before: PortSample, after: PortSample, names: dict[str, str] | None) -> str | None:
    """Why this port's counters cannot be judged at all, or None: a counter read as
    something other than a count (``5000.0``), or one read before the run and gone from the
    read after it (a cut or garbled output hides whatever grew there)."""
    label = names or (IB_NAMES if after.family == "ib" else ROCE_NAMES)
    garbled = sorted(set(before.garbled) | set(after.garbled))
    if garbled:
        which = ", ".join(label.get(k, k) for k in garbled)
        return f"counters not printed as counts, not judged: {which}"
    gone = sorted(set(before.counters) - set(after.counters) - set(after.missing))
    if gone:
        which = ", ".join(label.get(k, k) for k in gone)
        return f"read before the run and missing from the read after it, not judged: {which}"
    return None


def _unjudged(g: _Grew, before: PortSample) -> list[Finding]:
    """Counters that cannot be judged: new after the run, not exposed, or saturated."""
    out = []
    unseen = sorted(set(g.after.counters) - set(before.counters))
    if unseen:  # exposed after the run only: what grew is unknown, never a pass
        names_unseen = ", ".join(g.names.get(k, k) for k in unseen)
        out.append(
            Finding(
                "PHY-009",
                Status.WARN,
                g.subj,
                f"not in the snapshot before the run, so not judged: {names_unseen}",
                remediation="rerun; if it persists, the first read was cut off",
            )
        )
    if g.after.missing:
        out.append(
            Finding(
                "PHY-009",
                Status.WARN,
                g.subj,
                f"not exposed by this host, so not judged: {', '.join(g.after.missing)}",
                remediation="a driver/firmware/perfquery that reports these counters "
                "(MLNX_OFED/DOCA mlx5, rdma-core >= 29), or PFC on the lossless priority",
            )
        )
    if g.after.saturated:
        out.append(
            Finding(
                "PHY-009",
                Status.WARN,
                g.subj,
                f"saturated at their width's maximum, delta unknown: "
                f"{', '.join(g.after.saturated)}",
                remediation="read the 64-bit extended counters (perfquery -x) or clear them "
                "before the run",
            )
        )
    return out


def _flaps(g: _Grew, _before: PortSample) -> list[Finding]:
    """The link went down or retrained while the rack was under load."""
    out = []
    for key, limit in (
        ("link_downed", g.phy.link_downed_max),
        ("link_recovery", g.phy.link_error_recovery_max),
    ):
        if key in g.d and g.d[key] > limit:
            out.append(
                Finding(
                    "PHY-007",
                    Status.FAIL,
                    g.subj,
                    f"link flapped: {g.names.get(key, key)} +{g.d[key]} during the run "
                    f"(now {g.after.counters[key]}); {g.ends}",
                    {"delta": g.d[key], "absolute": g.after.counters[key]},
                    limit,
                    "events",
                    g.fix,
                    action="cable",
                )
            )
    return out


def _symbol_errors(g: _Grew, _before: PortSample) -> list[Finding]:
    """Uncorrectable symbol errors per line bit."""
    se = g.d.get("symbol_errors", 0)
    rate = se / g.line_bits if g.line_bits else float("inf")
    if not (se > 0 and rate > g.phy.symbol_error_ber_max):
        return []
    return [
        Finding(
            "PHY-001",
            Status.FAIL,
            g.subj,
            f"{g.names['symbol_errors']} +{se} under load ({_ber(rate)} per line bit, "
            f"limit {g.phy.symbol_error_ber_max:g}); {g.ends}",
            {
                "delta": se,
                "per_bit": None if not g.line_bits else rate,
                "absolute": g.after.counters["symbol_errors"],
            },
            g.phy.symbol_error_ber_max,
            "errors/bit",
            g.fix,
            action="cable",
        )
    ]


def _raw_ber(g: _Grew, _before: PortSample) -> list[Finding]:
    """Errors FEC corrected (RoCE): the raw BER FEC still hides."""
    cb = g.d.get("corrected_bits", 0)
    if not (g.line_bits and cb / g.line_bits > g.phy.raw_ber_max):
        return []
    return [
        Finding(
            "PHY-002",
            Status.FAIL,
            g.subj,
            f"pre-FEC BER {_ber(cb / g.line_bits)} ({g.names['corrected_bits']} +{cb} over "
            f"{g.line_bits:.3g} line bits) above {g.phy.raw_ber_max:g}: FEC still hides it; "
            f"{g.ends}",
            cb / g.line_bits,
            g.phy.raw_ber_max,
            "BER",
            g.fix,
            action="cable",
        )
    ]


def _port_errors(g: _Grew, _before: PortSample) -> list[Finding]:
    keys = (*PORT_ERRORS, "crc_errors")
    bad = {k: g.d[k] for k in keys if g.d.get(k, 0) > g.phy.port_errors_max}
    if not bad:
        return []
    what = ", ".join(f"{g.names.get(k, k)} +{v}" for k, v in bad.items())
    return [
        Finding(
            "PHY-004",
            Status.FAIL,
            g.subj,
            f"port errors grew under load: {what}; {g.ends}",
            bad,
            g.phy.port_errors_max,
            "errors",
            g.fix,
            action="cable",
        )
    ]


def _remote(g: _Grew, _before: PortSample) -> list[Finding]:
    """Packets already marked bad upstream: another link's fault, not this cable."""
    remote = g.d.get("remote_phys_errors", 0)
    if remote <= 0:
        return []
    return [
        Finding(
            "PHY-016",
            Status.WARN,
            g.subj,
            f"{g.names['remote_phys_errors']} +{remote}: packets arrived already marked bad "
            "by an upstream link (not this cable)",
            remote,
            0,
            "packets",
            "look for the failing inter-switch link on the path (spine/leaf counters)",
        )
    ]


def _discards(g: _Grew, _before: PortSample) -> list[Finding]:
    out = []
    for key, dir_pkts in (("xmit_discards", "tx_pkts"), ("rx_discards", "rx_pkts")):
        pkts = g.d.get(dir_pkts, 0)
        if g.d.get(key, 0) > 0 and dir_pkts not in g.after.counters:
            # a read with no packet count (EOS's discards command): on a lossless fabric
            # any drop under load is one too many
            out.append(
                Finding(
                    "PHY-005",
                    Status.FAIL,
                    g.subj,
                    f"{g.names[key]} +{g.d[key]} under load (no packet count to weigh them "
                    f"against; a lossless fabric drops none); {g.ends}",
                    g.d[key],
                    0,
                    "packets",
                    "drops on a lossless fabric: check PFC on both ends (C-12/C-13), the "
                    "switch buffer profile and the port's congestion",
                    action="node",
                )
            )
        elif g.d.get(key, 0) > 0 and pkts and 100.0 * g.d[key] / pkts > g.phy.discard_pct_max:
            out.append(
                Finding(
                    "PHY-005",
                    Status.FAIL,
                    g.subj,
                    f"{g.names[key]} +{g.d[key]} = {100.0 * g.d[key] / pkts:.3f} % of packets "
                    f"(limit {g.phy.discard_pct_max:g} %); {g.ends}",
                    g.d[key],
                    g.phy.discard_pct_max,
                    "%",
                    "drops on a lossless fabric: check PFC on both ends (C-12/C-13), the "
                    "switch buffer profile and the port's congestion",
                    action="node",
                )
            )
    return out


def _out_of_buffer(g: _Grew, _before: PortSample) -> list[Finding]:
    """Receive buffers the host did not post in time, per packet received."""
    pkts = g.d.get("rx_pkts", 0)
    oob = g.d.get("out_of_buffer", 0)
    if not (oob > 0 and pkts and 100.0 * oob / pkts > g.phy.discard_pct_max):
        return []
    return [
        Finding(
            "PHY-005",
            Status.WARN,
            g.subj,
            f"rx_out_of_buffer +{oob}: the host did not post receive "
            "buffers fast enough (a host issue, not the cable)",
            oob,
            g.phy.discard_pct_max,
            "%",
            "check the receiving process's CPU/NUMA placement and ring sizes",
            action="node",
        )
    ]


def _pause_storms(g: _Grew, _before: PortSample) -> list[Finding]:
    """Pause time on the lossless priorities, as a share of the run."""
    out = []
    for key, v in g.d.items():
        if key.startswith("pause_") and "_us_" in key and g.interval_s > 0:
            pct = 100.0 * v / 1e6 / g.interval_s
            if pct > g.phy.pause_time_pct_max:
                direction, prio = key.split("_")[1], key.rsplit("_p", 1)[1]
                out.append(
                    Finding(
                        "PHY-006",
                        Status.FAIL,
                        g.subj,
                        f"priority {prio} paused {pct:.1f} % of the run ({direction}: "
                        f"{v / 1e6:.2f} s of {g.interval_s:.0f} s): a pause storm; {g.ends}",
                        pct,
                        g.phy.pause_time_pct_max,
                        "%",
                        "find the port that cannot drain (a stuck receiver, a slow HCA, PFC "
                        "on the wrong priority); the PFC watchdog should act on it",
                        action="node",
                    )
                )
    return out


# the counter rules, in the order their findings are listed
COUNTER_RULES = (
    _unjudged,
    _flaps,
    _symbol_errors,
    _raw_ber,
    _port_errors,
    _remote,
    _discards,
    _out_of_buffer,
    _pause_storms,
)


def judge_state(state: str | None, subj: Subject) -> list[Finding]:
    """A port that is not Active at the second snapshot went down during the run."""
    if state is None or state.lower() == "active":
        return []
    return [
        Finding(
            "PHY-008",
            Status.FAIL,
            subj,
            f"port is {state} at the end of the run (Active before it): it went down under "
            f"load; {_end_to_end(subj)}",
            state,
            "Active",
            remediation=CABLE_FIX.format(ends=_end_to_end(subj)),
            action="cable",
        )
    ]


def judge_ber(ml: MlxLink, subj: Subject, profile: Profile, report: PortReport) -> list[Finding]:
    phy = profile.phy
    ends = _end_to_end(subj)
    out: list[Finding] = []
    report.raw_ber, report.effective_ber = ml.raw_ber, ml.effective_ber
    if not ml.complete:
        return [
            Finding(
                "PHY-000",
                Status.ERROR,
                subj,
                "mlxlink output is cut off: BER not judged"
                + (f" ({'; '.join(ml.errors)})" if ml.errors else ""),
                remediation="rerun mlxlink -d <dev> -c -e and keep the whole output",
            )
        ]
    if ml.raw_ber is None and ml.effective_ber is None:
        out.append(
            Finding(
                "PHY-009",
                Status.WARN,
                subj,
                "mlxlink printed no BER (no 'Physical Counters and BER Info'): not judged",
                remediation="run mlxlink with -c (MFT >= 4.2x)",
            )
        )
    if ml.raw_ber is not None and ml.raw_ber > phy.raw_ber_max:
        out.append(
            Finding(
                "PHY-002",
                Status.FAIL,
                subj,
                f"raw physical BER {_ber(ml.raw_ber)} above {phy.raw_ber_max:g} "
                f"(FEC {ml.fec or '?'} still hides it); {ends}",
                ml.raw_ber,
                phy.raw_ber_max,
                "BER",
                CABLE_FIX.format(ends=ends),
                action="cable",
            )
        )
    if ml.effective_ber is not None and ml.effective_ber > phy.effective_ber_max:
        out.append(
            Finding(
                "PHY-003",
                Status.FAIL,
                subj,
                f"effective (post-FEC) BER {_ber(ml.effective_ber)} above "
                f"{phy.effective_ber_max:g}: errors reach the traffic; {ends}",
                ml.effective_ber,
                phy.effective_ber_max,
                "BER",
                CABLE_FIX.format(ends=ends),
                action="cable",
            )
        )
    if ml.status_opcode:  # the firmware's own troubleshooting verdict on this link
        out.append(
            Finding(
                "PHY-015",
                Status.WARN,
                subj,
                f"mlxlink troubleshooting status {ml.status_opcode}: "
                f"{ml.recommendation or 'no recommendation'}; {ends}",
                ml.status_opcode,
                0,
                remediation=ml.recommendation or CABLE_FIX.format(ends=ends),
                action="cable",
            )
        )
    want_width = profile.hca.width.lower()
    if ml.width and ml.width.lower() not in (want_width, "n/a") and ml.state == "Active":
        out.append(
            Finding(
                "PHY-013",
                Status.FAIL,
                subj,
                f"link trained at width {ml.width}, expected {profile.hca.width}; {ends}",
                ml.width,
                profile.hca.width,
                remediation=CABLE_FIX.format(ends=ends),
                action="cable",
            )
        )
    return out


def judge_optics(opt: Optics, subj: Subject, report: PortReport) -> list[Finding]:
    """Each lane's power and the module temperature against the module's own limits."""
    ends = _end_to_end(subj)
    where = f"{opt.vendor or '?'} {opt.part_number or '?'} SN {opt.serial or '?'}"
    report.rx_power_dbm = list(opt.rx_power_dbm)
    if not opt.dom:
        return []  # a passive copper cable reports no diagnostics: nothing to judge
    out: list[Finding] = []
    fix = (
        f"clean the fibre and the connectors of both ends ({ends}); replace the transceiver "
        f"{where} if it stays out of its window"
    )
    for lane in opt.dark_lanes:
        out.append(
            Finding(
                "PHY-014",
                Status.FAIL,
                subj,
                f"no light on rx lane {lane} of module {where}; {ends}",
                None,
                None,
                "dBm",
                fix,
                action="cable",
            )
        )
    for label, values, window in (
        ("rx power", opt.rx_power_dbm, opt.rx_power_window_dbm),
        ("tx power", opt.tx_power_dbm, opt.tx_power_window_dbm),
    ):
        if window is None:
            continue
        for lane, v in enumerate(values, 1):
            if v is None:
                continue
            status, edge = _window(v, window)
            if status is not Status.OK:
                out.append(
                    Finding(
                        "PHY-010" if status is Status.FAIL else "PHY-011",
                        status,
                        subj,
                        f"{label} of lane {lane} is {v:.2f} dBm, beyond the module's {edge} "
                        f"(module {where}); {ends}",
                        v,
                        edge,
                        "dBm",
                        fix,
                        action="cable",
                    )
                )
    if opt.temperature_c is not None and opt.temperature_window_c is not None:
        status, edge = _window(opt.temperature_c, opt.temperature_window_c)
        if status is not Status.OK:
            out.append(
                Finding(
                    "PHY-012",
                    status,
                    subj,
                    f"module {where} at {opt.temperature_c:.1f} °C, beyond its {edge}; {ends}",
                    opt.temperature_c,
                    edge,
                    "C",
                    "check the airflow at this port and the module; replace it if it stays hot",
                    action="cable",
                )
            )
    return out


def _window(v: float, w: Window) -> tuple[Status, str]:
    if w.low_alarm is not None and v < w.low_alarm:
        return Status.FAIL, f"low alarm {w.low_alarm:g}"
    if w.high_alarm is not None and v > w.high_alarm:
        return Status.FAIL, f"high alarm {w.high_alarm:g}"
    if w.low_warning is not None and v < w.low_warning:
        return Status.WARN, f"low warning {w.low_warning:g}"
    if w.high_warning is not None and v > w.high_warning:
        return Status.WARN, f"high warning {w.high_warning:g}"
    return Status.OK, ""


def _ber(x: float) -> str:
    return "inf" if x == float("inf") else f"{x:.1e}"
