"""What a run does to the scheduler (rackops/validate/actions.py) and how the Slurm launcher
reads its steps (rackops/validate/slurm.py), without a cluster: commands as argv, srun's
labelled output, node states."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from rackops.cli import main
from rackops.errors import ExitCode
from rackops.scheduler.actions import (
    accepted_nodes,
    drain_commands,
    rejected_nodes,
    resume_commands,
)
from rackops.scheduler.slurm import unusable
from rackops.validate.slurm import NODE_MARK, RC_MARK, split_labelled


def culprit(kind: str, node: str, where: str, message: str) -> dict[str, Any]:
    return {"kind": kind, "node": node, "where": where, "message": message}


REPORT: dict[str, Any] = {
    "culprits": [
        culprit("gpu", "node04", "node04 GPU 6", "GPU 6 is missing"),
        culprit("hca", "node02", "node02 mlx5_3 [leaf-r3 swp2]", "port state Down"),
        culprit("switch", "", "leaf-r5", "drops jumbo frames"),
    ],
    "errors": [{"code": "NODE-000", "subject": {"node": "node06"}, "message": "unreachable"}],
    "nodes": {
        "node01": {"ibstat": "OK", "dcgmi-diag": "OK"},
        "node02": {"ibstat": "FAIL"},
        "node03": {"ibstat": "OK", "phy": "WARN"},
        "node04": {"nvidia-smi-xml": "FAIL"},
        "node05": {"ibstat": "OK", "dcgmi-diag": "ERROR"},
        "node06": {"ssh": "ERROR"},
    },
}


def test_only_rejected_nodes_are_drained_with_the_finding_as_reason() -> None:
    assert list(rejected_nodes(REPORT)) == ["node02", "node04"]  # a switch is not a node
    cmds = drain_commands(REPORT, "slurm")
    assert cmds == [
        [
            "scontrol",
            "update",
            "nodename=node02",
            "state=drain",
            "reason=rackops: node02 mlx5_3 [leaf-r3 swp2]: port state Down",
        ],
        [
            "scontrol",
            "update",
            "nodename=node04",
            "state=drain",
            "reason=rackops: node04 GPU 6: GPU 6 is missing",
        ],
    ]
    assert drain_commands(REPORT, "none") == []


def test_kubernetes_nodes_are_cordoned_and_tainted() -> None:
    assert drain_commands(REPORT, "kubernetes")[:2] == [
        ["kubectl", "cordon", "node02"],
        [
            "kubectl",
            "taint",
            "nodes",
            "node02",
            "rackops.io/rejected=true:NoSchedule",
            "--overwrite",
        ],
    ]


def test_a_long_reason_is_cut_for_sinfo() -> None:
    long = {**REPORT, "culprits": [culprit("gpu", "n1", "n1 GPU 0", "x" * 500)]}
    (cmd,) = drain_commands(long, "slurm")
    assert len(cmd[-1]) == len("reason=") + 200 and cmd[-1].endswith("…")


def test_accepted_means_judged_with_nothing_against_it() -> None:
    # node02/04 culprits, node05 a check that could not run, node06 unreachable
    assert accepted_nodes(REPORT) == ["node01", "node03"]


def fake_tool(tmp: Path, name: str, script: str) -> None:
    path = tmp / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_resume_touches_only_nodes_rackops_drained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sinfo as Slurm prints it for -N -o '%N|%T|%E'
    fake_tool(
        tmp_path,
        "sinfo",
        "printf 'node01|drained|rackops: node01 GPU 2: GPU 2 is missing\\n"
        "node03|drained|bad PSU, ticket 4711 [ops@2026-11-20]\\n'\n",
    )
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    cmds, notes = resume_commands(REPORT, "slurm", dict(os.environ))
    assert cmds == [["scontrol", "update", "nodename=node01", "state=resume"]]
    assert any(n.startswith("node03: accepted, and not drained by rackops") for n in notes)


def test_kubernetes_resume_only_where_the_rackops_taint_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nodes = {
        "items": [
            {
                "metadata": {"name": "node01"},
                "spec": {"taints": [{"key": "rackops.io/rejected", "effect": "NoSchedule"}]},
            },
            {"metadata": {"name": "node03"}, "spec": {"unschedulable": True}},
        ]
    }
    fake_tool(tmp_path, "kubectl", f"cat <<'EOF'\n{json.dumps(nodes)}\nEOF\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    cmds, notes = resume_commands(REPORT, "kubernetes", dict(os.environ))
    assert cmds == [
        ["kubectl", "taint", "nodes", "node01", "rackops.io/rejected-"],
        ["kubectl", "uncordon", "node01"],
    ]
    assert any(n.startswith("node03: accepted, and without the") for n in notes)


def test_apply_actions_without_a_scheduler_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    inv = Path(__file__).parent / "fixtures" / "replay" / "lab-2node" / "inventory"
    rc = main(["validate", "-i", str(inv), "--suite", "lab", "--apply-actions"])
    err = capsys.readouterr().err
    assert rc == 64 and "set rackops_scheduler" in err and "Traceback" not in err


def test_resume_nodes_on_a_directory_without_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["resume-nodes", str(tmp_path)]) == ExitCode.UNREADABLE
    assert "no report" in capsys.readouterr().err


# --- srun --label output of the wrapped per-node tasks ---------------------------------------


def task(n: int, node: str, lines: list[str], rc: int | None, width: int = 1) -> list[str]:
    lab = f"{n:>{width}}: "
    out = [lab + f"{NODE_MARK} {node}"] + [lab + x for x in lines]
    if rc is not None:
        out += [lab, lab + f"{RC_MARK} {rc}"]
    return out


def test_labelled_output_is_split_per_node_with_its_exit_status() -> None:
    a = task(
        0, "node01", ["Infiniband device 'mlx5_0' port 1 status:", "\tstate:\t4: ACTIVE"], 0, 2
    )
    b = task(1, "node02", ["garbled"], 3, 2)
    c = task(10, "node11", ["half a line"], None, 2)  # cut: no exit status
    # srun interleaves tasks line by line
    out = "\n".join(
        x for trio in zip(a, b + [""] * 9, c + [""] * 9, strict=False) for x in trio if x
    )
    err = " 1: mlx5_0: no such device\nsrun: error: node02: task 1: Exited with exit code 3\n"
    got = split_labelled(out + "\n", err)
    assert got["node01"] == (
        "Infiniband device 'mlx5_0' port 1 status:\n\tstate:\t4: ACTIVE\n",
        "",
        0,
    )
    assert got["node02"] == ("garbled\n", "mlx5_0: no such device\n", 3)
    assert got["node11"] == ("half a line\n", "", None)


def test_a_task_that_never_started_is_absent() -> None:
    assert split_labelled("", "srun: error: Unable to create step for job 7\n") == {}


@pytest.mark.parametrize(
    ("state", "usable"),
    [
        ("idle", True),
        ("mixed", True),
        ("allocated", True),
        ("drained", False),
        ("draining", False),
        ("down*", False),
        ("idle*", False),
        ("unknown*", False),
        ("idle+drain", False),
        ("reserved", True),
    ],
)
def test_node_states(state: str, usable: bool) -> None:
    why = unusable({"n1": (state, "rackops: x")}, "n1")
    assert (why is None) is usable
    if not usable:
        assert state in why  # type: ignore[operator]
    assert unusable({}, "n1") is not None and "does not know" in str(unusable({}, "n1"))
