"""The seam between the runner and the machines it runs tools on.

The runner depends on :class:`Executor` only. Four launchers implement it, each with its
own words for findings (:class:`LauncherInfo`):

* :mod:`rackops.validate.ssh` — one controller's own SSH sessions (paramiko), the default;
* :mod:`rackops.validate.slurm` — ``srun`` job steps inside a Slurm allocation, so the
  fan-out goes through slurmd's tree and the controller holds no connection per node;
* :mod:`rackops.validate.local` — this machine only (``rackops node-check``);
* :mod:`rackops.validate.replay` — recorded outputs served back (runner unit tests).

Every command is an argv list; every launcher runs it under coreutils ``timeout -k 5`` on
the node, so a hung tool is killed where it runs, not just abandoned.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

TIMEOUT_RC = 124  # coreutils timeout


@dataclass(frozen=True)
class Target:
    name: str
    host: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    become: bool = False
    # the host's OpenSSH arguments as Ansible passes them (ansible_ssh_common_args and
    # ansible_ssh_extra_args): -o Key=Value, -J jump, -F config, -i key, -p port, -l user
    ssh_args: tuple[str, ...] = ()


@dataclass
class CommandResult:
    host: str
    argv: tuple[str, ...]
    rc: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    error: str | None = None  # could not connect / could not start

    @property
    def ran(self) -> bool:
        return self.error is None


class Unreachable(Exception):
    pass


def timeout_argv(argv: Sequence[str], timeout: float) -> list[str]:
    """The command under coreutils timeout (TERM at the limit, KILL 5 s later)."""
    return ["timeout", "-k", "5", f"{max(1, int(timeout))}", *argv]


def remote_command(argv: Sequence[str], timeout: float, become: bool) -> str:
    cmd = timeout_argv(argv, timeout)
    if become:
        cmd = ["sudo", "-n", *cmd]
    return " ".join(shlex.quote(a) for a in cmd)


@dataclass(frozen=True)
class LauncherInfo:
    """How findings name a launcher and what they tell the user to fix."""

    name: str  # in results.jsonl and run.json: ssh, slurm, local
    label: str  # in messages: "not reachable over SSH"
    unreachable_fix: str  # the remediation of an unreachable node
    mpi_fix: str  # the remediation of a multi-node launch that printed no results


class Started(Protocol):
    """A command started in the background (a perftest server, a GPU sampler): read while
    it runs; ``out``/``err`` hold what it printed so far (read as ``wait_for`` pumps)."""

    out: bytearray
    err: bytearray

    def wait_for(self, marker: bytes, timeout: float) -> bool:
        """True once ``marker`` is in its output; False at the timeout or when it exits
        without printing it."""
        ...

    def exited(self) -> bool: ...

    def wait(self, timeout: float) -> CommandResult:
        """Its result; a command still running at the timeout is abandoned (the node's
        own timeout kills it) and reported timed out."""
        ...


class Executor(Protocol):
    """What the runner needs from every launcher: run a command on nodes."""

    #: how many nodes one ``run_many`` call should carry (1: one call per node)
    batch: int
    info: LauncherInfo

    def run(
        self, t: Target, argv: Sequence[str], timeout: float, become: bool | None = None
    ) -> CommandResult: ...

    def run_many(
        self, jobs: Sequence[tuple[Target, Sequence[str]]], timeout: float
    ) -> list[CommandResult]:
        """One command per node, in the order given; a node the launcher cannot reach
        gets a result with ``error`` set, never an exception."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class PairLauncher(Protocol):
    """A launcher that can start a command in the background (a perftest server) while
    it runs another: what the pair rounds need. SSH and Slurm can; local cannot."""

    def start(
        self, t: Target, argv: Sequence[str], timeout: float, become: bool | None = None
    ) -> Started: ...


@runtime_checkable
class MpiLauncher(Protocol):
    """A launcher that can run one MPI job across nodes (multi-node NCCL)."""

    def multi_node(
        self,
        targets: Sequence[Target],
        ranks_per_node: int,
        argv: Sequence[str],
        env: Mapping[str, str],
        timeout: float,
    ) -> CommandResult:
        """An MPI job across ``targets`` (multi-node NCCL)."""
        ...
