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
from rackops.errors import RackopsError
from rackops.findings import Finding, Status, Subject
from rackops.parsers import ParseError
from rackops.parsers._common import MAX_INPUT_CHARS
from rackops.parsers.kernel_xid import GpuEvent, parse_kernel_xid
from rackops.parsers.nvidia_smi_perf import parse_smi_samples
from rackops.tools import parse
from rackops.tools._common import program_of
from rackops.tools.kernel_xid import KERNEL_LOG_ARGV
from rackops.validate.executor import CommandResult, PairLauncher, Started
from rackops.validate.plan import Plan
from rackops.validate.stages.base import StageBase

# what every sample reads; the reasons field takes its R535+ name where the driver knows it
SAMPLE_FIELDS = (
    "timestamp,index,pci.bus_id,utilization.gpu,clocks.sm,clocks.mem,temperature.gpu,"
    "temperature.memory,power.draw,power.limit"
)
# $1: the interval in ms. The shell's pid goes to stderr first (how the run stops it); on
# TERM it stops nvidia-smi, waits for its last row and exits 0.
SAMPLER = (
    'echo "rackops-sampler pid $$" >&2\n'
    "R=clocks_event_reasons.active\n"
    "nvidia-smi --query-gpu=$R --format=csv,noheader >/dev/null 2>&1 "
    "|| R=clocks_throttle_reasons.active\n"
    f'nvidia-smi --query-gpu={SAMPLE_FIELDS},$R --format=csv,nounits -lms "$1" &\n'
    "p=$!\n"
    "trap 'kill $p 2>/dev/null' TERM INT HUP\n"
    "wait $p\n"
    "wait $p\n"
    "exit 0\n"
)
PID_MARK = b"rackops-sampler pid "
NEVER = b"\x00rackops: pump only\x00"


def sampler_argv(interval_ms: int) -> tuple[str, ...]:
    return ("sh", "-c", SAMPLER, "rackops-sampler", str(interval_ms))


def _pid(handle: Started) -> str | None:
    err = bytes(getattr(handle, "err", b""))
    at = err.find(PID_MARK)
    if at < 0:
        return None
    digits = err[at + len(PID_MARK) :].split(b"\n", 1)[0].strip()
    return digits.decode() if digits.isdigit() and len(digits) <= 10 else None


class GpuLoadStage(StageBase):
    _samplers: dict[str, Started]
    _pump_stop: threading.Event
    _steps: dict[tuple[str, str], dict[str, Any]]  # (node, step) -> its record (load_end)

    def load_begin(self, plan: Plan, done: set[str], unreachable: set[str]) -> None:
        params = self.suite.checks.gpu_load
        self._samplers = {}
        self._pump_stop = threading.Event()
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
            except Exception:
                continue
            self._samplers[n] = h
        if self._samplers:
            threading.Thread(target=self._pump, daemon=True).start()
            self.progress(
                f"[load] sampling {len(self._samplers)} node(s) every "
                f"{params.sample_interval_ms} ms"
            )

    def _pump(self) -> None:
        """Read every sampler's output as it comes, so none stalls on a full channel."""
        while not self._pump_stop.wait(1.0):
            for h in list(self._samplers.values()):
                h.wait_for(NEVER, 0.01)

    def load_end(self, plan: Plan, done: set[str], unreachable: set[str]) -> None:
        params = self.suite.checks.gpu_load
        if params is None:
            return
        self._pump_stop.set()
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
        self._samplers = {}

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
        if pid is not None:
            self.executor.run(
                self.targets[node], ("sh", "-c", 'kill -TERM "$1"', "rackops-stop", pid), 30
            )
        result = h.wait(30.0)
        kept = keep_tail(result.stdout)
        note: list[Finding] = []
        if kept != result.stdout:
            note.append(
                Finding(
                    "LOAD-002",
                    Status.WARN,
                    Subject(node=node),
                    f"{len(result.stdout)} bytes of samples: the first "
                    f"{len(result.stdout) - len(kept)} were dropped, the last {len(kept)} kept "
                    "and judged",
                    remediation="raise checks.gpu_load.sample_interval_ms for runs this long",
                )
            )
            result.stdout = kept
        findings = note + self._judge_samples(node, result)
        self._record(f"node/{node}/gpu-samples", "node", node, "gpu-samples", result, findings)

    def _judge_samples(self, node: str, result: CommandResult) -> list[Finding]:
        subj = Subject(node=node)
        if result.error is not None:
            return [Finding("LOAD-000", Status.ERROR, subj, f"sampler: {result.error}")]
        text = result.stdout
        if not text.strip():
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
        try:
            parsed = parse_smi_samples(text)
        except ParseError as exc:
            return [Finding("LOAD-000", Status.ERROR, subj, f"samples unreadable: {exc}")]
        # the sampler was stopped: its last row may be cut, nothing else may be wrong
        bad = [e for e in parsed.errors if "no final newline" not in e]
        if bad or not parsed.samples:
            return [
                Finding(
                    "LOAD-000",
                    Status.ERROR,
                    subj,
                    f"samples not whole: {'; '.join(bad[:3]) or 'no sample row'}",
                )
            ]
        profile = self.profiles[self.cluster.node(node).profile]
        return judge_samples(parsed.samples, node, profile.load)

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
        rec = getattr(self, "_steps", {}).get((node, step))
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
        """PCI address (0000:18:00.0) -> GPU index, from this run's nvidia-smi -q -x."""
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
    return (e.kind, e.code, e.bdf, e.timestamp, e.uptime_s, e.message)


__all__ = ["SAMPLER", "GpuLoadStage", "keep_tail", "sampler_argv", "split_by_baseline"]
