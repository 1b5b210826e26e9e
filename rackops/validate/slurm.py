"""The Slurm launcher: every command is an ``srun`` job step inside one allocation.

The controller runs ``srun`` locally (a login node, or inside ``salloc``/``sbatch``); the
fan-out to the nodes goes through slurmctld and slurmd's own tree, so the controller holds
one short-lived srun process per step instead of an SSH connection per node.

* per-node checks: one ``srun -N<k> -w <nodes> --ntasks-per-node=1 --label`` per check and
  batch of nodes; each task prints its node name and exit status between marker lines, so
  every node gets its own output, exit status and timeout, as over SSH;
* perftest pairs: one step per end, server first, with explicit ``-w`` node lists;
* multi-node NCCL: ``srun --mpi=<rackops_slurm_mpi>`` with the ranks per node (pmix by
  default; ``none`` with a launcher of the site's own in the argv is the site's choice);
* steps use ``--overlap``, so pair servers, clients and pings share the allocation.

A node that Slurm cannot run a step on (down, drained, not responding, outside the
allocation) is unreachable for that node only, with Slurm's own state and reason.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from rackops.scheduler.slurm import (
    Allocation,
    SlurmError,
    SlurmSettings,
    allocate,
    node_states,
    slurm_env,
    unusable,
)
from rackops.validate.executor import (
    TIMEOUT_RC,
    CommandResult,
    LauncherInfo,
    Target,
    timeout_argv,
)

NODE_MARK = "@@rackops-node"
RC_MARK = "@@rackops-rc"
# each task names its node (slurmd sets SLURMD_NODENAME) and its exit status
WRAP = (
    f'printf "{NODE_MARK} %s\\n" "${{SLURMD_NODENAME:-$(hostname -s)}}"; "$@"; '
    f'rc=$?; printf "\\n{RC_MARK} %s\\n" "$rc"'
)
# srun's own overhead over the node's timeout before the controller gives up on a step
STEP_GRACE_S = 60.0
_LABEL = re.compile(r"^\s*(\d+): ?(.*)$")
SLURM_INFO = LauncherInfo(
    "slurm",
    "Slurm",
    unreachable_fix="bring the node back into the partition (sinfo -R names the reason; slurmd "
    "and munge must run on it), or validate it over SSH",
    mpi_fix="check srun --mpi=<rackops_slurm_mpi> works in the partition (srun --mpi=list)",
)


@dataclass
class SlurmHandle:
    """A step started in the background (a perftest server), read while it runs."""

    host: str
    argv: tuple[str, ...]
    proc: subprocess.Popen[bytes]
    started: float
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    _readers: list[threading.Thread] = field(default_factory=list)

    def __post_init__(self) -> None:
        for stream, buf in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            t = threading.Thread(target=self._pump, args=(stream, buf), daemon=True)
            t.start()
            self._readers.append(t)

    @classmethod
    def spawn(
        cls, host: str, argv: tuple[str, ...], cmd: Sequence[str], env: Mapping[str, str] | None
    ) -> SlurmHandle:
        """Start ``cmd`` (the srun of ``argv``) with unbuffered pipes, read as it prints."""
        proc = subprocess.Popen(
            list(cmd), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0
        )
        return cls(host, argv, proc, time.monotonic())

    @staticmethod
    def _pump(stream: object, buf: bytearray) -> None:
        # an unbuffered pipe is a raw FileIO: its read(n) returns what is there as soon as
        # anything is (a buffered reader's read1 does the same; its read(n) would wait for n)
        read = getattr(stream, "read1", None) or getattr(stream, "read", None)
        while read is not None:
            chunk = read(65536)
            if not chunk:
                return
            buf += chunk

    def exited(self) -> bool:
        return self.proc.poll() is not None

    def wait_for(self, marker: bytes, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker in self.out or marker in self.err:
                return True
            if self.exited():
                for t in self._readers:
                    t.join(5)
                return marker in self.out or marker in self.err
            time.sleep(0.02)
        return False

    def wait(self, timeout: float) -> CommandResult:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        for t in self._readers:
            t.join(5)
        rc = self.proc.returncode
        return CommandResult(
            self.host,
            self.argv,
            rc,
            self.out.decode(errors="replace"),
            self.err.decode(errors="replace"),
            time.monotonic() - self.started,
            timed_out=rc in (TIMEOUT_RC, -9),
        )


class SlurmExecutor:
    # nodes per srun of a per-node check; the runner's pool runs several such steps at once
    batch = 256
    info = SLURM_INFO

    def __init__(
        self,
        allocation: Allocation,
        settings: SlurmSettings,
        env: Mapping[str, str],
        states: Mapping[str, tuple[str, str]],
    ) -> None:
        self.alloc = allocation
        self.settings = settings
        self.env = dict(env)
        self.env.pop("SLURM_CPU_BIND", None)  # steps bind as the allocation says
        self.states = dict(states)

    @classmethod
    def open(
        cls,
        nodes: Sequence[str],
        settings: SlurmSettings,
        where: str,
        progress: Callable[[str], None],
    ) -> SlurmExecutor:
        """Ask Slurm which nodes can run a step, and get an allocation for those."""
        env = slurm_env(settings.conf)
        states = node_states(nodes, env)
        usable = [n for n in nodes if unusable(states, n) is None]
        if not usable:
            raise SlurmError(
                f"no node of {where} can run a Slurm step: "
                + "; ".join(f"{n}: {unusable(states, n)}" for n in nodes[:5])
            )
        alloc = allocate(usable, settings, env)
        progress(f"[slurm] job {alloc.job_id} on {len(alloc.nodes)} nodes")
        return cls(alloc, settings, env, states)

    def _why_not(self, node: str) -> str | None:
        why = unusable(self.states, node)  # Slurm's own state first: why it was left out
        if why is None and node not in self.alloc.nodes:
            return f"not in Slurm allocation {self.alloc.job_id}"
        return why

    def _srun(self, nodes: Sequence[str], *opts: str, export: str | None = None) -> list[str]:
        argv = ["srun", f"--jobid={self.alloc.job_id}", "--overlap", "--quiet", "--chdir=/tmp"]
        argv += [f"--export={export or self.settings.export}", "-N", str(len(nodes))]
        argv += ["-w", ",".join(nodes), *opts, "--"]
        return argv

    def run(
        self, t: Target, argv: Sequence[str], timeout: float, become: bool | None = None
    ) -> CommandResult:
        return self.run_many([(t, argv)], timeout)[0]

    def run_many(
        self, jobs: Sequence[tuple[Target, Sequence[str]]], timeout: float
    ) -> list[CommandResult]:
        results: dict[int, CommandResult] = {}
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, (t, argv) in enumerate(jobs):
            why = self._why_not(t.name)
            if why is not None:
                results[i] = CommandResult(t.name, tuple(argv), None, "", "", 0.0, error=why)
            else:
                groups.setdefault(tuple(argv), []).append(i)
        for argv, idx in groups.items():
            fanned = self._fan_out([jobs[i][0].name for i in idx], argv, timeout)
            results.update(zip(idx, fanned, strict=True))
        return [results[i] for i in range(len(jobs))]

    def _fan_out(
        self, nodes: Sequence[str], argv: Sequence[str], timeout: float
    ) -> list[CommandResult]:
        cmd = self._srun(nodes, "--ntasks-per-node=1", "--label")
        cmd += ["sh", "-c", WRAP, "rackops", *timeout_argv(argv, timeout)]
        step = self._step(cmd, timeout)
        if step is None:
            return [
                CommandResult(n, tuple(argv), None, "", "", 0.0, error="srun not found")
                for n in nodes
            ]
        out, err, _rc, took, timed_out = step
        per = split_labelled(out, err)
        launcher = "; ".join(line for line in err.splitlines() if not _LABEL.match(line))[-400:]
        results = []
        for node in nodes:
            got = per.get(node)
            if got is None:
                why = launcher or "srun started no task there"
                if timed_out:
                    why = f"srun did not start a task in {timeout + STEP_GRACE_S:g} s"
                results.append(
                    CommandResult(node, tuple(argv), None, "", "", took, error=f"srun: {why}")
                )
                continue
            stdout, stderr, rc = got
            results.append(
                CommandResult(
                    node,
                    tuple(argv),
                    rc,
                    stdout,
                    stderr,
                    took,
                    timed_out=rc == TIMEOUT_RC or (rc is None and timed_out),
                )
            )
        return results

    def start(
        self, t: Target, argv: Sequence[str], timeout: float, become: bool | None = None
    ) -> SlurmHandle:
        why = self._why_not(t.name)
        if why is not None:
            raise SlurmError(f"{t.name}: {why}")
        cmd = self._srun([t.name], "-n", "1", *timeout_argv(argv, timeout))
        return SlurmHandle.spawn(t.name, tuple(argv), cmd, self.env)

    def multi_node(
        self,
        targets: Sequence[Target],
        ranks_per_node: int,
        argv: Sequence[str],
        env: Mapping[str, str],
        timeout: float,
    ) -> CommandResult:
        names = [t.name for t in targets]
        why = next(((n, w) for n in names if (w := self._why_not(n)) is not None), None)
        if why is not None:
            return CommandResult(
                names[0], tuple(argv), None, "", "", 0.0, error=f"{why[0]}: {why[1]}"
            )
        export = ",".join([self.settings.export, *(f"{k}={v}" for k, v in env.items())])
        cmd = self._srun(
            names,
            f"--ntasks-per-node={ranks_per_node}",
            f"--mpi={self.settings.mpi}",
            export=export,
        )
        cmd += timeout_argv(argv, timeout)
        step = self._step(cmd, timeout)
        if step is None:
            return CommandResult(names[0], tuple(cmd), None, "", "", 0.0, error="srun not found")
        out, err, rc, took, timed_out = step
        return CommandResult(
            names[0], tuple(cmd), rc, out, err, took, timed_out=timed_out or rc == TIMEOUT_RC
        )

    def _step(
        self, cmd: list[str], timeout: float
    ) -> tuple[str, str, int | None, float, bool] | None:
        """Run one srun to its end: stdout, stderr, exit status (None: the controller gave up
        on it), seconds, and whether it outlived the node's timeout plus srun's grace. None
        when srun is missing."""
        started = time.monotonic()
        try:
            proc = subprocess.run(
                cmd,
                env=self.env,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout + STEP_GRACE_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            took = time.monotonic() - started
            return _text(exc.stdout), _text(exc.stderr), None, took, True
        except FileNotFoundError:
            return None
        return proc.stdout, proc.stderr, proc.returncode, time.monotonic() - started, False

    def close(self) -> None:
        if self.alloc.owned:
            subprocess.run(
                ["scancel", self.alloc.job_id], env=self.env, capture_output=True, check=False
            )


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def split_labelled(out: str, err: str) -> dict[str, tuple[str, str, int | None]]:
    """srun --label output of the wrapped tasks: {node: (stdout, stderr, rc)}. A task whose
    exit-status line is missing was cut off (rc None)."""
    node_of: dict[str, str] = {}
    body: dict[str, list[str]] = {}
    rcs: dict[str, int] = {}
    for task, text in _labelled(out):
        if text.startswith(NODE_MARK + " ") and task not in node_of:
            node_of[task] = text[len(NODE_MARK) + 1 :].strip()
            body[task] = []
        elif text.startswith(RC_MARK + " ") and task in node_of:
            with contextlib.suppress(ValueError):
                rcs[task] = int(text[len(RC_MARK) + 1 :].strip())
        elif task in body and task not in rcs:
            body[task].append(text)
    errs: dict[str, list[str]] = {}
    for task, text in _labelled(err):
        errs.setdefault(task, []).append(text)
    result: dict[str, tuple[str, str, int | None]] = {}
    for task, node in node_of.items():
        lines = body[task]
        if task in rcs and lines and lines[-1] == "":
            lines = lines[:-1]  # the newline the wrapper put before its status line
        stdout = "\n".join(lines) + ("\n" if lines else "")
        stderr = "\n".join(errs.get(task, [])) + ("\n" if errs.get(task) else "")
        result[node] = (stdout, stderr, rcs.get(task))
    return result


def _labelled(text: str) -> Iterator[tuple[str, str]]:
    for line in text.splitlines():
        m = _LABEL.match(line)
        if m:
            yield m.group(1), m.group(2)
