"""The README's first two commands work as written: as root with no sudo installed (containers,
CI images), and they say why when they cannot."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "the README starts with a sh block"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_two_commands_need_no_sudo() -> None:
    cmds = _readme_commands()
    assert cmds == ["bash scripts/demo", "bash scripts/test"]


def _probe(tmp_path: Path) -> Path:
    """A script that takes the demo's root prologue, then says who it runs as (a copy of
    the prologue beside it: the checkout may be unreadable to the unprivileged user)."""
    shutil.copy(ROOT / "scripts/need-root", tmp_path / "need-root")
    (tmp_path / "need-root").chmod(0o644)
    probe = tmp_path / "probe"
    probe.write_text(f". {tmp_path}/need-root\necho ran-as-$(id -u)\n")
    probe.chmod(0o755)
    return probe


def _no_sudo_path(tmp_path: Path) -> str:
    """A PATH with the basic tools but no sudo."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("id", "basename", "echo", "bash"):
        found = shutil.which(tool)
        assert found
        (bindir / tool).symlink_to(found)
    return str(bindir)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root")
def test_root_without_sudo_runs_on(tmp_path: Path) -> None:
    env = {"PATH": _no_sudo_path(tmp_path)}
    r = subprocess.run(
        ["bash", str(_probe(tmp_path))], env=env, capture_output=True, text=True, check=False
    )
    assert (r.returncode, r.stdout.strip()) == (0, "ran-as-0"), r.stderr


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to drop to nobody"
)
def test_a_user_without_sudo_is_told_why() -> None:
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="rackops-readme-"))  # readable by nobody
    tmp_path.chmod(0o755)
    env = {"PATH": _no_sudo_path(tmp_path)}
    r = subprocess.run(
        [
            shutil.which("setpriv") or "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            shutil.which("bash") or "bash",
            str(_probe(tmp_path)),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 77
    assert "needs root" in r.stderr and "sudo is not installed" in r.stderr
    assert "ran-as" not in r.stdout
    shutil.rmtree(tmp_path)
