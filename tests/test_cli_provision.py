"""`rackops provision` hands what follows `--` to ansible-playbook as options (argparse keeps
the `--` itself, which ansible-playbook would read as the end of its options)."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from rackops.cli import main


@pytest.mark.parametrize(
    ("argv", "tail"),
    [
        (["--", "--tags", "net_mtu,hugepages"], ["--tags", "net_mtu,hugepages"]),
        (["--check", "--", "--limit", "node01"], ["--check", "--diff", "--limit", "node01"]),
        ([], []),
    ],
)
def test_options_after_the_separator_reach_ansible_playbook(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], tail: list[str]
) -> None:
    seen: list[list[str]] = []

    def run(cmd: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(subprocess, "run", run)
    assert main(["provision", "-i", "inventories/example-roce", *argv]) == 0
    cmd = seen[0]
    assert cmd[3].endswith("provision.yml") and cmd[4:] == tail
