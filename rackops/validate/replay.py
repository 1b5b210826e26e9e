"""The replaying launcher: recorded outputs served back, so the runner's scheduling,
timeouts, retries and resume are tested without a lab.

A :class:`Recording` maps a node and a command to the answers it gave, in order (the last
one repeats): exact argv first, then the tool name alone (``*`` for any node). perftest's
port (``-p N``) is not part of the key, as every run draws its own. A recording comes from
a finished run directory (``Recording.from_rundir``: every step's saved output, argv, exit
status, timeout and unreachable node), or is put together by hand. A command with nothing
recorded raises :class:`NotRecorded`: a replay never invents an answer.

Every call is logged (``calls``), so a test can assert what ran, where and how often.
"""

from __future__ import annotations

import itertools
import re
import shlex
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rackops.validate.batch import MARK
from rackops.validate.executor import CommandResult, LauncherInfo, Target
from rackops.validate.rundir import RunDir


class NotRecorded(LookupError):
    pass


@dataclass(frozen=True)
class Reply:
    rc: int | None = 0
    stdout: str = ""
    stderr: str = ""
    error: str | None = None  # the node could not be reached
    timed_out: bool = False
    listens: bool = True  # start(): the server prints its "Waiting for client" banner

    def result(self, host: str, argv: Sequence[str]) -> CommandResult:
        return CommandResult(
            host,
            tuple(argv),
            self.rc,
            self.stdout,
            self.stderr,
            0.0,
            timed_out=self.timed_out,
            error=self.error,
        )


# one command of a batch script (rackops.validate.batch), in either form it has had: each
# read launched in the background with its redirections, or written to its own file
_BATCH_CMD = re.compile(r'timeout -k 2 \S+ (.+?)(?: > "\$d/\d+" 2>&1; echo .*)?$')


def key_of(argv: Sequence[str]) -> tuple[str, ...]:
    """The argv without perftest's port (each run draws its own); a batch script as the
    commands it runs, however the script runs them (a recording answers a newer rackops)."""
    if len(argv) == 3 and tuple(argv[:2]) == ("sh", "-c") and MARK in argv[2]:
        cmds = [m.group(1) for ln in argv[2].splitlines() if (m := _BATCH_CMD.search(ln))]
        return ("@batch", *cmds)
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "-p":
            skip = True
            continue
        out.append(a)
    return tuple(out)


@dataclass
class Recording:
    exact: dict[tuple[str, tuple[str, ...]], list[Reply]] = field(default_factory=dict)
    by_tool: dict[tuple[str, str], list[Reply]] = field(default_factory=dict)
    unreachable: dict[str, str] = field(default_factory=dict)

    def add(self, node: str, argv: Sequence[str], *replies: Reply) -> Recording:
        self.exact.setdefault((node, key_of(argv)), []).extend(replies)
        return self

    def add_tool(self, node: str, tool: str, *replies: Reply) -> Recording:
        """Answers for every command of this tool on the node (``*``: any node)."""
        self.by_tool.setdefault((node, tool), []).extend(replies)
        return self

    def down(self, node: str, why: str = "replay: recorded unreachable") -> Recording:
        self.unreachable[node] = why
        return self

    @classmethod
    def from_rundir(cls, path: Path) -> Recording:
        rec = cls()
        run = RunDir(path)
        for r in run.records():
            if r["kind"] == "unreachable" and r.get("node"):
                msg = r["findings"][0]["message"] if r["findings"] else "unreachable"
                rec.down(r["node"], msg)
                continue
            if not r.get("argv") or not r.get("host"):
                continue
            reply = Reply(
                rc=r.get("rc"),
                stdout=run.read_raw(r, "stdout") or "",  # under raw/, size-limited
                stderr=run.read_raw(r, "stderr") or "",
                timed_out=bool(r.get("timed_out")),
                error=r.get("error"),
            )
            if r["kind"] == "nccl":  # answered by multi_node, whatever launcher recorded it
                rec.add_tool(r["host"], "multi_node", reply)
            else:
                rec.add(r["host"], r["argv"], reply)
        return rec


CAPTURE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
MAX_CAPTURES = 512
MAX_CMD_BYTES = 64 * 1024
MAX_CAPTURE_BYTES = 256 * 1024 * 1024  # every capture of one node together


