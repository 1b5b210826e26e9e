"""The local launcher: commands on this machine (``rackops node-check`` on one node). It has
no pair or MPI capability (``PairLauncher``, ``MpiLauncher``): one node runs no pair test."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence

from rackops.validate.executor import (
    TIMEOUT_RC,
    CommandResult,
    LauncherInfo,
    Target,
    timeout_argv,
)

LOCAL_INFO = LauncherInfo(
    "local",
    "the local launcher",
    unreachable_fix="run node-check on the node itself",
    mpi_fix="node-check runs no multi-node job",
)


class LocalExecutor:
    batch = 1
    info = LOCAL_INFO

    def run(
        self, t: Target, argv: Sequence[str], timeout: float, become: bool | None = None
    ) -> CommandResult:
        started = time.monotonic()
        try:
            proc = subprocess.run(
                timeout_argv(argv, timeout),
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout + 10,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
            return CommandResult(
                t.name, tuple(argv), None, out, "", time.monotonic() - started, timed_out=True
            )
        return CommandResult(
            t.name,
            tuple(argv),
            proc.returncode,
            proc.stdout,
            proc.stderr,
            time.monotonic() - started,
            timed_out=proc.returncode == TIMEOUT_RC,
        )

    def run_many(
        self, jobs: Sequence[tuple[Target, Sequence[str]]], timeout: float
    ) -> list[CommandResult]:
        return [self.run(t, argv, timeout) for t, argv in jobs]

    def close(self) -> None:
        return None
