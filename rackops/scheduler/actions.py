"""What a run does to the scheduler: drain (Slurm) or cordon and taint (Kubernetes) the
nodes it rejects, and give back the nodes a later run accepts.

Which scheduler the nodes are in is the inventory's ``rackops_scheduler`` (``slurm``,
``kubernetes`` or ``none``); the Slurm launcher implies ``slurm``. rackops only ever undoes
what it did: a Slurm node is resumed only while its drain reason starts with ``rackops:``,
and a Kubernetes node is uncordoned only while it carries the ``rackops.io/rejected``
taint, so a node an operator drained for other reasons stays drained.

A node name reaches a command line only once it is a name (:func:`node_arg`): a letter or
digit first (never an option such as ``--all``), then letters, digits, ``.``, ``_``, ``-``;
never a Slurm hostlist (``[``, ``]``, ``,``), never a space or a control character. A
report.json is read like any file of a run directory: size-limited, a regular file, and
checked field by field before a name in it is used.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rackops.docload import load_json
from rackops.errors import ExitCode, InputError, RackopsError
from rackops.names import NODE_RE, node_arg, short_repr
from rackops.scale import RunLimits, recorded_size, run_limits

SCHEDULERS = ("slurm", "kubernetes", "none")
REASON_PREFIX = "rackops:"
TAINT = "rackops.io/rejected"
STATUSES = ("OK", "WARN", "FAIL", "ERROR")
MAX_REPORT_BYTES = 64 * 1024 * 1024  # report.json: what resume-nodes reads at most
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
REASON_MAX = 200  # Slurm keeps the reason; keep it readable in `sinfo -R`


def rejected_nodes(report: Mapping[str, Any]) -> dict[str, str]:
    """{node: reason} for every node a run names as the part to fix."""
    out: dict[str, list[str]] = {}
    for c in report["culprits"]:
        if c.get("node") and c["kind"] in ("gpu", "hca", "node"):
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
    reason = f"{REASON_PREFIX} {_CONTROL.sub(' ', why)}"
    return reason if len(reason) <= REASON_MAX else reason[: REASON_MAX - 1] + "…"


def slurm_drain(node: str, why: str) -> list[str]:
    return [
        "scontrol",
        "update",
        f"nodename={node_arg(node)}",
        "state=drain",
        f"reason={drain_reason(why)}",
    ]


def slurm_resume(node: str) -> list[str]:
    return ["scontrol", "update", f"nodename={node_arg(node)}", "state=resume"]


def drain_commands(report: Mapping[str, Any], scheduler: str) -> list[list[str]]:
    cmds: list[list[str]] = []
    for node, why in rejected_nodes(report).items():
        if scheduler == "slurm":
            cmds.append(slurm_drain(node, why))
        elif scheduler == "kubernetes":
            cmds.append(["kubectl", "cordon", node_arg(node)])
            cmds.append(
                [
                    "kubectl",
                    "taint",
                    "nodes",
                    node_arg(node),
                    f"{TAINT}=true:NoSchedule",
                    "--overwrite",
                ]
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
    try:
        return {
            str(i["metadata"]["name"])
            for i in items
            if any(t.get("key") == TAINT for t in (i.get("spec") or {}).get("taints") or [])
        }
    except (AttributeError, KeyError, TypeError):
        return None


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
            cmds.append(["kubectl", "taint", "nodes", node_arg(n), f"{TAINT}-"])
            cmds.append(["kubectl", "uncordon", node_arg(n)])
        if tainted is None:
            notes.append("kubectl could not list the nodes: commands for every accepted node")
        return cmds, notes
    return [], ["rackops_scheduler is none: nothing to give back"]


def load_report(run_dir: Path) -> dict[str, Any]:
    """A run's report.json, checked before a name in it reaches a command line: a regular
    file of at most MAX_REPORT_BYTES, and every field resume-nodes reads what rackops
    writes; otherwise exit 3 naming the field (the run directory was altered)."""
    path = run_dir / "report.json"
    try:
        data = load_json(_read_regular(path, _report_limit(run_dir)).decode(errors="replace"), _nan)
    except FileNotFoundError as exc:
        raise InputError(
            f"{path}: no report (run `rackops report {run_dir}` on a finished run)"
        ) from exc
    except (OSError, ValueError, RecursionError) as exc:
        why = _CONTROL.sub("?", str(exc)[:200])
        raise InputError(f"{path}: unreadable report: {why}") from None
    if not isinstance(data, dict) or not {"culprits", "errors", "nodes"} <= data.keys():
        raise InputError(f"{path}: not a rackops report (culprits, errors, nodes missing)")
    bad = _report_fault(data)
    if bad:
        raise DamagedReport(
            f"{_CONTROL.sub('?', str(path))}: {bad}; the run directory was altered or is damaged"
        )
    return data


class DamagedReport(RackopsError):
    exit_code = ExitCode.UNREADABLE


def _nan(word: str) -> Any:
    raise ValueError(f"{word} is not a number rackops writes")


def _report_limit(run_dir: Path) -> int:
    """MAX_REPORT_BYTES, or the bound of the design size the run recorded in run.json where
    larger (rackops.scale: a cluster's report is larger than a rack's)."""
    try:
        meta = load_json(
            _read_regular(run_dir / "run.json", RunLimits().json_bytes).decode(errors="replace"),
            _nan,
        )
    except FileNotFoundError:
        return MAX_REPORT_BYTES
    except (OSError, ValueError, RecursionError) as exc:
        raise InputError(
            f"{run_dir / 'run.json'}: unreadable: {_CONTROL.sub('?', str(exc)[:200])}"
        ) from None
    try:
        design = recorded_size(meta, str(run_dir / "run.json"))
    except ValueError as exc:
        raise DamagedReport(
            f"{_CONTROL.sub('?', str(exc))}; the run directory was altered"
        ) from None
    return run_limits(design, RunLimits(json_bytes=MAX_REPORT_BYTES)).json_bytes


def _read_regular(path: Path, limit: int = MAX_REPORT_BYTES) -> bytes:
    """At most ``limit`` bytes of a regular file, never through a symlink."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f"{path}: not a regular file")
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{path}: larger than {limit} bytes")
    return data


