"""Slurm as a scheduler: its node states, an allocation, and where its client commands are.

What the Slurm launcher (``rackops.validate.slurm``), the actions (drain, resume), the
node's own health check and the lab's Slurm all ask of Slurm, in one place.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rackops.errors import RackopsError
from rackops.names import node_arg

# node states (sinfo %T, lower case) on which a step can run
USABLE = {"idle", "mixed", "allocated", "completing", "planned", "reserved"}


class SlurmError(RackopsError):
    pass


@dataclass(frozen=True)
class SlurmSettings:
    """How to reach Slurm: from the command line and the inventory."""

    partition: str | None = None
    reservation: str | None = None
    exclusive: bool = False
    mpi: str = "pmix"  # rackops_slurm_mpi
    export: str = "ALL"  # rackops_slurm_export: srun --export
    conf: str | None = None  # rackops_slurm_conf: SLURM_CONF for the client commands
    time_limit_min: int = 120

    def completed(self, hostvars: Mapping[str, Any], where: str) -> SlurmSettings:
        """These settings (the command line's), completed from the inventory's
        rackops_slurm_* keys."""
        mpi = hostvars.get("rackops_slurm_mpi", self.mpi)
        export = hostvars.get("rackops_slurm_export", self.export)
        conf = hostvars.get("rackops_slurm_conf", self.conf)
        for key, value in (("rackops_slurm_mpi", mpi), ("rackops_slurm_export", export)):
            if not isinstance(value, str) or not value or any(c.isspace() for c in value):
                raise RackopsError(f"{where}: {key}: {value!r} must be one word (srun's syntax)")
        if conf is not None and not isinstance(conf, str):
            raise RackopsError(f"{where}: rackops_slurm_conf: {conf!r} must be a path")
        return replace(self, mpi=mpi, export=export, conf=conf)


def slurm_env(conf: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if conf:
        env["SLURM_CONF"] = conf
    return env


def _run(argv: Sequence[str], env: Mapping[str, str], timeout: float = 60) -> str:
    try:
        proc = subprocess.run(
            list(argv), env=dict(env), capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError as exc:
        raise SlurmError(
            f"{argv[0]} not found: the Slurm launcher runs on a login node with the Slurm "
            "client commands (apt-get install slurm-client), or use --launcher ssh"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise SlurmError(f"{' '.join(argv[:3])} … did not answer in {timeout:g} s") from exc
    if proc.returncode != 0:
        raise SlurmError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def hostlist(nodes: Sequence[str]) -> str:
    """Node names joined for Slurm's ``-n``/``-w``: each a plain name (never a hostlist
    expression of its own, never an option), or UnsafeName."""
    return ",".join(node_arg(n) for n in nodes)


def node_states(nodes: Sequence[str], env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Slurm's state and reason of each node it knows: {node: (state, reason)}."""
    out = _run(["sinfo", "-h", "-N", "-n", hostlist(nodes), "-o", "%N|%T|%E"], env)
    states: dict[str, tuple[str, str]] = {}
    for line in out.splitlines():
        name, _, rest = line.partition("|")
        state, _, reason = rest.partition("|")
        if name:
            states[name.strip()] = (state.strip().lower(), reason.strip())
    return states


def unusable(states: Mapping[str, tuple[str, str]], node: str) -> str | None:
    """Why Slurm cannot run a step on the node, or None."""
    if node not in states:
        return "Slurm does not know this node (not in slurm.conf, or not in the partition)"
    state, reason = states[node]
    flags = set(re.split(r"[+~#!%$@^-]", state.rstrip("*"))) - {""}
    if state.endswith("*") or not flags <= USABLE:
        why = f"Slurm reports it {state}"
        return why + (f" (reason: {reason})" if reason and reason != "none" else "")
    return None


@dataclass
class Allocation:
    job_id: str
    nodes: tuple[str, ...]
    owned: bool  # we made it (salloc) and release it at the end


def allocate(
    nodes: Sequence[str], settings: SlurmSettings, env: Mapping[str, str], wait_s: float = 600
) -> Allocation:
    """The current allocation (inside salloc/sbatch), or a new one for these nodes."""
    job = env.get("SLURM_JOB_ID")
    if job and not settings.partition:
        names = _run(["scontrol", "show", "hostnames", env.get("SLURM_JOB_NODELIST", "")], env)
        return Allocation(job, tuple(names.split()), owned=False)
    argv = ["salloc", "--no-shell", "-N", str(len(nodes)), "-w", hostlist(nodes)]
    argv += ["-J", "rackops-validate", "-t", str(settings.time_limit_min)]
    if settings.partition:
        argv.append(f"--partition={settings.partition}")  # one word: never an option
    if settings.reservation:
        argv.append(f"--reservation={settings.reservation}")
    if settings.exclusive:
        argv.append("--exclusive")
    try:
        proc = subprocess.run(
            argv, env=dict(env), capture_output=True, text=True, timeout=wait_s, check=False
        )
    except FileNotFoundError as exc:
        raise SlurmError("salloc not found: install the Slurm client commands") from exc
    except subprocess.TimeoutExpired as exc:
        raise SlurmError(
            f"salloc for {len(nodes)} nodes was not granted in {wait_s:g} s (partition "
            f"{settings.partition or 'default'}): free the nodes or pass --reservation"
        ) from exc
    found = re.search(r"Granted job allocation (\d+)", proc.stderr + proc.stdout)
    if proc.returncode != 0 or not found:
        raise SlurmError(f"salloc failed ({proc.returncode}): {proc.stderr.strip()}")
    return Allocation(found.group(1), tuple(nodes), owned=True)
