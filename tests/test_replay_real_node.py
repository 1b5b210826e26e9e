"""A real node, replayed: the captured outputs of one real H200 machine
(``tests/fixtures/replay/h200-580``, from ``../shared/captures/h200-580``) answer the
commands of ``rackops node-check``, and the verdict is the one a person gives that machine:
one healthy H200, alone (no NVLink peer, no HCA). What was not captured is said, not judged.
The same captures against a profile the machine does not match fail, naming what differs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rackops.cli import main
from rackops.errors import InputError
from rackops.validate.nodecheck import node_check

REPLAY = Path(__file__).parent / "fixtures/replay/h200-580"
INV = REPLAY / "inventory"
CAPTURES = REPLAY / "captures"


@pytest.mark.parametrize("suite", ["quick", "acceptance"])
def test_the_real_h200_replayed_is_healthy(suite: str) -> None:
    health = node_check(str(INV), suite, "vm", replay=str(CAPTURES))
    # healthy as far as it was captured: a WARN (not a whole check), no failure; the GEMM
    # and HBM tests were not captured, so the one-GPU statement says nothing measured it
    assert health.status.value == "WARN" and health.failures == []
    # judged: the GPU, its NVLink (none, as the profile says) and topology; the rest said
    assert {"dcgmi-diag", "lspci", "host-tuning"} <= set(health.not_captured)
    assert not {"nvidia-smi-xml", "nvidia-smi-nvlink", "nvidia-smi-topo"} & set(health.not_captured)


def test_the_cli_says_what_it_replayed_and_exits_healthy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["node-check", "-i", str(INV), "--node", "vm", "--replay", str(CAPTURES), "-v"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "vm healthy" in out and "not captured, not judged: " in err and "dcgmi-diag" in err


def test_the_same_captures_against_a_two_gpu_nvlink_profile_fail(tmp_path: Path) -> None:
    inv = tmp_path / "inventory"
    shutil.copytree(INV, inv)
    prof = inv / "profiles/h200-1gpu-vm.yaml"
    text = prof.read_text().replace("  count: 1\n", "  count: 2\n", 1)
    prof.write_text(text.replace("nvlink_links: 0", "nvlink_links: 18"))
    health = node_check(str(inv), "quick", "vm", replay=str(CAPTURES))
    assert health.status.value == "FAIL"
    codes = {(f["code"], f["subject"].get("gpu")) for f in health.failures}
    assert ("GPU-001", 1) in codes  # GPU 1 missing
    assert ("GPU-010", 0) in codes  # GPU 0 without its 18 NVLinks


def test_a_node_check_run_directory_replays_to_the_same_verdict(tmp_path: Path) -> None:
    """What a user does on their own node: `node-check --run-dir D` there, `--replay D`
    anywhere (the run directory keeps every command's argv and outputs)."""
    first = node_check(str(INV), "quick", "vm", str(tmp_path / "run"), replay=str(CAPTURES))
    again = node_check(str(INV), "quick", "vm", replay=str(tmp_path / "run"))
    assert (again.status, again.failures) == (first.status, first.failures)
    assert set(again.not_captured) == set(first.not_captured)


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("bad.cmd", "", "empty"),
        ("x.cmd", "nvidia-smi 'unclosed", "not a command line"),
        ("y.cmd", "nvidia-smi -q -x", "missing"),  # no y.out
    ],
)
def test_a_capture_directory_that_is_not_whole_is_refused_naming_the_file(
    tmp_path: Path, name: str, content: str, why: str
) -> None:
    caps = tmp_path / "caps"
    shutil.copytree(CAPTURES, caps)
    (caps / name).write_text(content)
    with pytest.raises(InputError, match=why) as exc:
        node_check(str(INV), "quick", "vm", replay=str(caps))
    assert str(caps / name.split(".")[0]) in str(exc.value)


def test_a_capture_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    caps = tmp_path / "caps"
    shutil.copytree(CAPTURES, caps)
    (caps / "nvidia-smi-q-x.out").unlink()
    (caps / "nvidia-smi-q-x.out").symlink_to("/etc/passwd")
    with pytest.raises(Exception, match=r"symlink|outside"):
        node_check(str(INV), "quick", "vm", replay=str(caps))


def test_a_tool_that_failed_is_quoted_in_its_own_words(tmp_path: Path) -> None:
    """topo that cannot reach the driver: exit 255, the reason on stderr, nothing readable;
    the ERROR carries the tool's own last words, not only "unreadable"."""
    caps = tmp_path / "caps"
    shutil.copytree(CAPTURES, caps)
    (caps / "nvidia-smi-topo-m.out").write_text("")
    (caps / "nvidia-smi-topo-m.err").write_text(
        "Failed to initialize NVML: Driver/library version mismatch\n"
    )
    (caps / "nvidia-smi-topo-m.rc").write_text("255\n")
    health = node_check(str(INV), "quick", "vm", replay=str(caps))
    (f,) = health.failures
    assert f["code"] == "PARSE-000" and f["subject"]["node"] == "vm"
    assert "(exit 255: Failed to initialize NVML: Driver/library version mismatch)" in f["message"]


def test_an_exit_status_that_is_not_ascii_digits_is_refused(tmp_path: Path) -> None:
    caps = tmp_path / "caps"
    shutil.copytree(CAPTURES, caps)
    (caps / "nvidia-smi-q-x.rc").write_text("\u00b2\n")  # str.isdigit() says yes; int() no
    with pytest.raises(InputError, match="is not an exit status"):
        node_check(str(INV), "quick", "vm", replay=str(caps))


def test_captures_larger_in_all_than_one_nodes_outputs_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rackops.validate import replay

    monkeypatch.setattr(replay, "MAX_CAPTURE_BYTES", 20_000)  # the fixture holds ~40 kB
    with pytest.raises(InputError, match="more than 20000 bytes in all"):
        node_check(str(INV), "quick", "vm", replay=str(CAPTURES))
