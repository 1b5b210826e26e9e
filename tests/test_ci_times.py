"""CI says where its time went: scripts/ci-times reads .ci/run's phase lines and the JUnit
files scripts/test writes, and prints each phase and each test file's seconds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_each_phase_and_each_test_file_has_its_seconds(tmp_path: Path) -> None:
    (tmp_path / "phases").write_text("bootstrap 0 12\ntests (the README's test command) 40 1800\n")
    junit = tmp_path / "junit"
    junit.mkdir()
    (junit / "lab.xml").write_text(
        '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_fabric_lab" name="a" time="200.5"/>'
        '<testcase classname="tests.test_fabric_lab" name="b" time="20"/>'
        '<testcase classname="tests.test_slurm_lab.TestFaultRack" name="c" time="300"/>'
        "</testsuite></testsuites>"
    )
    (junit / "unit.xml").write_text("<cut")
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts/ci-times"), str(tmp_path / "phases"), str(junit)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "    12 s  bootstrap (from 0 s)" in out
    assert "  1760 s  tests (the README's test command) (from 40 s)" in out
    assert "lab tests: 520 s in all" in out
    assert out.index("300 s  test_slurm_lab") < out.index("220 s  test_fabric_lab")
    assert "unit.xml: unreadable" in out
