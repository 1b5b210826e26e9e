"""What a run does to the scheduler: drain (Slurm) or cordon and taint (Kubernetes) the
nodes it rejects, and give back the nodes a later run accepts.

Which scheduler the nodes are in is the inventory's ``rackops_scheduler`` (``slurm``,
``kubernetes`` or ``none``); the Slurm launcher implies ``slurm``. rackops only ever undoes
what it did: a Slurm node is resumed only while its drain reason starts with ``rackops:``,
and a Kubernetes node is uncordoned only while it carries the ``rackops.io/rejected``
taint, so a node an operator drained for other reasons stays drained.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rackops.errors import InputError, RackopsError

SCHEDULERS = ("slurm", "kubernetes", "none")
REASON_PREFIX = "rackops:"
TAINT = "rackops.io/rejected"
REASON_MAX = 200  # Slurm keeps the reason; keep it readable in `sinfo -R`


def rejected_nodes(report: Mapping[str, Any]) -> dict[str, str]:
    """{node: reason} for every node a run names as the part to fix."""
    out: dict[str, list[str]] = {}
    for c in report["culprits"]:
        if c["node"] and c["kind"] in ("gpu", "hca", "node"):
            what = c.get("where") or c["node"]
            out.setdefault(c["node"], []).append(f"{what}: {c['message']}")
    return {n: "; ".join(msgs) for n, msgs in sorted(out.items())}


def accepted_nodes(report: Mapping[str, Any]) -> list[str]:
    """Nodes the run judged and found nothing against: every check OK or WARN, no culprit,
    no error naming them (an unreachable node was not judged)."""
    bad = set(rejected_nodes(report))
    bad |= {c["node"] for c in report["culprits"] if c.get("node")}
    bad |= {e["subject"]["node"] for e in report["errors"] if e.get("subject")}
    return sorted(
        n
        for n, checks in report["nodes"].items()
        if n not in bad and checks and all(s in ("OK", "WARN") for s in checks.values())
    )


def drain_reason(why: str) -> str:
    """The Slurm drain reason rackops writes (and recognises as its own)."""
    reason = f"{REASON_PREFIX} {why}"
    return reason if len(reason) <= REASON_MAX else reason[: REASON_MAX - 1] + "…"


def slurm_drain(node: str, why: str) -> list[str]:
    return ["scontrol", "update", f"nodename={node}", "state=drain", f"reason={drain_reason(why)}"]


def slurm_resume(node: str) -> list[str]:
    return ["scontrol", "update", f"nodename={node}", "state=resume"]


def drain_commands(report: Mapping[str, Any], scheduler: str) -> list[list[str]]:
    cmds: list[list[str]] = []
    for node, why in rejected_nodes(report).items():
        if scheduler == "slurm":
            cmds.append(slurm_drain(node, why))
        elif scheduler == "kubernetes":
            cmds.append(["kubectl", "cordon", node])
            cmds.append(
                ["kubectl", "taint", "nodes", node, f"{TAINT}=true:NoSchedule", "--overwrite"]
            )
    return cmds


@dataclass(frozen=True)
class Applied:
    argv: tuple[str, ...]
    rc: int | None
    output: str

    @property
    def ok(self) -> bool:
        return self.rc == 0


def apply(cmds: Sequence[Sequence[str]], env: Mapping[str, str] | None = None) -> list[Applied]:
    done = []
    for cmd in cmds:
        try:
            proc = subprocess.run(
                list(cmd),
                env=dict(env) if env else None,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            done.append(Applied(tuple(cmd), proc.returncode, (proc.stdout + proc.stderr).strip()))
        except FileNotFoundError:
            done.append(Applied(tuple(cmd), None, f"{cmd[0]} not found on this machine"))
        except subprocess.TimeoutExpired:
            done.append(Applied(tuple(cmd), None, f"{cmd[0]} did not answer in 60 s"))
    return done


def slurm_drained_by_us(nodes: Sequence[str], env: Mapping[str, str]) -> dict[str, str]:
    """{node: reason} of the nodes Slurm holds drained with a rackops reason."""
    from rackops.scheduler.slurm import node_states

    out = {}
    for node, (state, reason) in node_states(nodes, env).items():
        if "drain" in state and reason.startswith(REASON_PREFIX):
            out[node] = reason
    return out


def k8s_tainted_by_us(env: Mapping[str, str]) -> set[str] | None:
    """Nodes that carry the rackops taint, or None when kubectl cannot tell."""
    try:
        proc = subprocess.run(
            ["kubectl", "get", "nodes", "-o", "json"],
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        items = json.loads(proc.stdout)["items"] if proc.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError, TypeError):
        return None
    if not isinstance(items, list):
        return None
    return {
        str(i["metadata"]["name"])
        for i in items
        if any(t.get("key") == TAINT for t in (i.get("spec") or {}).get("taints") or [])
    }


def resume_commands(
    report: Mapping[str, Any], scheduler: str, env: Mapping[str, str]
) -> tuple[list[list[str]], list[str]]:
    """Commands that give back the nodes this run accepted, and notes on those left."""
    accepted = accepted_nodes(report)
    notes: list[str] = []
    if scheduler == "slurm":
        ours = slurm_drained_by_us(accepted, env) if accepted else {}
        notes += [
            f"{n}: accepted, and not drained by rackops in Slurm: left as it is"
            for n in accepted
            if n not in ours
        ]
        return [slurm_resume(n) for n in ours], notes
    if scheduler == "kubernetes":
        tainted = k8s_tainted_by_us(env)
        cmds = []
        for n in accepted:
            if tainted is not None and n not in tainted:
                notes.append(f"{n}: accepted, and without the {TAINT} taint: left as it is")
                continue
            cmds.append(["kubectl", "taint", "nodes", n, f"{TAINT}-"])
            cmds.append(["kubectl", "uncordon", n])
        if tainted is None:
            notes.append("kubectl could not list the nodes: commands for every accepted node")
        return cmds, notes
    return [], ["rackops_scheduler is none: nothing to give back"]


def load_report(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "report.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise InputError(
            f"{path}: no report (run `rackops report {run_dir}` on a finished run)"
        ) from exc
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: unreadable report: {exc}") from exc
    if not isinstance(data, dict) or not {"culprits", "errors", "nodes"} <= data.keys():
        raise InputError(f"{path}: not a rackops report (culprits, errors, nodes missing)")
    return data


def scheduler_of(value: object, where: str, launcher: str) -> str:
    if value is None:
        return "slurm" if launcher == "slurm" else "none"
    if value not in SCHEDULERS:
        raise RackopsError(
            f"{where}: rackops_scheduler: {value!r} is not one of {', '.join(SCHEDULERS)}"
        )
    return str(value)
