"""DCGM diagnostics: Skip is not Pass, and a plugin-level Fail wins over per-GPU Pass."""

from __future__ import annotations

from rackops.findings import Finding, Status, Subject
from rackops.parsers.dcgmi_diag import DcgmDiag, DcgmTest


def check_dcgm(
    parsed: DcgmDiag, *, node: str | None = None, level: int | None = None
) -> list[Finding]:
    here = Subject(node=node)
    if parsed.errors or not parsed.tests:
        why = "; ".join(parsed.errors) or "no test results"
        return [
            Finding(
                "DCGM-000",
                Status.ERROR,
                here,
                f"dcgmi diag did not run: {why}",
                remediation="start nvidia-dcgm (nv-hostengine) and rerun",
            )
        ]
    out: list[Finding] = []
    if not parsed.complete:
        out.append(
            Finding(
                "DCGM-000",
                Status.ERROR,
                here,
                "dcgmi diag output is cut short; the tests after the cut are unknown",
                remediation="rerun with a longer timeout; capture the whole output",
            )
        )
    if level is not None and (parsed.level or 0) < level:
        out.append(
            Finding(
                "DCGM-004",
                Status.ERROR,
                here,
                f"the output covers level {parsed.level}, the suite asks for level {level}",
                parsed.level,
                level,
                remediation=f"run dcgmi diag -r {level}",
            )
        )
    for t in parsed.tests:
        out += _judge_test(t, node)
    if parsed.overall == "Skip":
        out.append(
            Finding(
                "DCGM-003",
                Status.ERROR,
                here,
                "every hardware test was skipped: the run validated nothing",
                "Skip",
                "Pass",
                remediation="run dcgmi diag as root with the GPU idle; check diag-skus.yaml",
            )
        )
    if not any(f.status is not Status.OK for f in out):
        out.append(
            Finding(
                "DCGM-OK",
                Status.OK,
                here,
                f"level {parsed.level}: {len(parsed.tests)} tests passed",
            )
        )
    return out


def _judge_test(t: DcgmTest, node: str | None) -> list[Finding]:
    """One plugin's result: a FAIL per failing GPU (or the plugin), a WARN when it warned,
    was skipped or did not run."""
    here = Subject(node=node)
    failing = sorted((g for g, s in t.gpus.items() if s == "Fail"), key=int)
    detail = f": {' | '.join(t.messages)}" if t.messages else ""
    if failing:
        return [
            Finding(
                "DCGM-001",
                Status.FAIL,
                Subject(node=node, gpu=int(g)),
                f"{t.name} failed{detail}",
                "Fail",
                "Pass",
                remediation="drain the node; rerun the plugin on this GPU; RMA if it fails again",
            )
            for g in failing
        ]
    if t.result == "Fail":
        return [
            Finding(
                "DCGM-001",
                Status.FAIL,
                here,
                f"{t.name} failed at plugin level although every GPU row says Pass{detail}",
                "Fail",
                "Pass",
                remediation="a plugin failure is a failure: read the nvvs log "
                "(/var/log/nvidia-dcgm/nvvs.log) and rerun",
            )
        ]
    if t.result == "Warn" or "Warn" in t.gpus.values():
        return [
            Finding(
                "DCGM-002",
                Status.WARN,
                here,
                f"{t.name} warned{detail}",
                "Warn",
                "Pass",
                remediation="read the warning; fix and rerun",
            )
        ]
    if t.result in ("Skip", "Not Run"):
        return [
            Finding(
                "DCGM-003",
                Status.WARN,
                here,
                f"{t.name} was {t.result.lower()}: it validated nothing",
                t.result,
                "Pass",
                remediation="check the DCGM SKU file and test permissions "
                "(run as root); a skipped test is not a pass",
            )
        ]
    return []
