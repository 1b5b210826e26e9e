"""What every stage of a run shares: the rack, the suite, the launcher, the run directory,
and how a step's result is recorded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster
from rackops.profiles import Profile
from rackops.suites import Suite
from rackops.tools.base import Context
from rackops.validate.executor import (
    CommandResult,
    Executor,
    Target,
)
from rackops.validate.records import Kind, Record
from rackops.validate.rundir import RunDir

Progress = Callable[[str], None]


def bar(done: int, total: int, width: int = 24) -> str:
    filled = int(width * done / total) if total else width
    return f"{'█' * filled}{'░' * (width - filled)} {done}/{total}"


class StageBase:
    """The runner's state as the stages see it (``Runner`` is the dataclass that holds it)."""

    cluster: Cluster
    suite: Suite
    profiles: dict[str, Profile]
    targets: dict[str, Target]
    executor: Executor
    rundir: RunDir
    concurrency: int
    lab: bool
    progress: Progress
    port_base: int
    _done: set[str]  # the steps already in results.jsonl (--resume)

    def _ctx(self, node: str) -> Context:
        n = self.cluster.node(node)
        return Context(self.profiles[n.profile], n, self.cluster, self.suite)

    def _record(
        self,
        step_id: str,
        kind: Kind,
        node: str | None,
        tool: str,
        result: CommandResult | None,
        findings: list[Finding],
        meta: dict[str, Any] | None = None,
    ) -> None:
        output = self.rundir.save_output(step_id, result) if result is not None else {}
        findings_json = [f.as_dict() for f in findings]
        self.rundir.append(Record(step_id, kind, node, tool, findings_json, meta or {}, output))


def resumed_warning(code: str, what: str, earlier: int) -> Finding:
    """A resumed run's fabric reads bracket only the pair tests left: the traffic of the
    ``earlier`` ones done before the resume is not in their deltas."""
    return Finding(
        code,
        Status.WARN,
        Subject(),
        f"{what} around this invocation's pair tests only: {earlier} were done before the "
        "resume, and an error that grew during those is not counted (a clean switch port is "
        "not proven clean)",
        remediation="run the validation again from the start to judge the fabric on all of "
        "its traffic",
    )
