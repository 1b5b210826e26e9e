"""Repeat policy: every attempt is kept; a result that passes only sometimes is flaky."""

from __future__ import annotations

from collections.abc import Sequence

from rackops.findings import Finding, Status, worst


def combine_attempts(attempts: Sequence[Sequence[Finding]]) -> Finding:
    """One finding for a test run several times, carrying every attempt.

    All attempts OK → OK; all FAIL → FAIL; mixed pass/fail → WARN (flaky), because a
    link that passes one run in three is not accepted silently; only ERRORs → ERROR.
    """
    if not attempts:
        raise ValueError("no attempts to combine")
    verdicts = [worst(list(a)) for a in attempts]
    flat = tuple(f for a in attempts for f in a)
    last = max(attempts[-1], key=lambda f: f.status != Status.OK)
    passed = sum(v is Status.OK for v in verdicts)
    if passed == len(verdicts):
        status, note = Status.OK, f"passed {passed} of {len(verdicts)} attempts"
    elif Status.FAIL in verdicts and passed:
        status, note = Status.WARN, f"flaky: passed {passed} of {len(verdicts)} attempts"
    elif Status.FAIL in verdicts:
        status, note = Status.FAIL, f"failed {len(verdicts) - passed} of {len(verdicts)} attempts"
    elif passed:
        status, note = Status.WARN, f"passed {passed} of {len(verdicts)}; the rest could not run"
    else:
        status, note = Status.ERROR, f"could not run in {len(verdicts)} attempts"
    return Finding(
        last.code,
        status,
        last.subject,
        f"{last.message} ({note})",
        last.observed,
        last.expected,
        last.unit,
        last.remediation,
        attempts=flat,
        action=last.action,
    )
