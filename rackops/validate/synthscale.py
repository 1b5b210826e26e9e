"""A whole cluster's run directory on the controller, synthetic, and the controller's own
steps over it as a run takes them: for what no lab runs (a test at a few hundred nodes,
``bench/scale_run.py`` at 4,096). The design, its inventory and its sweep's files are
``rackops.lab.synthfabric``; the node checks, GPUs and pair rounds ``synthrun``.

The node outputs the fleet reads are a real lab run's (``tests/fixtures/replay/lab-2node``:
node01's fleet-source outputs, one copy a node), one HCA's firmware configuration changed
on the drifted node.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from rackops.scale import Size
from rackops.validate.synthrun import node_name

NODE_OUTPUTS = Path(__file__).resolve().parents[2] / "tests/fixtures/replay/lab-2node/run"


def write_fleet(nodes: int, drift: dict[str, str], run: Path) -> int:
    """Every node's fleet-source outputs in the run directory as its node stage records
    them: node01's from a real lab run, one copy a node (hard links), and on the drifted
    node (``drift``: its ``node`` and ``hca``) that HCA's firmware configuration changed.
    How many records were written."""
    from rackops.fleet.facts import sources

    wanted = set(sources())
    src = [
        json.loads(x)
        for x in (NODE_OUTPUTS / "results.jsonl").read_text().splitlines()
        if x.strip()
    ]
    mine = [r for r in src if r["node"] == "node01" and r["kind"] == "node" and r["tool"] in wanted]
    raw = run / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    written = 0
    with (run / "results.jsonl").open("a") as out:
        for i in range(nodes):
            name = node_name(i)
            for rec in mine:
                rec = json.loads(json.dumps(rec).replace("node01", name))
                for key in ("stdout", "stderr"):
                    rel = rec.get(key)
                    if not isinstance(rel, str):
                        continue
                    orig = NODE_OUTPUTS / rel.replace(name, "node01")
                    dest = run / rel
                    if dest.exists():
                        dest.unlink()
                    if (
                        name == drift["node"]
                        and rec["id"].endswith(f"mlxconfig/{drift['hca']}")
                        and key == "stdout"
                    ):
                        text = orig.read_text()
                        dest.write_text(_drifted(text))
                    else:
                        os.link(orig, dest)
                out.write(json.dumps(rec, sort_keys=True) + "\n")
                written += 1
    return written


def _drifted(mlxconfig: str) -> str:
    """One firmware setting another value: ATS on where the fleet has it off, or the other
    way round (a card reflashed or configured by hand)."""
    lines = []
    done = False
    for line in mlxconfig.splitlines(keepends=True):
        if not done and "ATS_ENABLED" in line:
            if "False(0)" in line:
                line, done = line.replace("False(0)", "True(1)"), True
            elif "True(1)" in line:
                line, done = line.replace("True(1)", "False(0)"), True
        lines.append(line)
    if not done:
        raise ValueError("the recorded mlxconfig output has no ATS_ENABLED line to drift")
    return "".join(lines)


# --- the controller's steps, each as a run does it ----------------------------------------

SWEEP_DIR = "/tmp/rackops-ibdiag.scale"  # what mktemp printed on the sweep node


def make_run_dir(
    size: Size, rails: int, drift: dict[str, str], inventory: Path, run: Path, seed: int = 1
) -> Path:
    """The run directory before the controller's own steps: the node checks, GPUs under
    load, port counters and pair rounds (rackops.validate.synthrun), every node's fleet
    outputs, and run.json with the design's size (what bounds the directory's files)."""
    from rackops.fleet.facts import sources
    from rackops.validate.synthrun import NODE_TOOLS, make_run

    tools = tuple(t for t in NODE_TOOLS if t not in sources())
    make_run(run, nodes=size.nodes, seed=seed, node_tools=tools)
    write_fleet(size.nodes, drift, run)
    pair_tests = 3 * (size.nodes // 2) * rails  # synthrun's three sampled rounds
    meta = json.loads((run / "run.json").read_text())
    meta.update(
        inventory=str(inventory),
        size=replace(size, pair_tests=pair_tests).as_dict(),
    )
    (run / "run.json").write_text(json.dumps(meta))
    return run


def fleet_step(cluster: Any, run: Path) -> int:
    """The fleet stage over the run directory, as a run runs it: every node's facts from its
    saved outputs, judged by majority. How many records it wrote."""
    from rackops.validate.plan import make_plan
    from rackops.validate.rundir import RunDir
    from rackops.validate.stages.fleet import FleetStage

    runner = _runner(cluster, RunDir(run), None)
    before = len(runner.rundir.records())
    plan = make_plan(cluster, runner.suite)
    FleetStage.fleet_stage(runner, plan, set(), set())
    return len(runner.rundir.records()) - before


def sweep_step(cluster: Any, sweep: Path, run: Path) -> int:
    """The InfiniBand sweep before and after the pair rounds and its judgement, as a run
    does them (the stage's own code), its commands answered from ``sweep``'s files. How
    many records it wrote."""
    from rackops.tools import ibdiagnet, perfquery
    from rackops.validate.plan import make_plan
    from rackops.validate.replay import Recording, Reply
    from rackops.validate.rundir import RunDir
    from rackops.validate.stages.ibdiag import MKTEMP

    node = cluster.nodes[0].name
    rec = Recording()
    rec.add(node, MKTEMP, Reply(stdout=SWEEP_DIR + "\n"))
    rec.add(
        node, ibdiagnet.sweep_argv(SWEEP_DIR), Reply(stdout=(sweep / "console.txt").read_text())
    )
    rec.add(
        node, ibdiagnet.file_argv(SWEEP_DIR, "sm"), Reply(stdout=(sweep / "sm.txt").read_text())
    )
    dump = (sweep / "net_dump.txt").read_text()
    rec.add(node, ibdiagnet.file_argv(SWEEP_DIR, "net_dump"), Reply(stdout=dump))
    rec.add(node, ["rm", "-rf", "--", SWEEP_DIR], Reply())
    lids = json.loads((sweep / "sweep.json").read_text())["lids"]
    for sw, lid in lids.items():
        before = Reply(stdout=(sweep / "before" / f"{sw}.txt").read_text())
        after = Reply(stdout=(sweep / "after" / f"{sw}.txt").read_text())
        rec.add(node, perfquery.switch_argv(lid), before, after)
    runner = _runner(cluster, RunDir(run), rec)
    plan = make_plan(cluster, runner.suite)
    records = len(runner.rundir.records())
    runner.fabric_sweep(plan, "before", set(), set())
    runner.fabric_sweep(plan, "after", set(), set())
    return len(runner.rundir.records()) - records


def _runner(cluster: Any, rundir: Any, recording: Any) -> Any:
    from rackops.profiles import load_profile
    from rackops.suites import load_suite
    from rackops.validate.executor import Target
    from rackops.validate.replay import Recording, ReplayExecutor
    from rackops.validate.runner import Runner

    suite = load_suite("acceptance")
    profiles = {n.profile: load_profile(n.profile).profile for n in cluster.nodes[:1]}
    targets = {n.name: Target(n.name, n.name) for n in cluster.nodes}
    executor = ReplayExecutor(recording or Recording())
    return Runner(cluster, suite, profiles, targets, executor, rundir, progress=lambda _m: None)


def named(run: Path, planted: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each planted fault (``kind``, ``code``: the family of the code that names it,
    ``subject``) -> the run's findings that name it: not OK, of that code's family, and
    every field of its subject as planted."""
    from rackops.validate.rundir import RunDir

    out: dict[str, list[dict[str, Any]]] = {p["kind"]: [] for p in planted}
    for rec in RunDir(run).records():
        for f in rec["findings"]:
            if f["status"] == "OK":
                continue
            for p in planted:
                if f["code"].startswith(p["code"]) and all(
                    str(f["subject"].get(k)) == v for k, v in p["subject"].items()
                ):
                    out[p["kind"]].append(f)
    return out
