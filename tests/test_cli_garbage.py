"""Every CLI entry point that reads a file, fed garbage: one clear line, an exit code from
the contract (2 errors, 3 unreadable, 64 usage/bad input), never a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rackops.cli import main

ROOT = Path(__file__).resolve().parent.parent
GARBAGE = {
    "empty": b"",
    "binary": bytes(range(256)) * 4,
    "nul": b"all:\x00\n  hosts: {}\n",
    "non-utf8": b"all:\n  hosts:\n    n\xff\xfe1: {}\n",
    "crlf-yaml": b"all:\r\n  children:\r\n    gpu_nodes:\r\n      hosts: {node01: {}}\r\n",
    "deep": b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n",
    "not-a-mapping": b"- just\n- a list\n",
    "tabs": b"all:\n\thosts: x\n",
}
CODES = {2, 3, 64}


def _no_traceback(capsys: pytest.CaptureFixture[str]) -> str:
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err[-2000:]
    lines = [x for x in err.splitlines() if x.strip()]
    return "\n".join(lines)


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_garbage_inventory(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = tmp_path / "inv"
    inv.mkdir()
    (inv / "hosts.yml").write_bytes(GARBAGE[kind])
    for argv in (["lint", "-i", str(inv)], ["render", "-i", str(inv), "-o", str(tmp_path / "o")]):
        rc = main(argv)
        assert rc in CODES, (argv, rc)
        _no_traceback(capsys)


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_garbage_group_vars(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = tmp_path / "inv"
    shutil.copytree(ROOT / "inventories/example-roce", inv)
    (inv / "group_vars/all/fabric.yml").write_bytes(GARBAGE[kind])
    rc = main(["lint", "-i", str(inv)])
    assert rc in CODES
    _no_traceback(capsys)


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_garbage_suite(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "mine.yaml"
    suite.write_bytes(GARBAGE[kind])
    inv = str(ROOT / "inventories/example-roce")
    rc = main(["validate", "-i", inv, "--suite", str(suite), "--dry-run"])
    assert rc in CODES
    assert "mine.yaml" in _no_traceback(capsys)


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_garbage_check_input(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "out.txt"
    f.write_bytes(GARBAGE[kind])
    rc = main(["check", "ibstat", str(f), "--profile", "h100-sxm-ndr"])
    assert rc in CODES
    _no_traceback(capsys)


def test_missing_and_unreadable_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "-i", str(tmp_path / "nope")]) in CODES
    assert main(["report", str(tmp_path)]) in CODES
    assert main(["parse", "ibstat", str(tmp_path)]) in CODES  # a directory
    _no_traceback(capsys)


def test_report_into_a_read_only_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("")
    (run / "raw").mkdir()
    run.chmod(0o555)
    try:
        rc = main(["report", str(run)])
        if os.geteuid() == 0:
            assert rc == 3  # root writes anyway: the empty run is UNDECIDED
        else:
            assert rc in CODES
        _no_traceback(capsys)
    finally:
        run.chmod(0o755)
