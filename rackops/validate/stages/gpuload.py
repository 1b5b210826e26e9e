"""GPUs under load: every GPU sampled while the run loads it, and the kernel log read
before the run and after it (docs/design.md "GPUs under load").

``load_begin`` runs before stage 1: on every node it reads the kernel log (the baseline)
and starts one sampler in the background with the launcher's ``start`` (the capability
perftest servers use): ``nvidia-smi --query-gpu=… -lms N``, one row per GPU per interval.
``load_end`` runs after the last load (multi-node NCCL): it stops each sampler (the
sampler's shell prints its pid; ``kill`` of that pid makes it stop its nvidia-smi and exit
0), records the samples with their judgement, then reads the kernel log again. An event in
the second read and not in the first happened during the run; one in both is history.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rackops.checks.gpuload import judge_kernel_log, judge_samples
from rackops.checks.nvlcascade import TrayLog, judge_cascade
from rackops.errors import RackopsError
from rackops.findings import Finding, Status, Subject
from rackops.parsers import ParseError
from rackops.parsers._common import MAX_INPUT_CHARS
from rackops.parsers.kernel_xid import GpuEvent, parse_kernel_xid
from rackops.parsers.nvidia_smi_perf import parse_smi_samples
from rackops.tools import parse, registry
from rackops.tools._common import program_of
from rackops.tools.kernel_xid import KERNEL_LOG_ARGV
from rackops.tools.nvidia_smi_perf import PID_MARK, sampler_argv
from rackops.validate.executor import CommandResult, PairLauncher, Started
from rackops.validate.plan import Plan
from rackops.validate.stages.base import StageBase

NEVER = b"\x00rackops: pump only\x00"


def _pid(handle: Started) -> str | None:
    err = bytes(getattr(handle, "err", b""))
    at = err.find(PID_MARK)
    if at < 0:
        return None
    digits = err[at + len(PID_MARK) :].split(b"\n", 1)[0].strip()
    ok = digits.isdigit() and len(digits) <= 10 and int(digits) > 1  # never 0 (group), 1 (init)
    return digits.decode() if ok else None


class GpuLoadStage(StageBase):
    _samplers: dict[str, Started]
    _not_started: dict[str, str]  # node -> why its sampler could not be started
    _pump_stop: threading.Event
    _pump_thread: threading.Thread | None
    _bus_index: dict[str, dict[str, int]]  # node -> PCI address -> GPU index, as sampled
    _loaded_now: set[str]  # nodes a GPU-loading check ran on in this invocation (load_end)
    _steps: dict[tuple[str, str], dict[str, Any]]  # (node, step) -> its record (load_end)

    def load_begin(self, plan: Plan, done: set[str], unreachable: set[str]) -> None:
        params = self.suite.checks.gpu_load
        self._samplers, self._not_started, self._bus_index = {}, {}, {}
        self._steps, self._loaded_now = {}, set()
        self._pump_stop = threading.Event()
        self._pump_thread = None
        if params is None:
            return
        nodes = [n for n in plan.nodes if n not in unreachable]
        if params.kernel_log:
            todo = [n for n in nodes if f"node/{n}/kernel-before" not in done]
            with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                list(pool.map(self._kernel_before, todo))
        if not isinstance(self.executor, PairLauncher):
            for n in nodes:
                if f"node/{n}/gpu-samples" not in done:
                    self._record(
                        f"node/{n}/gpu-samples",
                        "node",
                        n,
                        "gpu-samples",
                        None,
                        [
                            Finding(
                                "LOAD-000",
                                Status.WARN,
                                Subject(node=n),
                                f"GPUs not sampled under load: the {self.executor.info.name} "
                                "launcher cannot start a background command",
                                remediation="validate with --launcher ssh or slurm",
                            )
                        ],
                    )
            return
        budget = max(600, self.suite.budget_minutes * 60 * 2)  # the node kills a lost sampler
        for n in nodes:
            if f"node/{n}/gpu-samples" in done:
                continue
            assert isinstance(self.executor, PairLauncher)
            try:
                h = self.executor.start(
                    self.targets[n], sampler_argv(params.sample_interval_ms), budget
                )
            except Exception as exc:
                self._not_started[n] = str(exc)[:300] or type(exc).__name__
                continue
            self._samplers[n] = h
        if self._samplers:
            self._pump_thread = threading.Thread(target=self._pump, daemon=True)
            self._pump_thread.start()
            self.progress(
                f"[load] sampling {len(self._samplers)} node(s) every "
                f"{params.sample_interval_ms} ms"
            )

    def _pump(self) -> None:
        """Read every sampler's output as it comes, so none stalls on a full channel."""
        while not self._pump_stop.wait(1.0):
            for h in list(self._samplers.values()):
                h.wait_for(NEVER, 0.01)

    def _pump_off(self) -> None:
        self._pump_stop.set()
        if self._pump_thread is not None:
            self._pump_thread.join(10.0)  # the stop reads the handles after it: not both at once
            self._pump_thread = None

    def load_abort(self) -> None:
        """The run was interrupted: stop every sampler and record nothing, so a resumed run
        starts its own samplers and reads the kernel log after its own load."""
        if not self._samplers:
            return
        self._pump_off()
        for node, h in self._samplers.items():
            pid = _pid(h)
            if pid is not None and not h.exited():
                self.executor.run(self.targets[node], kill_argv(pid), 10)
        self._samplers = {}

    def load_end(self, plan: Plan, done: set[str], unreachable: set[str]) -> None:
        params = self.suite.checks.gpu_load
        if params is None:
            return
        self._pump_off()
        for n, why in sorted(self._not_started.items()):
            if n not in unreachable:
                self._no_samples(n, f"the sampler could not be started: {why}")
        loaders = {t.name for t in registry().values() if t.loads_gpus}
        self._loaded_now = {  # nodes whose GPUs a check of this invocation loaded
            r["node"]
            for r in self.rundir.records()
            if r["kind"] == "node" and r["tool"] in loaders and r["id"] not in done
        }
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            list(pool.map(self._stop, sorted(self._samplers)))
            if params.kernel_log:
                todo = [
                    n
                    for n in plan.nodes
                    if n not in unreachable and f"node/{n}/kernel-after" not in done
                ]
                # what the judgement needs of stage 1, read once for every node
                self._steps = {
                    (r["node"], r["id"].rsplit("/", 1)[-1]): r
                    for r in self.rundir.records()
                    if r["kind"] == "node"
                    and r["id"].endswith(("/kernel-before", "/nvidia-smi-xml"))
                }
                list(pool.map(self._kernel_after, todo))
        if params.kernel_log:
            self._nvlink_groups(plan, done, unreachable)
        self._samplers = {}

    # ------------------------------------------------------------------ NVLink groups

    def _nvlink_groups(self, plan: Plan, done: set[str], unreachable: set[str]) -> None:
        """One NVLink fault and the GPUs that followed it (``checks/nvlcascade.py``), per
        group of GPUs sharing a fabric: a multi-node domain's trays (always recorded), or a
        node of its own (recorded when its GPUs logged an NVLink Xid during the run)."""
        after = {
            r["node"]: r
            for r in self.rundir.records()
            if r["kind"] == "node" and r["id"] == f"node/{r['node']}/kernel-after"
        }
        groups: dict[tuple[str, str], list[str]] = {}  # (domain|node, its name) -> nodes
        for n in plan.nodes:
            link = self.cluster.node(n).nvlink
            key = ("domain", link.domain) if link is not None else ("node", n)
            groups.setdefault(key, []).append(n)
        for (what, group), nodes in sorted(groups.items()):
            domain = what == "domain"
            step = f"nvlxid/{group}" if domain else f"nvlxid/node/{group}"
            if step in done:
                continue
            logs = [
                TrayLog(n, self._gpu_addresses(n), self._during(n, after.get(n)))
                for n in nodes
                if n not in unreachable
            ]
            findings, view = judge_cascade(group, logs)
            if domain or any(f.status is Status.FAIL for f in findings):
                self._record(step, "nvldomain", None, "nvlxid", None, findings, {"cascade": view})

    def _during(self, node: str, rec: dict[str, Any] | None) -> list[GpuEvent] | None:
        """The events of the node's kernel log (its kernel-after record) that this run
        logged; None where it was not read whole."""
        if rec is None or any(f["status"] == "ERROR" for f in rec["findings"]):
            return None
        try:
            text = self.rundir.read_raw(rec) or ""
            log = parse_kernel_xid(text) if text.strip() else None
        except (RackopsError, ParseError):
            return None
        events = list(log.events) if log is not None else []
        return split_by_baseline(events, self._baseline(node))[1]

    # ------------------------------------------------------------------ samples

    def _no_samples(self, node: str, why: str) -> None:
        self._record(
            f"node/{node}/gpu-samples",
            "node",
            node,
            "gpu-samples",
            None,
            [
                Finding(
                    "LOAD-000",
                    Status.ERROR,
                    Subject(node=node),
                    f"GPUs not sampled under load: {why}",
                    remediation="check nvidia-smi runs on the node; rerun",
                )
            ],
        )

    def _stop(self, node: str) -> None:
        h = self._samplers[node]
        h.wait_for(PID_MARK, 5.0)
        pid = _pid(h)
        early = h.exited()  # it stopped on its own: the load after that was not watched
        if pid is not None and not early:
            self.executor.run(self.targets[node], kill_argv(pid), 30)
        result = h.wait(30.0)
        findings = self._judge_samples(node, result)
        if early or result.timed_out or (result.rc not in (0, None) and result.error is None):
            why = "timed out" if result.timed_out else f"exited {result.rc}"
            tail = " | ".join(result.stderr.strip().splitlines()[-2:])[:300]
            findings.append(
                Finding(
                    "LOAD-001",
                    Status.ERROR,
                    Subject(node=node),
                    f"the GPU sampler stopped before the load ended ({why}"
                    + (f": {tail}" if tail else "")
                    + "): the samples cover only part of the run",
                    remediation="check nvidia-smi and the driver on the node (dmesg); rerun",
                )
            )
        kept = keep_tail(result.stdout)
        if len(kept) < len(result.stdout):
            findings.append(
                Finding(
                    "LOAD-002",
                    Status.WARN,
                    Subject(node=node),
                    f"{len(result.stdout)} characters of samples, all judged; the run directory "
                    f"keeps the last {len(kept)} (the report's traces show that part)",
                    remediation="raise checks.gpu_load.sample_interval_ms for runs this long",
                )
            )
            result.stdout = kept
        self._record(f"node/{node}/gpu-samples", "node", node, "gpu-samples", result, findings)

    def _judge_samples(self, node: str, result: CommandResult) -> list[Finding]:
        subj = Subject(node=node)
        if result.error is not None:
            return [Finding("LOAD-000", Status.ERROR, subj, f"sampler: {result.error}")]
        if not result.stdout.strip():
            why = result.stderr.strip().splitlines()[-1:] or [f"exit {result.rc}"]
            return [
                Finding(
                    "LOAD-000",
                    Status.ERROR,
                    subj,
                    f"the sampler printed no sample ({why[0][:200]})",
                    remediation="check nvidia-smi on the node",
                )
            ]
        samples: list[Any] = []
        errors: list[str] = []
        try:
            for chunk in chunks(result.stdout):
                parsed = parse_smi_samples(chunk)
                samples += parsed.samples
                # the sampler was stopped: its last row may be cut, nothing else may be wrong
                errors += [e for e in parsed.errors if "no final newline" not in e]
        except ParseError as exc:
            return [Finding("LOAD-000", Status.ERROR, subj, f"samples unreadable: {exc}")]
        out = []
        if errors or not samples:
            out.append(
                Finding(
                    "LOAD-000",
                    Status.ERROR,
                    subj,
                    f"samples not whole: {'; '.join(errors[:3]) or 'no sample row'}",
                    remediation="check nvidia-smi on the node; rerun",
                )
            )
        self._bus_index[node] = {
            s.bus_id[-12:].lower(): s.index for s in samples if s.bus_id and s.index is not None
        }
        profile = self.profiles[self.cluster.node(node).profile]
        expect = node in self._loaded_now
        return out + judge_samples(samples, node, profile.load, expect_load=expect)

    # ------------------------------------------------------------------ kernel log

    def _kernel_read(self, node: str) -> tuple[CommandResult, list[Finding]]:
        result = self.executor.run(self.targets[node], KERNEL_LOG_ARGV, 60)
        subj = Subject(node=node)
        if result.error is not None or result.timed_out or result.rc != 0:
            why = result.error or (
                "timed out"
                if result.timed_out
                else (result.stderr.strip().splitlines() or [f"exit {result.rc}"])[-1][:200]
            )
            return result, [
                Finding(
                    "XID-000",
                    Status.ERROR,
                    subj,
                    f"the kernel log could not be read ({program_of(result.argv)}: {why})",
                    remediation="validate as root (become) or with CAP_SYSLOG: dmesg needs it "
                    "where kernel.dmesg_restrict=1",
                )
            ]
        return result, []

    def _kernel_before(self, node: str) -> None:
        step = f"node/{node}/kernel-before"
        result, findings = self._kernel_read(node)
        if result.error is not None:
            return  # not reachable: stage 1 names it; the read after has no baseline
        if not findings:
            findings = [
                Finding(
                    "XID-OK",
                    Status.OK,
                    Subject(node=node),
                    "kernel log read before the run (its baseline)",
                )
            ]
        self._record(step, "node", node, "kernel-xid", result, findings)

    def _raw(self, node: str, step: str) -> str | None:
        rec = self._steps.get((node, step))
        if rec is None or any(f["status"] == "ERROR" for f in rec["findings"]):
            return None
        try:
            return self.rundir.read_raw(rec)
        except RackopsError:
            return None

    def _baseline(self, node: str) -> list[GpuEvent] | None:
        text = self._raw(node, "kernel-before")
        if text is None:
            return None
        try:
            return list(parse_kernel_xid(text).events) if text.strip() else []
        except ParseError:
            return None

    def _kernel_after(self, node: str) -> None:
        step = f"node/{node}/kernel-after"
        result, findings = self._kernel_read(node)
        if not findings:
            findings = self._judge_kernel(node, result.stdout)
        self._record(step, "node", node, "kernel-xid", result, findings)

    def _judge_kernel(self, node: str, text: str) -> list[Finding]:
        subj = Subject(node=node)
        try:
            log = parse_kernel_xid(text) if text.strip() else None
        except ParseError as exc:
            return [Finding("XID-000", Status.ERROR, subj, f"kernel log unreadable: {exc}")]
        events = list(log.events) if log else []
        baseline = self._baseline(node)
        before, during = split_by_baseline(events, baseline)
        gpus = self._gpu_addresses(node)
        out = judge_kernel_log(before, gpus, node, before_run=True)
        out += judge_kernel_log(during, gpus, node, before_run=False)
        if baseline is None and during:
            out.append(
                Finding(
                    "XID-001",
                    Status.WARN,
                    subj,
                    "no kernel log from before the run: every event is taken as the run's own",
                )
            )
        if log is not None and not log.complete:
            out.append(
                Finding(
                    "XID-000",
                    Status.ERROR,
                    subj,
                    f"kernel log not whole: {'; '.join(log.errors[:3])}",
                )
            )
        return out or [Finding("XID-OK", Status.OK, subj, "no GPU event in the kernel log")]

    def _gpu_addresses(self, node: str) -> dict[str, int]:
        """PCI address (0000:18:00.0) -> GPU index: as the samples name GPUs (nvidia-smi's
        index, the one every per-GPU finding uses), else from this run's nvidia-smi -q -x."""
        if self._bus_index.get(node):
            return self._bus_index[node]
        text = self._raw(node, "nvidia-smi-xml")
        try:
            parsed = parse("nvidia-smi-xml", text) if text else None
        except ParseError:
            parsed = None
        return {
            str(g.bus_id)[-12:].lower(): int(g.index)
            for g in getattr(parsed, "gpus", ())
            if g.bus_id
        }


