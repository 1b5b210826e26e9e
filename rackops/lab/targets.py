"""One interface to the lab's targets, whatever runs them: podman containers or
systemd-nspawn machines. `rackops lab status` and `down` ask it, never the engine's name."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from rackops.lab import nspawn, vm
from rackops.lab.engine import Engine
from rackops.lab.model import LabNode, LabState


class Targets(Protocol):
    def run_state(self, node: LabNode) -> str:
        """'running', or what the engine says instead ('exited', 'missing', ...)."""
        ...

    def remove(self, prefix: str) -> list[str]:
        """Stop and remove every target and network of the lab; what was removed."""
        ...


class PodmanTargets:
    """The containers in this lab's own storage (``<workdir>/storage``) and the networks its
    state names. Container networks are the machine's, not the checkout's: another
    checkout's lab (up, or killed and left) has networks of the same prefix, and they are
    not this lab's to remove."""

    def __init__(self, workdir: Path, name: str = "podman", networks: Sequence[str] = ()) -> None:
        self.engine = Engine(name, workdir)
        self.engine.configure()
        self.networks = list(networks)

    def run_state(self, node: LabNode) -> str:
        proc = self.engine.run(
            ["inspect", "--format", "{{.State.Status}}", node.container], check=False
        )
        return proc.stdout.strip() or "missing"

    def _own_networks(self, prefix: str) -> list[str]:
        return [n for n in self.engine.networks(prefix) if n in self.networks]

    def remove(self, prefix: str) -> list[str]:
        removed = []
        for name in self.engine.containers(prefix):
            self.engine.run(["rm", "-f", "-t", "0", name])
            removed.append(name)
        for net in self._own_networks(prefix):
            self.engine.run(["network", "rm", "-f", net])
            removed.append(net)
        return removed

    def left(self, prefix: str) -> list[str]:
        return self.engine.containers(prefix) + self._own_networks(prefix)


class NspawnTargets:
    def __init__(self, state: LabState | None) -> None:
        self.state = state

    def run_state(self, node: LabNode) -> str:
        alive = node.container.isdigit() and Path(f"/proc/{node.container}").exists()
        return "running" if alive else "missing"

    def remove(self, prefix: str) -> list[str]:
        return nspawn.down(self.state)


class VmTargets:
    def __init__(self, state: LabState) -> None:
        self.state = state

    def run_state(self, node: LabNode) -> str:
        return "running" if vm.alive(node.container) else "missing"

    def remove(self, prefix: str) -> list[str]:
        return vm.down(self.state)


def targets_of(state: LabState, workdir: Path) -> Targets:
    """The targets of a lab that is up, by the engine that started them."""
    if state.engine == "nspawn":
        return NspawnTargets(state)
    if state.engine == "vm":
        return VmTargets(state)
    return PodmanTargets(workdir, state.engine, state.networks)