def _report_fault(data: dict[str, Any]) -> str | None:
    """What in a report is not what rackops writes, or None: the fields resume-nodes and
    the actions read (culprits' node, kind and message, errors' subject, nodes' checks)."""

    def name(v: object) -> bool:
        return isinstance(v, str) and NODE_RE.fullmatch(v) is not None

    if not isinstance(data["culprits"], list) or not isinstance(data["errors"], list):
        return "culprits and errors are not lists"
    for i, c in enumerate(data["culprits"]):
        if not isinstance(c, dict):
            return f"culprits[{i}] is {short_repr(c)}, not a culprit"
        if c.get("node") is not None and not name(c.get("node")):
            return f"culprits[{i}].node is {short_repr(c.get('node'))}, not a node name"
        for key in ("kind", "message"):
            if not isinstance(c.get(key), str):
                return f"culprits[{i}].{key} is {short_repr(c.get(key))}, not a string"
        if not isinstance(c.get("where", ""), str):
            return f"culprits[{i}].where is {short_repr(c.get('where'))}, not a string"
    for i, e in enumerate(data["errors"]):
        subject = e.get("subject") if isinstance(e, dict) else None
        if not isinstance(e, dict) or not isinstance(subject, dict | None):
            return f"errors[{i}] is {short_repr(e)}, not a finding"
        if subject and not isinstance(subject.get("node"), str | None):
            return f"errors[{i}].subject.node is {short_repr(subject.get('node'))}, not a name"
    if not isinstance(data["nodes"], dict):
        return f"nodes is {short_repr(data['nodes'])}, not a map"
    for node, checks in data["nodes"].items():
        if not name(node):
            return f"nodes: {short_repr(node)} is not a node name"
        if not isinstance(checks, dict) or not all(
            isinstance(k, str) and v in STATUSES for k, v in checks.items()
        ):
            return f"nodes.{node} is {short_repr(checks)}, not checks with their status"
    return None


def scheduler_of(value: object, where: str, launcher: str) -> str:
    if value is None:
        return "slurm" if launcher == "slurm" else "none"
    if value not in SCHEDULERS:
        raise RackopsError(
            f"{where}: rackops_scheduler: {value!r} is not one of {', '.join(SCHEDULERS)}"
        )
    return str(value)
