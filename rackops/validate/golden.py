"""``rackops profile capture``: a golden profile from a node known to be good.

The node's facts come from a run directory: one given with ``--run`` (the rack's own
acceptance run), or a run of the suite on that node alone, made now. A node with any FAIL
or ERROR in that run is refused (a golden node must itself be accepted); differences from
an older golden are not held against it (recapturing after a fleet-wide upgrade is the
point). The profile written is the node's own profile with a ``golden`` section, named by
the output file, so it loads wherever a profile does (``<inventory>/profiles/`` wins over
the built-in one of the same name).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from rackops import __version__
from rackops.errors import NotGolden, RackopsError
from rackops.fleet import read_table
from rackops.fleet.facts import Fact
from rackops.inventory import load_inventory
from rackops.names import safe_file_stem
from rackops.profiles import Golden, load_profile, load_profile_file
from rackops.validate.records import short
from rackops.validate.rundir import RunDir

MAX_BLOCKERS = 20  # findings quoted when a node is refused


def blockers(rundir: RunDir, node: str) -> list[str]:
    """What keeps ``node`` from being golden in this run: its FAIL and ERROR findings and
    those of the pairs it was in; a difference from the siblings or an older golden aside,
    never a version floor or a link below its capability."""
    out = []
    for rec in rundir.records():
        for f in rec["findings"]:
            subj = f["subject"]
            mine = subj.get("node") == node or rec.get("node") == node
            compared = f["code"].startswith("FLEET-") and f["code"] != "FLEET-FLOOR"
            if f["status"] in ("FAIL", "ERROR") and mine and not compared:
                out.append(f"{f['status']} {f['code']} {short(f['message'], 160)}")
    return out


def _golden(data: dict[str, Any]) -> Golden:
    try:
        return Golden.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise RackopsError(
            f"the facts of {data['node']} do not make a golden profile: {where}: {err['msg']}"
        ) from exc


def golden_of(facts: list[Fact], node: str, run: Path) -> Golden:
    table: dict[str, dict[str, Any]] = {}
    for f in facts:
        entry = {"value": f.value, "source": f.source}
        if f.where:
            entry["where"] = f.where
        table.setdefault(f.device, {})[f.name] = entry
    return _golden(
        {
            "node": node,
            "captured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "run": str(run),
            "rackops_version": __version__,
            "facts": table,
        }
    )


def capture(
    inventory: str,
    node: str,
    out: Path,
    run: Path,
    *,
    allow_lookups: bool = False,
) -> tuple[Path, int]:
    """Write the golden profile of ``node`` from run directory ``run``; (file, facts)."""
    cluster = load_inventory(inventory, allow_lookups=allow_lookups).raise_for_errors()
    names = [n.name for n in cluster.nodes]
    if node not in names:
        raise RackopsError(
            f"--from {short(node)} is not a node of {inventory}: {', '.join(names[:20])}"
        )
    stem = out.name[: -len(".yaml")] if out.name.endswith(".yaml") else ""
    if not stem or not safe_file_stem(stem):
        raise RackopsError(
            f"-o {short(str(out))}: a profile file is NAME.yaml, NAME a plain name (it becomes "
            "the profile's name)"
        )
    rundir = RunDir(run)
    if not rundir.records():
        raise RackopsError(f"{run}: no results in this run directory (results.jsonl)")
    if bad := blockers(rundir, node):
        more = f" (and {len(bad) - MAX_BLOCKERS} more)" if len(bad) > MAX_BLOCKERS else ""
        raise NotGolden(
            f"{node} is not accepted in {run}, so it cannot be golden: "
            + "; ".join(bad[:MAX_BLOCKERS])
            + more
            + ". Fix it, or capture from a node that passes."
        )
    facts = read_table(rundir, cluster, [node])[node]
    if not facts:
        raise RackopsError(
            f"{run}: no fleet facts of {node} (run with a suite that has checks.fleet: true)"
        )
    inv_dir = Path(inventory) if Path(inventory).is_dir() else Path(inventory).parent
    base = load_profile(cluster.node(node).profile, inv_dir).profile
    data = base.model_dump(mode="json", exclude={"golden"})
    data["name"] = stem
    data["golden"] = golden_of(facts, node, run).model_dump(mode="json")
    header = (
        f"# Golden profile: {base.name} with the facts of {node}, captured by "
        f"`rackops profile capture` (rackops {__version__}).\n"
        "# Every node of this profile is held to `golden.facts`; recapture, do not hand-edit.\n"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{stem}.capture"
    staging.mkdir(exist_ok=True)
    tmp = staging / out.name
    try:
        tmp.write_text(header + yaml.safe_dump(data, sort_keys=False, width=100))
        load_profile_file(tmp, check_peaks=False)  # what is written loads as a profile
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
        staging.rmdir()
    return out, len(facts)
