"""What a running lab is: saved in ``<workdir>/state.json`` so status and down find it."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MGMT_NET = "198.19.0"  # 198.18.0.0/15 is reserved for benchmarking networks (RFC 2544)
RAIL_NET = "198.18"
# a lab NVLink domain: GB200 trays of 4 GPUs, as many as an NVL72 holds at most (18: whole)
DOMAIN_PROFILE = "lab-gb200-roce400"
DOMAIN_TRAYS = 18


@dataclass
class LabNode:
    name: str
    index: int
    container: str
    ssh_port: int
    mgmt_ip: str
    rails: dict[int, str]
    started: bool = True
    ssh_host: str = "127.0.0.1"  # podman publishes SSH on loopback; nspawn: the mgmt address


@dataclass
class LabState:
    lab: str
    engine: str
    workdir: Path
    image: str
    systemd: bool
    inventory: Path
    key: Path
    networks: list[str]
    versions: dict[str, str]
    nodes: list[LabNode] = field(default_factory=list)
    slurm: bool = False  # slurmctld on this machine, slurmd in the targets (lab/slurm.py)
    racks: int = 1  # > 1: a spine tier joins the racks' leaves (lab/spines.py)
    switch_ssh: dict[str, int] = field(default_factory=dict)  # switch -> its SSH port
    ib: bool = False  # an InfiniBand lab (scenario hardware.link_layer: InfiniBand)
    rails: int = 8  # HCAs (and leaves) per node: 8 in containers, 2 in VMs (lab/vm.py)
    nvlink_domain: str | None = None  # the nodes are trays of this NVLink domain (GB200)

    def save(self) -> None:
        data = asdict(self)
        data["workdir"], data["inventory"], data["key"] = (
            str(self.workdir),
            str(self.inventory),
            str(self.key),
        )
        tmp = self.workdir / "state.json.tmp"  # whole or not at all: a killed `up` leaves
        tmp.write_text(json.dumps(data, indent=2) + "\n")  # the previous state, never half
        tmp.replace(self.workdir / "state.json")

    @classmethod
    def load(cls, workdir: Path) -> LabState | None:
        path = workdir / "state.json"
        if not path.exists():
            return None
        try:
            data: dict[str, Any] = json.loads(path.read_text())
        except ValueError:  # cut by a crash of an older rackops: down sweeps by name
            return None
        nodes = [
            LabNode(**{**n, "rails": {int(k): v for k, v in n["rails"].items()}})
            for n in data.pop("nodes")
        ]
        return cls(
            **{
                **data,
                "workdir": Path(data["workdir"]),
                "inventory": Path(data["inventory"]),
                "key": Path(data["key"]),
            },
            nodes=nodes,
        )


def lab_workdir(path: str | None) -> Path:
    """The lab's directory: ``path``, else $RACKOPS_LAB_DIR, else ``.lab``."""
    return Path(path or os.environ.get("RACKOPS_LAB_DIR") or ".lab").resolve()
