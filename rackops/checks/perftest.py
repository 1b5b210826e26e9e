"""perftest gates: bandwidth at the pinned message size, latency ceiling, sanity first."""

from __future__ import annotations

import re

from rackops.findings import Finding, Status, Subject
from rackops.parsers.perftest import BwRow, LatRow, Perftest
from rackops.profiles import Profile

_CONNECT = re.compile(
    r"(couldn't connect|unable to init|connection refused|no route|"
    r"timed? ?out|unable to open file descriptor)",
    re.IGNORECASE,
)


def check_perftest(
    parsed: Perftest,
    profile: Profile,
    *,
    subject: Subject | None = None,
    message_size_bytes: int | None = None,
) -> list[Finding]:
    subj = subject or Subject(hca=parsed.device)
    if parsed.errors:
        return [_errors(parsed, subj)]
    if not parsed.complete or not parsed.rows:
        return [
            Finding(
                "PERF-000",
                Status.ERROR,
                subj,
                "perftest output is incomplete (result table not closed)",
                remediation="rerun; capture the whole output",
            )
        ]
    size = message_size_bytes or max(r.bytes for r in parsed.rows)
    row = parsed.row_at(size)
    if row is None:
        sizes = ", ".join(str(r.bytes) for r in parsed.rows)
        return [
            Finding(
                "PERF-000",
                Status.ERROR,
                subj,
                f"no result at the pinned size {size} B (have {sizes})",
                None,
                size,
                "bytes",
                "run with -s <pinned size> (or -a)",
            )
        ]
    out: list[Finding] = []
    if parsed.mtu is not None and parsed.mtu < profile.hca.active_mtu:
        out.append(
            Finding(
                "PERF-003",
                Status.WARN,
                subj,
                f"path MTU {parsed.mtu} B, expected {profile.hca.active_mtu} B",
                parsed.mtu,
                profile.hca.active_mtu,
                "bytes",
                "a host on the path has netdev MTU < 4192 (C-23)",
            )
        )
    if isinstance(row, BwRow):
        out.append(_bandwidth(row, parsed.bidirectional, size, profile, subj))
    elif isinstance(row, LatRow):
        out.append(_latency(row, size, profile, subj))
    return out


def _errors(parsed: Perftest, subj: Subject) -> Finding:
    """A run that printed errors: it did not run (ERROR), or the data path failed (FAIL)."""
    text = "; ".join(parsed.errors)
    data_path = ("status", "completion", "modify qp", "connect the hca", "retry")
    if any(_CONNECT.search(e) for e in parsed.errors) or (
        not parsed.rows and not any(k in e.lower() for e in parsed.errors for k in data_path)
    ):
        return Finding(
            "PERF-000",
            Status.ERROR,
            subj,
            f"{parsed.test or 'perftest'} did not run: {text}",
            remediation="check the server side was started with the same "
            "options, the port is free and the address reachable",
        )
    return Finding(
        "PERF-004",
        Status.FAIL,
        subj,
        f"{parsed.test or 'perftest'} failed on the data path: {text}",
        remediation="transport retries exceeded: check the cable and switch "
        "port counters (symbol errors, link downed) of both ends",
    )


MSG_RATE_TOLERANCE = 0.10  # perftest's BW and MsgRate columns agree well within this


def _not_a_measurement(row: BwRow, bidir: bool, size: int, profile: Profile) -> str | None:
    """Why a bandwidth row cannot be real, or None: a figure past the port's line rate (both
    directions' for a bidirectional test), or one its own MsgRate column contradicts
    (messages per second × message size is the bandwidth perftest prints)."""
    line = profile.hca.rate_gbps * (2 if bidir else 1)
    for label, bw in (("average", row.bw_avg_gbps), ("peak", row.bw_peak_gbps)):
        if bw is not None and bw > line:
            return f"({label} above the port's line rate of {line:g} Gb/s)"
    if row.msg_rate_mpps and row.bw_avg_gbps:
        implied = row.msg_rate_mpps * size * 8 / 1000
        off = abs(implied - row.bw_avg_gbps)
        if off > max(MSG_RATE_TOLERANCE * max(implied, row.bw_avg_gbps), 1.0):  # 1: rounding
            return f"(its MsgRate column, {row.msg_rate_mpps:g} Mpps, says {implied:.2f} Gb/s)"
    return None


def _bandwidth(row: BwRow, bidir: bool, size: int, profile: Profile, subj: Subject) -> Finding:
    t = profile.thresholds
    floor = t.ib_write_bw_bidir_gbps_min if bidir else t.ib_write_bw_gbps_min
    what = "bidirectional BW (sum of both directions)" if bidir else "BW"
    if row.bw_avg_gbps == 0 and row.iterations > 0 and not row.msg_rate_mpps:
        # every message completed, no error, yet zero: perftest could not time the run (its
        # cycle-counter calibration failed), which says nothing about the link
        return Finding(
            "PERF-005",
            Status.ERROR,
            subj,
            f"{what} printed as 0 after {row.iterations} completed iterations at {size} B: "
            "perftest could not time the run (its CPU clock calibration failed)",
            remediation="re-run; on a VM use a reliable TSC (tsc=reliable, invtsc), pin the "
            "test to one CPU, and keep other load off the host",
        )
    garbage = _not_a_measurement(row, bidir, size, profile)
    if garbage is not None:
        return Finding(
            "PERF-006",
            Status.ERROR,
            subj,
            f"{what} {row.bw_avg_gbps:.6g} Gb/s at {size} B {garbage}: not a measurement, "
            "the output is garbled",
            row.bw_avg_gbps,
            None,
            "Gb/s",
            "re-run the test and keep its whole output; if it repeats, report the output",
        )
    if row.bw_avg_gbps < floor:
        return Finding(
            "PERF-001",
            Status.FAIL,
            subj,
            f"{what} {row.bw_avg_gbps:.2f} Gb/s at {size} B < floor {floor:g} Gb/s",
            row.bw_avg_gbps,
            floor,
            "Gb/s",
            "check the link rate/width, PCIe of the HCA, and NUMA pinning; "
            "re-test against a known-good partner",
        )
    return Finding(
        "PERF-OK",
        Status.OK,
        subj,
        f"{what} {row.bw_avg_gbps:.2f} Gb/s at {size} B",
        row.bw_avg_gbps,
        floor,
        "Gb/s",
    )


def _latency(row: LatRow, size: int, profile: Profile, subj: Subject) -> Finding:
    ceiling = profile.thresholds.ib_write_lat_us_max
    value = row.t_avg_us if row.t_avg_us is not None else row.t_typical_us
    if value is None:
        return Finding("PERF-000", Status.ERROR, subj, "latency row has no t_avg")
    if value > ceiling:
        return Finding(
            "PERF-002",
            Status.FAIL,
            subj,
            f"latency {value:.2f} us at {size} B > ceiling {ceiling:g} us",
            value,
            ceiling,
            "us",
            "check for a congested or mis-routed path and CPU frequency",
        )
    return Finding("PERF-OK", Status.OK, subj, f"latency {value:.2f} us", value, ceiling, "us")
