"""What the lab tests share: running `rackops validate` on a lab inventory, and a command
on a target."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from test_lab import ROOT, VENV_BIN


def playbook(inv: Path, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """ansible-playbook playbooks/<name> on an inventory, from the repository root."""
    return subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", str(inv), f"playbooks/{name}", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def validate_argv(inv: Path, *extra: str) -> list[str]:
    """`rackops validate` on a lab inventory (suite `lab`); add --run-dir or --resume."""
    return [
        str(VENV_BIN / "rackops"),
        "validate",
        "-i",
        str(inv),
        "--suite",
        "lab",
        "--accept-new-host-keys",
        *extra,
    ]


def validate(inv: Path, run: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """Run it to the end; its exit code and report.json."""
    proc = subprocess.run(
        validate_argv(inv, "--run-dir", str(run), *extra),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads((run / "report.json").read_text())


def on_target(ssh_config: Path, node: str, cmd: str) -> str:
    """Run a shell command on a target over SSH; it must succeed. Its stdout."""
    proc = subprocess.run(
        ["ssh", "-F", str(ssh_config), node, cmd],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
