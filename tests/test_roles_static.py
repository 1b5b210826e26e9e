"""Roles without a lab: settings that would run nothing are refused when the role starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _play(tmp_path: Path, role: str, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    play = tmp_path / "play.yml"
    play.write_text(
        f"- hosts: localhost\n  connection: local\n  gather_facts: false\n  roles: [{role}]\n"
    )
    args = [a for k, v in extra.items() for a in ("-e", f"{k}={v}")]
    exe = Path(sys.executable).with_name("ansible-playbook")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run(
        [str(exe), "-i", "localhost,", str(play), "--check", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_ofed_tarball_source_is_refused_before_anything_runs(tmp_path: Path) -> None:
    r = _play(tmp_path, "ofed", {"ofed_source": "tarball", "ofed_version": "25.07-0.9.7.0"})
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "ofed_source" in out and "repository" in out and "tarball" in out
    assert "Validating arguments against arg spec" in out
    assert "Load the OS family" not in out  # refused before the first task of the role


def test_host_key_checking_is_on_except_in_the_lab_inventory() -> None:
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "ansible.cfg")
    assert cfg.getboolean("defaults", "host_key_checking") is True
    import yaml
    from test_checks import LAB_INV  # a generated lab inventory

    lab = yaml.safe_load((LAB_INV / "group_vars/gpu_nodes/lab.yml").read_text())
    assert lab["ansible_host_key_checking"] is False
    for rack in ("example-ib", "example-roce"):
        found = list((ROOT / "inventories" / rack).rglob("*.yml"))
        assert not any("host_key_checking" in p.read_text() for p in found), rack