def kill_argv(pid: str) -> tuple[str, ...]:
    """How the run stops a sampler: TERM to the pid it printed (digits only, > 1)."""
    return ("sh", "-c", 'kill -TERM "$1"', "rackops-stop", pid)


CHUNK = MAX_INPUT_CHARS // 2


def chunks(text: str, size: int = CHUNK) -> list[str]:
    """The CSV cut at row boundaries into pieces a parser takes, each with the header."""
    if len(text) <= size:
        return [text]
    head, _, rest = text.partition("\n")
    out, at = [], 0
    while at < len(rest):
        end = rest.find("\n", at + size) + 1 or len(rest)
        out.append(head + "\n" + rest[at:end])
        at = end
    return out


def keep_tail(text: str, limit: int = MAX_INPUT_CHARS // 2) -> str:
    """The samples as they are, or their CSV header and the whole rows of the last ``limit``
    characters (a parser and a raw file each take 16 MiB at most)."""
    if len(text) <= limit:
        return text
    head = text.split("\n", 1)[0] + "\n"
    return head + text[text.find("\n", len(text) - limit) + 1 :]


def split_by_baseline(
    events: list[GpuEvent], baseline: list[GpuEvent] | None
) -> tuple[list[GpuEvent], list[GpuEvent]]:
    """(history, during): an event also in the baseline read is history, as many times as
    the baseline has it; without a baseline every event is the run's."""
    if baseline is None:
        return [], events
    seen: dict[tuple[Any, ...], int] = {}
    for e in baseline:
        k = _key(e)
        seen[k] = seen.get(k, 0) + 1
    before, during = [], []
    for e in events:
        k = _key(e)
        if seen.get(k, 0) > 0:
            seen[k] -= 1
            before.append(e)
        else:
            during.append(e)
    return before, during


def _key(e: GpuEvent) -> tuple[Any, ...]:
    """An event's identity across two reads: its uptime stamp where dmesg printed one (the
    kernel's own clock: a wall-clock step between the reads changes nothing), else the
    timestamp as printed."""
    return (e.kind, e.code, e.bdf, e.message, e.uptime_s if e.uptime_s is not None else e.timestamp)


__all__ = [
    "GpuLoadStage",
    "chunks",
    "keep_tail",
    "kill_argv",
    "split_by_baseline",
]
