"""The Slurm launcher's background step (a perftest server's srun), read while it runs:
a real child process started exactly as `SlurmExecutor.start` starts srun (unbuffered
pipes), here a shell standing in for srun, which only this machine's lab has."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rackops.lab import LabError, set_health_interval
from rackops.validate.slurm import SlurmHandle


def test_what_the_step_prints_is_seen_while_it_runs() -> None:
    # a server prints that it listens, then waits for its client: the marker must be seen
    # at once, not when the step ends (which held every pair round 15 s)
    handle = SlurmHandle.spawn(
        "node01",
        ("ib_write_bw",),
        ["sh", "-c", "echo '* Waiting for client to connect... *'; echo to-err >&2; exec sleep 30"],
        env=None,
    )
    started = time.monotonic()
    try:
        assert handle.wait_for(b"Waiting for client", 15)
        assert time.monotonic() - started < 5
        assert not handle.exited()
    finally:
        result = handle.wait(0.1)  # stopped: killed, and what it said is kept
    assert "Waiting for client" in result.stdout and "to-err" in result.stderr
    assert result.timed_out


def test_a_step_that_ends_gives_its_whole_output_and_status() -> None:
    handle = SlurmHandle.spawn(
        "node02", ("x",), ["sh", "-c", "printf 'a\\nb'; printf oops >&2; exit 3"], env=None
    )
    assert not handle.wait_for(b"never printed", 10)
    result = handle.wait(10)
    assert (result.rc, result.stdout, result.stderr) == (3, "a\nb", "oops")
    assert not result.timed_out


def test_a_health_interval_slurm_cannot_hold_is_refused_before_any_lab_is_read(
    tmp_path: Path,
) -> None:
    # HealthCheckInterval is a 16-bit count of seconds; nothing is written for a bad one
    for bad in (-1, 65536, 15.5, True, "15"):
        with pytest.raises(LabError, match="whole number of seconds, 0 to 65535"):
            set_health_interval(bad, workdir=str(tmp_path))  # type: ignore[arg-type]
    with pytest.raises(LabError, match="no Slurm lab is up"):
        set_health_interval(15, workdir=str(tmp_path))
    assert list(tmp_path.iterdir()) == []