def from_captures(path: Path, node: str) -> Recording:
    """A node's outputs captured by hand: ``NAME.cmd`` (the command line, as a shell would
    split it), ``NAME.out`` (stdout), and optionally ``NAME.err`` (stderr) and ``NAME.rc``
    (exit status, default 0), all regular files under ``path``. Each answers its exact
    command on ``node``. A directory holding ``results.jsonl`` is a run directory
    (``rackops node-check --run-dir``, ``validate``): its outputs, re-keyed to ``node`` when
    they are one node's."""
    from rackops.errors import InputError
    from rackops.validate.records import DamagedRunDir
    from rackops.validate.rundir import MAX_RAW_BYTES, read_regular

    if not path.is_dir():
        raise InputError(f"{path}: not a directory of captures (NAME.cmd, NAME.out, ...)")
    if (path / "results.jsonl").exists():
        rec = Recording.from_rundir(path)
        hosts = {h for h, _ in rec.exact} | {h for h, _ in rec.by_tool} | set(rec.unreachable)
        if len(hosts) == 1 and node not in hosts:  # one node's outputs: this node's
            rec.exact = {(node, argv): r for (_h, argv), r in rec.exact.items()}
            rec.by_tool = {(node, tool): r for (_h, tool), r in rec.by_tool.items()}
            whys = list(rec.unreachable.values())
            rec.unreachable = {node: whys[0]} if whys else {}
        return rec
    entries = list(itertools.islice(path.iterdir(), 4 * MAX_CAPTURES + 1))
    cmds = sorted(p for p in entries if p.suffix == ".cmd")
    if len(entries) > 4 * MAX_CAPTURES or len(cmds) > MAX_CAPTURES:
        raise InputError(
            f"{path}: more than {MAX_CAPTURES} captures (4 files each): not one node's outputs"
        )
    rec = Recording()
    budget = [MAX_CAPTURE_BYTES]

    def text(p: Path, limit: int) -> str | None:
        try:
            data = read_regular(path, p, min(limit, budget[0]))
        except FileNotFoundError:
            return None
        except DamagedRunDir as exc:
            if "larger than" in exc.why and budget[0] < limit:
                raise InputError(
                    f"{path}: the captures hold more than {MAX_CAPTURE_BYTES} bytes in all "
                    "(one node's outputs are far less)"
                ) from None
            raise
        budget[0] -= len(data)
        return data.decode(errors="replace")

    for cmd in cmds:
        stem = cmd.stem
        if not CAPTURE_NAME.fullmatch(stem):
            raise InputError(f"{cmd}: a capture's name is letters, digits, '_', '.', '-'")
        line = (text(cmd, MAX_CMD_BYTES) or "").strip()
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise InputError(f"{cmd}: not a command line ({exc})") from None
        if not argv:
            raise InputError(f"{cmd}: empty; write the command whose output {stem}.out holds")
        rc_text = (text(path / f"{stem}.rc", 16) or "0").strip()
        if not re.fullmatch(r"[0-9]{1,3}", rc_text) or int(rc_text) > 255:
            raise InputError(f"{path / (stem + '.rc')}: {rc_text[:16]!r} is not an exit status")
        out = text(path / f"{stem}.out", MAX_RAW_BYTES)
        if out is None:
            raise InputError(f"{path / (stem + '.out')}: missing (the stdout of {line[:80]})")
        err = text(path / f"{stem}.err", MAX_RAW_BYTES) or ""
        rec.add(node, argv, Reply(rc=int(rc_text), stdout=out, stderr=err))
    if not cmds:
        raise InputError(f"{path}: no NAME.cmd capture and no results.jsonl")
    return rec


@dataclass
class ReplayHandle:
    host: str
    argv: tuple[str, ...]
    reply: Reply

    def wait_for(self, marker: bytes, timeout: float) -> bool:
        return self.reply.listens

    def exited(self) -> bool:
        return not self.reply.listens

    def wait(self, timeout: float) -> CommandResult:
        return self.reply.result(self.host, self.argv)


@dataclass(frozen=True)
class Call:
    how: str  # run | start | multi_node
    node: str
    argv: tuple[str, ...]
    timeout: float


class ReplayExecutor:
    def __init__(
        self,
        recording: Recording,
        *,
        batch: int = 1,
        delay_s: float = 0.0,
        info: LauncherInfo | None = None,
    ) -> None:
        from rackops.validate.ssh import SSH_INFO

        self.recording = recording
        self.batch = batch
        self.info = info or SSH_INFO  # findings read as the recorded launcher's
        self.delay_s = delay_s  # per answer, to make the pool's overlap observable
        self.calls: list[Call] = []
        self.batches: list[tuple[str, ...]] = []  # the nodes of each run_many call
        self._used: dict[tuple[Any, ...], int] = {}
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    def answers(self, node: str, argv: Sequence[str]) -> bool:
        """Whether something was recorded for this command on this node."""
        if node in self.recording.unreachable or (node, key_of(argv)) in self.recording.exact:
            return True
        return any((n, argv[0]) in self.recording.by_tool for n in (node, "*")) if argv else False

    def _answer(self, how: str, t: Target, argv: Sequence[str], timeout: float) -> Reply:
        with self._lock:
            self.calls.append(Call(how, t.name, tuple(argv), timeout))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
            if t.name in self.recording.unreachable:
                return Reply(rc=None, error=self.recording.unreachable[t.name])
            k: tuple[Any, ...] = (t.name, key_of(argv))
            replies = self.recording.exact.get((t.name, key_of(argv)))
            if replies is None:
                for node in (t.name, "*"):
                    k = (node, argv[0])
                    replies = self.recording.by_tool.get(k)
                    if replies is not None:
                        break
            if not replies:
                raise NotRecorded(f"{t.name}: nothing recorded for {' '.join(argv)}")
            with self._lock:
                n = self._used.get(k, 0)
                self._used[k] = n + 1
            return replies[min(n, len(replies) - 1)]
        finally:
            with self._lock:
                self.in_flight -= 1

    def run(
        self, t: Target, argv: Sequence[str], timeout: float, become: bool | None = None
    ) -> CommandResult:
        return self._answer("run", t, argv, timeout).result(t.name, argv)

    def run_many(
        self, jobs: Sequence[tuple[Target, Sequence[str]]], timeout: float
    ) -> list[CommandResult]:
        with self._lock:
            self.batches.append(tuple(t.name for t, _ in jobs))
        return [self.run(t, argv, timeout) for t, argv in jobs]

    def start(
        self, t: Target, argv: Sequence[str], timeout: float, become: bool | None = None
    ) -> ReplayHandle:
        reply = self._answer("start", t, argv, timeout)
        if reply.error is not None:
            raise ConnectionError(reply.error)
        return ReplayHandle(t.name, tuple(argv), reply)

    def multi_node(
        self,
        targets: Sequence[Target],
        ranks_per_node: int,
        argv: Sequence[str],
        env: Mapping[str, str],
        timeout: float,
    ) -> CommandResult:
        reply = self._answer("multi_node", targets[0], ["multi_node", *argv], timeout)
        return reply.result(targets[0].name, argv)

    def close(self) -> None:
        return None
