"""The lab's guard against another lab on the same machine, on real kernel links (root):
a bridge holding the lab's subnet with something attached is another lab that is up; one
with nothing attached is what a killed lab left, and the refusal says how to remove it.
(The whole case, a second `lab up` beside a running lab, is in test_lab.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from rackops.lab.engine import LabError
from rackops.lab.lab import _refuse_subnet_in_use

SUBNET = "198.19.251.0/24"  # no lab's: theirs are 198.19.0, .64, .128 and 198.18.r
BRIDGE = "rkt-guard"
PORT = "rkt-guardp"  # a veth (its peer goes with it)

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2"
)


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True)


@pytest.fixture
def bridge() -> Iterator[str]:
    _ip("link", "add", BRIDGE, "type", "bridge")
    try:
        _ip("addr", "add", "198.19.251.1/24", "dev", BRIDGE)
        yield BRIDGE
    finally:
        subprocess.run(["ip", "link", "del", PORT], capture_output=True, check=False)
        _ip("link", "del", BRIDGE)


def test_a_free_subnet_passes() -> None:
    _refuse_subnet_in_use(SUBNET)


def test_a_bridge_left_by_a_killed_lab_is_named_with_its_removal(bridge: str) -> None:
    with pytest.raises(LabError) as exc:
        _refuse_subnet_in_use(SUBNET)
    msg = str(exc.value)
    assert f"{SUBNET} is already in use on this machine ({bridge})" in msg
    assert "left over from a lab that was killed" in msg
    assert f"`ip link delete {bridge}`" in msg


def test_a_bridge_with_a_port_is_a_lab_that_is_up(bridge: str) -> None:
    _ip("link", "add", PORT, "type", "veth", "peer", "name", PORT + "q")
    _ip("link", "set", PORT, "master", bridge)
    with pytest.raises(LabError, match="another lab is up") as exc:
        _refuse_subnet_in_use(SUBNET)
    assert "ip link delete" not in str(exc.value)
