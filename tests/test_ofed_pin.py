"""The OFED pin is matched by one rule: the ofed role's verify step asks the collection's
filter ``rackops.rackops.ofed_pin``, which is validate's ``check_ofed``. The role used to
search the pin as a substring, so 25.07-0.9.70 passed a 25.07-0.9.7 pin there and FAILed
validate."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest
from test_lab import ROOT, VENV_BIN

from rackops.checks.host import check_ofed
from rackops.findings import Status
from rackops.parsers.ofed_info import parse_ofed_info

spec = importlib.util.spec_from_file_location("ofed_pin", ROOT / "plugins/filter/ofed_pin.py")
assert spec is not None and spec.loader is not None
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)

CASES = [  # ofed_info -s output, the pin, the one answer
    ("MLNX_OFED_LINUX-25.07-0.9.70:\n", "25.07-0.9.7", False),  # the substring's false pass
    ("OFED-internal-25.07-0.9.7:\n", "25.07-0.9.7", True),
    ("MLNX_OFED_LINUX-23.10-1.1.9.0:\n", "23.10-1.1.9", True),  # the pin leaves out a field
    ("MLNX_OFED_LINUX-23.10-1.1.9.0:\n", "23.10-1.1", True),
    ("MLNX_OFED_LINUX-23.10-1.1.9.0:\n", "3.10-1.1.9", False),  # a tail of the version
    ("MLNX_OFED_LINUX-24.10-1.1.4.0:\n", "23.10-1.1.9", False),
    ("25.07-0.9.7\n", "25.07-0.9.7", True),  # ofed_info -n
    ("bash: line 1: ofed_info: command not found\n", "25.07-0.9.7", False),
    ("", "25.07-0.9.7", False),
]


@pytest.mark.parametrize(("out", "pin", "ok"), CASES)
def test_the_role_and_validate_give_one_answer(out: str, pin: str, ok: bool) -> None:
    got = plugin.ofed_pin(out, pin)
    assert got["ok"] is ok, got
    if got["installed"] is not None:
        (finding,) = check_ofed(parse_ofed_info(out), pin)
        assert (finding.status is Status.OK) is ok
    if not ok:
        assert pin in got["message"], got


PLAY = """\
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: ofed
        tasks_from: verify
      vars:
        ofed_version: "{pin}"
"""


@pytest.mark.parametrize(
    ("installed", "passes"), [("25.07-0.9.70", False), ("25.07-0.9.7", True), (None, False)]
)
def test_the_roles_verify_step_holds_the_node_to_validates_rule(
    installed: str | None, passes: bool, tmp_path: Path
) -> None:
    """The real role task through ansible-playbook, with an ``ofed_info`` that says
    ``installed`` (DOCA-OFED's form), or none at all, and the pin 25.07-0.9.7."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if installed is not None:
        fake = bin_dir / "ofed_info"
        fake.write_text(f"#!/bin/sh\necho 'OFED-internal-{installed}:'\n")
        fake.chmod(0o755)
    play = tmp_path / "verify.yml"
    play.write_text(PLAY.format(pin="25.07-0.9.7"))
    proc = subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", str(play)],
        cwd=ROOT,
        env={
            **os.environ,
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if passes:
        assert proc.returncode == 0, proc.stdout[-3000:]
    elif installed is None:
        assert proc.returncode != 0
        assert "ofed_info -s did not run" in proc.stdout and "pinned 25.07-0.9.7" in proc.stdout
    else:
        assert proc.returncode != 0
        assert "OFED 25.07-0.9.70 (DOCA-OFED), pinned 25.07-0.9.7" in proc.stdout, proc.stdout
