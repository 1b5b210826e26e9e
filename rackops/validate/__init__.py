"""``rackops validate``: plan → run → evaluate → localise → report, into a run directory."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rackops import __version__
from rackops.errors import RackopsError
from rackops.inventory import load_inventory
from rackops.inventory.model import Cluster
from rackops.profiles import Profile, load_profile
from rackops.scheduler.actions import apply, scheduler_of
from rackops.scheduler.slurm import SlurmSettings, slurm_env
from rackops.suites import load_suite
from rackops.validate.executor import Executor
from rackops.validate.localise import Verdict
from rackops.validate.plan import Plan, limited, make_plan
from rackops.validate.records import short
from rackops.validate.report import actions, write_reports
from rackops.validate.rundir import RunDir
from rackops.validate.runner import Progress, Runner, _stderr, targets_from_inventory
from rackops.validate.slurm import SlurmExecutor


@dataclass
class Outcome:
    plan: Plan
    run_dir: Path | None
    report: dict[str, Any] | None
    verdict: Verdict | None


def _resumed_limit(path: Path, given: str | None, progress: Progress) -> str | None:
    """The --limit a resumed run keeps: the one its run.json recorded (none: every node of
    the inventory, as in a run from before --limit). Another one is refused, since the
    steps already done were chosen by it."""
    try:
        meta = RunDir(path).read_json("run.json") if (path / "run.json").exists() else None
    except RackopsError:
        meta = None
    if not isinstance(meta, dict):
        progress(
            f"resume: {path} has no readable run.json: "
            + (f"--limit {short(given)}" if given else "every node of the inventory")
            + " is validated, as given"
        )
        return given
    recorded = meta.get("limit")
    if recorded is not None and not isinstance(recorded, str):
        raise RackopsError(f"{path / 'run.json'}: limit is {short(recorded)}, not a string")
    if given is not None and (
        recorded is None or set(given.split(",")) != set(recorded.split(","))
    ):
        was = f"--limit {short(recorded)}" if recorded else "every node of the inventory"
        raise RackopsError(
            f"--resume {path}: --limit {short(given)}, but the run validated {was}; resume "
            "without --limit (the run keeps its own), or start a new run"
        )
    return recorded


def _check_suspects(
    suspects: tuple[str, ...], cluster: Cluster, inventory: str, limit: str | None
) -> None:
    names = {n.name for n in cluster.nodes}
    for s in suspects:
        if s not in names:
            where = f"the nodes --limit {limit} selects" if limit else f"the nodes of {inventory}"
            raise RackopsError(f"--suspects {short(s)} is not one of {where}")


def _switch_targets(result: Any, cluster: Cluster, limit: str | None) -> dict[str, Any]:
    """The switches to read: none when the run is limited to some nodes (the switches'
    counters would count the other nodes' traffic too)."""
    from rackops.validate.switches import switch_targets

    return {} if limit is not None else switch_targets(result, cluster)


def _run_path(resume: str | None, run_dir: str | None, rack: str, suite: str) -> Path:
    """The run directory: the one resumed, or a new (empty) one."""
    if resume:
        path = Path(resume)
        if not (path / "results.jsonl").exists():
            raise RackopsError(f"{resume}: not a run directory (no results.jsonl)")
        return path
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = Path(run_dir or f"build/runs/{rack}-{suite}-{stamp}")
    if path.exists() and any(path.iterdir()):
        raise RackopsError(f"{path} exists and is not empty; use --resume {path}")
    return path


def _switch_reader(targets: dict[str, Any], accept_new_host_keys: bool) -> Any:
    """Switches are read from here, over SSH, whatever launches the nodes' tests."""
    if not targets:
        return None
    from rackops.validate.ssh import SshExecutor

    return SshExecutor(accept_new_host_keys=accept_new_host_keys)


def validate(
    inventory: str,
    suite_name: str,
    *,
    dry_run: bool = False,
    run_dir: str | None = None,
    resume: str | None = None,
    pairing: str | None = None,
    suspects: tuple[str, ...] = (),
    limit: str | None = None,
    accept_new_host_keys: bool = False,
    allow_lookups: bool = False,
    concurrency: int = 32,
    apply_actions: bool = False,
    launcher: str = "ssh",
    slurm: SlurmSettings | None = None,
    progress: Progress = _stderr,
) -> Outcome:
    result = load_inventory(inventory, allow_lookups=allow_lookups)
    cluster = result.raise_for_errors()
    if resume:
        limit = _resumed_limit(Path(resume), limit, progress)
    if limit is not None:
        cluster = limited(cluster, limit, inventory)
    _check_suspects(suspects, cluster, inventory, limit)
    inv_dir = Path(inventory) if Path(inventory).is_dir() else Path(inventory).parent
    suite = load_suite(suite_name, inv_dir)
    profiles: dict[str, Profile] = {
        n.profile: load_profile(n.profile, inv_dir).profile for n in cluster.nodes
    }
    plan = make_plan(cluster, suite, pairing=pairing, suspects=suspects)
    first = result.hostvars[cluster.nodes[0].name].values
    scheduler = scheduler_of(first.get("rackops_scheduler"), inventory, launcher)
    if apply_actions and scheduler == "none":
        raise RackopsError(
            f"{inventory}: --apply-actions, but the inventory does not say which scheduler "
            "the nodes are in: set rackops_scheduler (slurm or kubernetes), or use "
            "--launcher slurm"
        )
    slurm = (slurm or SlurmSettings()).completed(first, inventory)
    if dry_run:
        return Outcome(plan, None, None, None)
    path = _run_path(resume, run_dir, cluster.name, suite.name)
    rundir = RunDir(path)
    if resume and (dropped := rundir.compact()):
        progress(f"resume: {dropped} unreadable line(s) of {rundir.results} dropped; run again")
    if not resume:
        rundir.write_json(
            "run.json",
            {
                "rackops_version": __version__,
                "inventory": str(inventory),
                "suite": suite.name,
                "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "plan": plan.describe(),
                "launcher": launcher,
                "scheduler": scheduler,
                "limit": limit,
                "slurm_conf": slurm.conf,
                # what bounds this run directory's files when read again (rackops.scale)
                "size": cluster.size(plan.pair_count() * len(plan.rails)).as_dict(),
            },
        )
    is_lab = bool(first.get("rackops_lab", False))
    mpirun = tuple(str(a) for a in first.get("rackops_mpirun_args", ()))
    executor: Executor
    switch_targets = _switch_targets(result, cluster, limit)
    switch_reader = _switch_reader(switch_targets, accept_new_host_keys)
    if launcher == "slurm":
        executor = SlurmExecutor.open([n.name for n in cluster.nodes], slurm, inventory, progress)
    else:
        from rackops.validate.ssh import SshExecutor  # paramiko: not needed by node-check

        executor = SshExecutor(accept_new_host_keys=accept_new_host_keys, mpirun_args=mpirun)
    try:
        runner = Runner(
            cluster,
            suite,
            profiles,
            targets_from_inventory(result, cluster),
            executor,
            rundir,
            concurrency=concurrency,
            lab=is_lab,
            progress=progress,
            switch_targets=switch_targets,
            switch_executor=switch_reader,
            limited=limit is not None,
        )
        runner.run(plan)
    finally:
        executor.close()
        if switch_reader is not None:
            switch_reader.close()
    report, verdict, _ = write_reports(rundir)
    if apply_actions:
        for done in apply(actions(report, scheduler), slurm_env(slurm.conf)):
            progress(f"[actions] {' '.join(done.argv[:3])}: {'ok' if done.ok else done.output}")
    return Outcome(plan, path, report, verdict)
