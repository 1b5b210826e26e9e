"""The ``rackops`` command line: argument parsing and exit codes only.

Every subcommand is one library call. Errors rackops raises on purpose print
one line to stderr; ``--debug`` shows the traceback, nothing else does.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rackops import __version__
from rackops.diagnostics import TerminalSafe, printable
from rackops.errors import ExitCode, InputError, RackopsError
from rackops.names import slurm_names_problem
from rackops.parsers._common import MAX_INPUT_CHARS, finite_json
from rackops.scale import DEFAULT, Limits

if TYPE_CHECKING:
    from rackops.diagnostics import Diagnostic
    from rackops.inventory.model import Cluster


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors; rackops uses 64 (EX_USAGE) everywhere."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(ExitCode.USAGE)


def json_text(data: Any, **kw: Any) -> str:
    """What rackops prints as JSON: always JSON (NaN and ±inf, which no reader takes, as
    null)."""
    return json.dumps(finite_json(data), allow_nan=False, **kw)


def _cmd_lint(args: argparse.Namespace) -> int:
    from rackops.lint import lint_inventory, rule_table

    if args.list_rules:
        for code, summary in sorted(rule_table().items()):
            print(f"{code:7} {summary}")
        return ExitCode.OK
    if not args.inventory:
        raise RackopsError("lint needs an inventory: rackops lint -i inventories/<rack>")
    report = lint_inventory(args.inventory, allow_lookups=args.allow_lookups)
    if args.format == "json":
        print(
            json.dumps(
                {
                    "inventory": str(report.inventory),
                    "errors": report.errors,
                    "warnings": report.warnings,
                    "diagnostics": [d.as_dict() for d in report.diagnostics],
                },
                indent=2,
            )
        )
    else:
        for d in report.diagnostics:
            print(d.human())
        summary = f"{report.inventory}: {report.errors} error(s), {report.warnings} warning(s)"
        print(summary, file=sys.stderr)
    return int(report.exit_code)


# The largest tool output rackops reads (the parsers' own limit, parsers/_common.py): bytes
# beyond it are never read from the file (bench/README.md has the measurement).
MAX_INPUT_BYTES = MAX_INPUT_CHARS


def _input_limits(tool: str, inventory: str | None) -> Limits:
    """What one output of ``tool`` may hold, with the inventory's design where given."""
    from rackops.tools import input_limits

    if inventory is None:
        return input_limits(tool, None)
    from rackops.inventory import load_inventory

    return input_limits(tool, load_inventory(inventory).raise_for_errors())


def _read_input(path: str, limits: Limits = DEFAULT, tool: str | None = None) -> str:
    """The file's text, at most MAX_INPUT_BYTES, or what ``limits`` allow where larger;
    ``tool`` read with no design: a fabric-wide one's refusal says where a bound comes from."""
    from rackops.tools import get as get_tool

    limit = max(MAX_INPUT_BYTES, limits.chars)
    why = limits.why if limit > MAX_INPUT_BYTES else "no tool output rackops reads is that large"
    if limits is DEFAULT and tool is not None and get_tool(tool).fabric_wide:
        why += " (a large fabric's: pass -i INVENTORY, whose design bounds it)"
    try:
        if path == "-":
            raw = sys.stdin.buffer.read(limit + 1)
        else:
            with Path(path).open("rb") as fh:
                raw = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc
    if len(raw) > limit:
        raise InputError(
            f"{path}: more than {limit >> 20} MB: {why}; pass the tool's own output, not a "
            "concatenation or a binary file"
        )
    return raw.decode("utf-8", errors="replace")


def _cmd_parse(args: argparse.Namespace) -> int:
    from rackops.parsers import ParseError, as_jsonable
    from rackops.parsers._common import check_limits, plain
    from rackops.parsers.nvidia_smi import parse_query_gpu
    from rackops.tools import parse

    limits = _input_limits(args.tool, args.inventory)
    text = _read_input(args.file, limits, args.tool)
    try:
        if args.tool == "nvidia-smi-query" and args.fields:
            check_limits(text)  # as tools.parse does, before the parser sees it
            result = parse_query_gpu(plain(text), [f.strip() for f in args.fields.split(",")])
        else:
            result = parse(args.tool, text, limits)
    except ParseError as exc:
        print(f"rackops: {args.file}: unreadable {args.tool} output: {exc}", file=sys.stderr)
        return ExitCode.UNREADABLE
    data = as_jsonable(result)
    if args.format == "json":
        print(json_text(data, indent=2, sort_keys=True))
    else:
        import yaml

        print(yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100), end="")
    return ExitCode.OK


def _cmd_check(args: argparse.Namespace) -> int:
    from rackops.findings import exit_code, worst
    from rackops.tools import input_limits
    from rackops.tools.offline import build_context, evaluate

    ctx = build_context(args.profile, args.inventory, args.node, args.suite)
    findings = evaluate(
        args.tool,
        _read_input(args.file, input_limits(args.tool, ctx.cluster), args.tool),
        ctx,
        args.node,
    )
    verdict = worst(findings)
    if args.format == "json":
        print(
            json_text(
                {"verdict": verdict.value, "findings": [f.as_dict() for f in findings]}, indent=2
            )
        )
    else:
        for f in findings:
            print(f.human())
        print(f"verdict: {verdict.value} ({len(findings)} findings)", file=sys.stderr)
    return exit_code(verdict)


def _cmd_lab(args: argparse.Namespace) -> int:
    from rackops import lab

    if args.action == "up":
        log: list[str] = []
        try:
            state = lab.up(
                nodes=args.nodes,
                scenario=args.scenario,
                engine_name=args.engine,
                workdir=args.workdir,
                inventory=args.inventory,
                suite=args.release,
                systemd=args.systemd,
                slurm=args.slurm,
                slurm_health_interval=args.slurm_health_interval,
                port_base=args.port_base,
                log=log,
                racks=args.racks,
            )
        finally:
            for line in log:
                print(f"lab: {line}", file=sys.stderr)
        for node in state.nodes:
            where = f"{node.ssh_host}:{node.ssh_port}" if node.started else "not started"
            print(f"{node.name}  {where}  mgmt {node.mgmt_ip}")
        print(f"ssh -F {state.workdir / 'ssh_config'} node01")
        if state.slurm:
            print(f"SLURM_CONF={state.workdir / 'slurm' / 'etc' / 'slurm.conf'} sinfo")
        return ExitCode.OK
    if args.action == "repo":
        from rackops.lab.lab import DEFAULT_VERSIONS
        from rackops.lab.repo import build_repo

        dest = Path(args.dest or "build/lab-repo")
        pkgs = build_repo(dest, DEFAULT_VERSIONS)
        print(
            f"lab: {len(pkgs)} stand-in packages in {dest}, signed (apt: deb "
            f"[signed-by={dest.resolve()}/rackops-lab-archive-keyring.gpg] "
            f"file:{dest.resolve()} ./)"
        )
        return ExitCode.OK
    if args.action == "box":
        from rackops.lab.lab import _cache_dir
        from rackops.lab.model import lab_workdir
        from rackops.lab.vagrantbox import add_box, box_name, build_box
        from rackops.lab.vm import accel

        built: list[str] = []
        name = box_name(args.release)
        try:
            box = build_box(_cache_dir(lab_workdir(args.workdir)), args.release, built, accel())
            add_box(box, name, built)
        finally:
            for line in built:
                print(f"lab: {line}", file=sys.stderr)
        print(f"lab: {box} added to this user's Vagrant as {name} (vagrant up --provider=libvirt)")
        print(f"lab: for another user: vagrant box add --force --name {name} {box}")
        return ExitCode.OK
    if args.action == "down":
        removed = lab.down(workdir=args.workdir, purge=args.purge)
        print(f"lab: removed {len(removed)} containers and networks; nothing of the lab is left")
        return ExitCode.OK
    rows = lab.status(workdir=args.workdir)
    if not rows:
        print("lab: no lab is up")
        return ExitCode.WARNINGS
    for row in rows:
        print("  ".join(row))
    return (
        ExitCode.OK
        if all("ssh ok" in r[2] or "not started" in r[1] for r in rows)
        else ExitCode.ERRORS
    )


def _cmd_validate(args: argparse.Namespace) -> int:
    from rackops.scheduler.slurm import SlurmSettings
    from rackops.validate import validate
    from rackops.validate.report import actions, scheduler_of_run, summary
    from rackops.validate.rundir import RunDir

    if args.launcher != "slurm" and (args.partition or args.reservation or args.exclusive):
        raise InputError("--partition, --reservation and --exclusive need --launcher slurm")
    for flag, value, many in (
        ("--partition", args.partition, True),
        ("--reservation", args.reservation, False),
    ):
        problem = value and slurm_names_problem(value, flag, many)
        if problem:
            raise RackopsError(problem)  # a usage error: exit 64
    outcome = validate(
        args.inventory,
        args.suite,
        dry_run=args.dry_run,
        run_dir=args.run_dir,
        resume=args.resume,
        pairing=args.pairing,
        suspects=tuple(s for s in (args.suspects or "").split(",") if s),
        limit=args.limit,
        accept_new_host_keys=args.accept_new_host_keys,
        allow_lookups=args.allow_lookups,
        concurrency=args.concurrency,
        apply_actions=args.apply_actions,
        launcher=args.launcher,
        slurm=SlurmSettings(
            partition=args.partition, reservation=args.reservation, exclusive=args.exclusive
        ),
    )
    if args.dry_run:
        print(outcome.plan.describe())
        return ExitCode.OK
    assert outcome.report is not None and outcome.verdict is not None
    print(summary(outcome.report))
    assert outcome.run_dir is not None
    cmds = actions(outcome.report, scheduler_of_run(RunDir(outcome.run_dir)))
    if cmds and not args.apply_actions:
        print("actions for rejected nodes (not applied; --apply-actions runs them):")
        for cmd in cmds:
            print("  " + " ".join(cmd))
    print(f"results: {outcome.run_dir} (report.html, report.json, junit.xml, metrics.prom)")
    return outcome.verdict.exit_code


def _cmd_profile_capture(args: argparse.Namespace) -> int:
    from rackops.validate.golden import capture

    run = args.run
    if run is None:  # the node's own run, now: a golden node must pass today's checks
        from rackops.validate import validate

        outcome = validate(
            args.inventory,
            args.suite,
            limit=args.node,
            run_dir=args.run_dir,
            accept_new_host_keys=args.accept_new_host_keys,
            allow_lookups=args.allow_lookups,
            launcher=args.launcher,
        )
        assert outcome.run_dir is not None
        run = str(outcome.run_dir)
    path, count = capture(
        args.inventory, args.node, Path(args.output), Path(run), allow_lookups=args.allow_lookups
    )
    print(f"{path}: golden {args.node}, {count} facts (from {run})")
    return ExitCode.OK


def _cmd_resume_nodes(args: argparse.Namespace) -> int:
    from rackops.scheduler.actions import apply, load_report, resume_commands
    from rackops.scheduler.slurm import slurm_env
    from rackops.validate.report import scheduler_of_run
    from rackops.validate.rundir import RunDir

    path = Path(args.run_dir)
    report = load_report(path)
    run = RunDir(path)
    scheduler = scheduler_of_run(run)
    try:
        recorded = run.read_json("run.json").get("slurm_conf")
    except (OSError, ValueError, AttributeError):
        recorded = None
    # which slurm.conf the client commands read is the operator's choice, never the run
    # directory's: a slurm.conf names plugins, and a plugin is code
    env = slurm_env(args.slurm_conf)
    if scheduler == "slurm" and recorded and recorded != env.get("SLURM_CONF"):
        print(
            f"note: the run used slurm.conf {printable(str(recorded))!r}; pass --slurm-conf "
            "with it if these commands should go to that cluster"
        )
    cmds, notes = resume_commands(report, scheduler, env)
    for note in notes:
        print(note)
    if args.dry_run or not cmds:
        for cmd in cmds:
            print("  " + " ".join(cmd))
        print(f"{len(cmds)} command(s){' (not run: --dry-run)' if args.dry_run else ''}")
        return ExitCode.OK
    failed = 0
    for done in apply(cmds, env):
        print(f"{' '.join(done.argv)}: {'ok' if done.ok else done.output}")
        failed += not done.ok
    return ExitCode.ERRORS if failed else ExitCode.OK


def _cmd_node_check(args: argparse.Namespace) -> int:
    from rackops.validate.nodecheck import only_one

    with only_one() as alone:
        if not alone:
            print(
                "rackops: node-check is already running on this node; this one steps aside",
                file=sys.stderr,
            )
            return ExitCode.OK
        return _node_check_alone(args)


def _node_check_alone(args: argparse.Namespace) -> int:
    from rackops.scheduler.slurm import slurm_env
    from rackops.validate.nodecheck import node_check, slurm_self_action

    health = node_check(args.inventory, args.suite, args.node, args.run_dir, replay=args.replay)
    if health.not_captured:
        print(
            f"rackops: replayed from {args.replay}; not captured, not judged: "
            + ", ".join(health.not_captured)
            + " (keep every output on the node with node-check --run-dir, then replay that)",
            file=sys.stderr,
        )
    line = health.line()
    if line:
        print(line)
    elif args.verbose:
        print(f"OK: rackops: {health.node} healthy ({health.seconds:.1f} s)")
    if args.drain:
        done = slurm_self_action(health, slurm_env(None))
        if args.verbose or not done.startswith(("nothing", "already", "drained", "resumed")):
            print(f"rackops: slurm: {done}", file=sys.stderr)
    return 1 if line else 0


def _cmd_report(args: argparse.Namespace) -> int:
    from rackops.validate.report import summary, write_reports
    from rackops.validate.rundir import RunDir

    path = Path(args.run_dir)
    for run in (path, *([Path(args.compare)] if args.compare else [])):
        if not (run / "results.jsonl").exists():
            raise RackopsError(f"{run}: not a run directory (no results.jsonl)")
    if args.compare:
        from rackops.validate import compare

        report, verdict, cmp = write_reports(RunDir(path), RunDir(Path(args.compare)))
        assert cmp is not None
        print(json_text(cmp, indent=2) if args.format == "json" else compare.summary(cmp))
        # worse beyond noise is a warning even where the new run is accepted
        return max(verdict.exit_code, ExitCode.WARNINGS if cmp["regressed"] else 0)
    report, verdict, _ = write_reports(RunDir(path))
    print(json_text(report, indent=2) if args.format == "json" else summary(report))
    return verdict.exit_code


def _cmd_render(args: argparse.Namespace) -> int:
    from rackops.diagnostics import Level
    from rackops.inventory import load_inventory
    from rackops.render import render_all

    cluster = load_inventory(args.inventory, allow_lookups=args.allow_lookups).raise_for_errors()
    out = Path(args.output or f"build/{cluster.name}")
    if args.switch and cluster.switch(args.switch) is None:
        raise InputError(
            f"--switch {args.switch}: no such switch in {args.inventory} "
            f"(known: {', '.join(s.name for s in cluster.switches)})"
        )
    try:
        written, problems = render_all(cluster, args.inventory, out, args.switch)
    except OSError as exc:
        raise InputError(
            f"--output {out}: cannot write {exc.filename or out} ({exc.strerror}); give a "
            "directory rackops may create or fill"
        ) from exc
    for d in problems:
        print(d.human())
    for d in render_notes_all(cluster, args.switch):
        print(d.human(), file=sys.stderr)
    errors = [d for d in problems if d.level is Level.ERROR]
    print(
        f"rendered {len(written)} files into {out}; {len(errors)} problem(s) and "
        f"{len(problems) - len(errors)} warning(s) on read-back",
        file=sys.stderr,
    )
    if errors:
        return ExitCode.ERRORS
    if args.diff:
        return _render_diff(cluster, args, out)
    return ExitCode.OK


def render_notes_all(cluster: Cluster, only: str | None) -> list[Diagnostic]:
    from rackops.render import render_notes

    return [
        d for s in cluster.switches if only in (None, s.name) for d in render_notes(cluster, s.name)
    ]


def _render_diff(cluster: Cluster, args: argparse.Namespace, out: Path) -> int:
    """--diff: per switch, the minimal change from its saved running config to the design,
    written beside the rendered files (changes.txt, and what a push applies)."""
    from rackops.render import RUNNING_SUFFIX, render_switch, switch_changes
    from rackops.render.verify import READERS, diff_ports

    src = Path(args.diff)
    if src.is_file() and not args.switch:
        raise InputError(f"--diff {src}: a single saved config needs --switch NAME")
    changed = 0
    seen = 0
    for sw in cluster.switches:
        if (args.switch and sw.name != args.switch) or sw.os not in RUNNING_SUFFIX:
            continue
        path = src if src.is_file() else src / f"{sw.name}{RUNNING_SUFFIX[sw.os]}"
        if not path.is_file():
            print(f"{sw.name}: no saved running config at {path}; not compared", file=sys.stderr)
            continue
        seen += 1
        text = _read_input(str(path))
        files = render_switch(cluster, sw.name, args.inventory)
        try:
            lines, push = switch_changes(cluster, sw.name, files, text)
            effect = diff_ports(READERS[sw.os](_primary(files)), READERS[sw.os](text))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"{path}: cannot read as a {sw.os} running config: {exc}") from exc
        from rackops.outdir import write_under

        folder = Path("switches", sw.name)  # under -o, through no planted link
        write_under(out, folder / "changes.txt", "".join(f"{x}\n" for x in lines))
        for fname, body in push.items():
            write_under(out, folder / fname, body)
        for line in lines:
            print(f"{sw.name} {line}")
        for line in effect:
            print(f"{sw.name} effect {line}")
        print(f"{sw.name}: {len(lines)} change(s) a push would make", file=sys.stderr)
        changed += bool(lines)
    if seen == 0:
        raise InputError(f"--diff {src}: no saved running config for any switch rendered")
    return ExitCode.WARNINGS if changed else ExitCode.OK


def _primary(files: dict[str, str]) -> str:
    for name in ("config_db.json", "tables.json", "startup.yaml", "running-config"):
        if name in files:
            return files[name]
    raise KeyError("no primary config file rendered")


def _cmd_provision(args: argparse.Namespace) -> int:
    import os
    import subprocess

    from rackops import data

    playbook = (data.path("playbooks") / "provision.yml").resolve()
    ansible = Path(sys.executable).with_name("ansible-playbook")
    # the roles shipped with rackops, after any the user configured (a wheel has no ansible.cfg)
    roles = os.pathsep.join(
        p
        for p in (os.environ.get("ANSIBLE_ROLES_PATH", ""), str(data.path("roles").resolve()))
        if p
    )
    cmd = [
        str(ansible) if ansible.exists() else "ansible-playbook",
        "-i",
        args.inventory,
        str(playbook),
        *(["--check", "--diff"] if args.check else []),
        # argparse keeps the "--" that ends rackops' own options: ansible-playbook would take
        # every option after it for a playbook's name
        *args.ansible_args[args.ansible_args[:1] == ["--"] :],
    ]
    print("rackops: " + " ".join(cmd), file=sys.stderr)
    import rackops.inventory.loader  # noqa: F401  (sets ANSIBLE_INVENTORY_IGNORE_REGEX: profiles/, suites/)

    env = dict(os.environ, ANSIBLE_ROLES_PATH=roles, ANSIBLE_COLLECTIONS_PATH=_collections_path())
    return subprocess.run(cmd, check=False, env=env).returncode


def _collections_path() -> str:
    """Where Ansible finds collections (the user's setting, or ansible.cfg's), then the
    roles' own filter (rackops.rackops.host_design), shipped in the rackops data."""
    import os

    from ansible import constants

    from rackops import data

    ours = str(data.path("ansible_collections").resolve().parent)
    theirs = [str(p) for p in constants.COLLECTIONS_PATHS]
    return os.pathsep.join([*theirs, ours] if ours not in theirs else theirs)


def _allow_lookups(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-lookups",
        action="store_true",
        help="run lookup()/query() in the inventory's templates (off: they can run commands, "
        "and checking a design never should)",
    )


def _add_lint(sub: Any) -> None:

    lint = sub.add_parser(
        "lint",
        help="check the rack design (inventory, cabling, QoS, MTU, versions) offline",
        description="Check the design of a rack before anything touches a machine. "
        "Exit 0 clean, 1 warnings, 2 errors, 64 usage error or unreadable inventory.",
    )
    lint.add_argument("-i", "--inventory", help="inventory file or directory")
    lint.add_argument("--format", choices=("human", "json"), default="human")
    lint.add_argument("--list-rules", action="store_true", help="print every rule code and stop")
    _allow_lookups(lint)
    lint.set_defaults(func=_cmd_lint)


def _add_parse(sub: Any) -> None:
    from rackops.tools import parsed_tools

    tools = parsed_tools()
    parse = sub.add_parser(
        "parse",
        help="parse one tool's captured output and print its structure",
        description="Parse a captured output of an acceptance tool (file, or - for stdin). "
        "Exit 0 parsed, 3 unreadable input, 64 usage error. See docs/parsers.md.",
    )
    parse.add_argument("tool", choices=tools, metavar="TOOL", help="one of: " + " ".join(tools))
    parse.add_argument("file", nargs="?", default="-", metavar="FILE|-")
    parse.add_argument("--format", choices=("text", "json"), default="text")
    parse.add_argument(
        "--fields",
        help="nvidia-smi-query without a header: the --query-gpu field list, comma separated",
    )
    parse.add_argument(
        "-i",
        "--inventory",
        help="bound a fabric-wide output (ibdiagnet, iblinkinfo, ibnetdiscover) by this "
        "design's size instead of one rack's (16 MB, 65,536 rows)",
    )
    parse.set_defaults(func=_cmd_parse)


def _add_check(sub: Any) -> None:
    from rackops.tools import parsed_tools

    tools = parsed_tools()
    check = sub.add_parser(
        "check",
        help="evaluate one captured output against a hardware profile and print findings",
        description="Evaluate a captured output offline. Exit 0 OK, 1 warnings, 2 failures, "
        "3 could not decide (unreadable output, tool did not run), 64 usage error.",
    )
    check.add_argument("tool", choices=tools, metavar="TOOL")
    check.add_argument("file", nargs="?", default="-", metavar="FILE|-")
    check.add_argument("--profile", help="hardware profile (default: the node's, with -i)")
    check.add_argument("-i", "--inventory", help="inventory, for the cabling map and design")
    check.add_argument("--node", help="node the output came from (names the subject)")
    check.add_argument("--suite", help="suite whose pinned sizes and DCGM level apply")
    check.add_argument("--format", choices=("text", "json"), default="text")
    check.set_defaults(func=_cmd_check)


def _add_switch_counters(sub: Any) -> None:
    def run(args: argparse.Namespace) -> int:
        from rackops.validate.switches import run_cli

        return run_cli(args)

    sc = sub.add_parser(
        "switch-counters",
        help="judge the switches' own port counters, read before and after a run",
        description="Read each switch's saved counter outputs (DIR/<switch>/<file>: SONiC "
        "show interfaces/pfc/queue counters, NVUE nv show interface <if> counters, EOS "
        "| json), judge what grew on every cabled port as the host ports are judged, and "
        "name the port and its cable (a host's HCA, or the far end of an inter-switch "
        "link). Exit 0 OK, 1 warnings, 2 failures, 3 a read could not be used, 64 usage.",
    )
    sc.add_argument("-i", "--inventory", required=True, help="the rack's inventory")
    sc.add_argument("--before", required=True, metavar="DIR", help="the read before the run")
    sc.add_argument("--after", required=True, metavar="DIR", help="the read after the run")
    sc.add_argument(
        "--interval-s",
        type=float,
        help="seconds between the reads (default: from the files' times)",
    )
    sc.add_argument("--format", choices=("text", "json"), default="text")
    sc.add_argument("-v", "--verbose", action="store_true", help="list the OK ports too")
    sc.set_defaults(func=run)


def _add_lab(sub: Any) -> None:
    labp = sub.add_parser(
        "lab",
        help="a rack of real SSH targets in containers with simulated GPUs and HCAs",
        description="Bring a lab rack up, show it, or tear it down (leaving nothing behind).",
    )
    labp.add_argument(
        "action",
        choices=("up", "down", "status", "repo", "box"),
        help="repo: only build the stand-in apt repository; box: build the VM image's "
        "Vagrant box (vagrant-libvirt) and add it to Vagrant as rackops/bookworm",
    )
    labp.add_argument("--dest", help="repo: where to build it (default build/lab-repo)")
    labp.add_argument("--nodes", type=int, default=4, help="number of targets (default 4)")
    labp.add_argument(
        "--racks",
        type=int,
        default=1,
        help="up: the nodes in N racks, each rack its own leaves, one spine per rail joining "
        "them (traffic between racks crosses two inter-switch links); default 1",
    )
    labp.add_argument("--scenario", help="YAML file: hardware per node and injected faults")
    labp.add_argument(
        "--engine",
        choices=("podman", "docker", "nspawn", "vm"),
        default="podman",
        help="nspawn: systemd-nspawn targets, systemd as PID 1, per-target net.* sysctls; "
        "vm: QEMU VMs on their own kernel (1 to 4; NUMA, real IRQs, Soft-RoCE rails)",
    )
    labp.add_argument(
        "--systemd",
        action="store_true",
        help="systemd as PID 1 in every target (units, per-target net.* sysctls)",
    )
    labp.add_argument(
        "--release",
        choices=("bookworm", "trixie"),
        default="bookworm",
        help="Debian release of the targets",
    )
    labp.add_argument(
        "--inventory",
        default="inventories/lab",
        help="where to write the lab inventory (default inventories/lab)",
    )
    labp.add_argument(
        "--workdir", help="lab state, keys, image storage (default ./.lab or $RACKOPS_LAB_DIR)"
    )
    labp.add_argument(
        "--port-base",
        type=int,
        default=2300,
        help="target N answers SSH on 127.0.0.1:<port-base + N>",
    )
    labp.add_argument(
        "--slurm",
        action="store_true",
        help="up: a real Slurm (slurmctld here, slurmd in every target, partition gpu); "
        "needs --engine nspawn",
    )
    labp.add_argument(
        "--slurm-health-interval",
        type=int,
        default=0,
        metavar="S",
        help="up --slurm: run `rackops node-check --drain` as Slurm's HealthCheckProgram every "
        "S seconds (default 0: never)",
    )
    labp.add_argument("--purge", action="store_true", help="down: also remove the images")
    labp.set_defaults(func=_cmd_lab)


def _add_validate(sub: Any) -> None:
    val = sub.add_parser(
        "validate",
        help="run the acceptance suite across the rack and name what to fix",
        description="Plan, run (per-node checks, RDMA pair rounds, multi-node NCCL), localise "
        "and report. Exit 0 accepted, 1 accepted with warnings, 2 rejected, 3 could not decide, "
        "64 usage or configuration error.",
    )
    val.add_argument("-i", "--inventory", required=True)
    _allow_lookups(val)
    val.add_argument("--suite", default="acceptance")
    val.add_argument("--dry-run", action="store_true", help="print the plan and its estimate")
    val.add_argument("--run-dir", help="where to write the run (default build/runs/...)")
    val.add_argument("--resume", metavar="RUN_DIR", help="continue an interrupted run")
    val.add_argument("--pairing", choices=("full", "sample", "suspects"))
    val.add_argument("--suspects", help="suspects mode: comma-separated nodes to re-test")
    val.add_argument(
        "--limit",
        help="validate only these nodes: comma-separated names or shell-style patterns, quoted"
        " (e.g. 'node0[1-4]'); a resumed run keeps its own",
    )
    val.add_argument(
        "--accept-new-host-keys",
        action="store_true",
        help="trust host keys not in known_hosts (labs; never for production)",
    )
    val.add_argument("--concurrency", type=int, default=32)
    val.add_argument(
        "--apply-actions",
        action="store_true",
        help="drain (Slurm) or cordon and taint (Kubernetes, rackops_scheduler) the rejected "
        "nodes; printed only, by default",
    )
    val.add_argument(
        "--launcher",
        choices=("ssh", "slurm"),
        default="ssh",
        help="how commands reach the nodes: the controller's own SSH sessions (default), or "
        "srun steps in a Slurm allocation (inside salloc/sbatch, or one made with --partition)",
    )
    val.add_argument("--partition", help="slurm: allocate the nodes in this partition")
    val.add_argument("--reservation", help="slurm: allocate inside this reservation")
    val.add_argument("--exclusive", action="store_true", help="slurm: allocate whole nodes")
    val.set_defaults(func=_cmd_validate)


def _add_profile(sub: Any) -> None:
    prof = sub.add_parser(
        "profile",
        help="hardware profiles: capture a golden node's facts",
        description="Profiles say what a healthy node of one SKU is. `capture` reads a node "
        "known to be good and writes its profile with every fact the fleet must share.",
    )
    psub = prof.add_subparsers(dest="profile_command", metavar="ACTION", parser_class=_Parser)
    cap = psub.add_parser(
        "capture",
        help="write a golden profile from an accepted node",
        description="Read NODE's facts (versions, firmware, PCIe links, ACS, mlxconfig, GPU "
        "settings) from a run (--run) or from a run of the suite on NODE alone, made now; "
        "refuse a node with any FAIL or ERROR; write its profile with a golden section. "
        "Write it to <inventory>/profiles/<its profile>.yaml to hold every node of that "
        "profile to it. Exit 0 written, 2 the node is not accepted, 64 usage.",
    )
    cap.add_argument("-i", "--inventory", required=True)
    _allow_lookups(cap)
    cap.add_argument("--from", dest="node", required=True, metavar="NODE")
    cap.add_argument("-o", "--output", required=True, metavar="FILE", help="NAME.yaml")
    cap.add_argument("--run", metavar="RUN_DIR", help="read this run instead of running now")
    cap.add_argument("--suite", default="acceptance", help="the suite run on NODE (no --run)")
    cap.add_argument("--run-dir", help="where that run goes (default build/runs/...)")
    cap.add_argument("--launcher", choices=("ssh", "slurm"), default="ssh")
    cap.add_argument(
        "--accept-new-host-keys",
        action="store_true",
        help="trust host keys not in known_hosts (labs; never for production)",
    )
    cap.set_defaults(func=_cmd_profile_capture)
    prof.set_defaults(func=lambda args: (prof.print_help(), ExitCode.USAGE)[1])


def _add_resume_nodes(sub: Any) -> None:
    res = sub.add_parser(
        "resume-nodes",
        help="give back the nodes a later run accepted (undrain, uncordon what rackops did)",
        description="Reads RUN_DIR's report: every node it accepted that rackops drained "
        "(Slurm reason 'rackops: …') is resumed; on Kubernetes the rackops taint is removed "
        "and the node uncordoned. A node drained for any other reason is left as it is.",
    )
    res.add_argument("run_dir", metavar="RUN_DIR")
    res.add_argument("--dry-run", action="store_true", help="print the commands only")
    res.add_argument(
        "--slurm-conf",
        metavar="PATH",
        help="the slurm.conf Slurm's commands read (default: $SLURM_CONF, else Slurm's own); "
        "never taken from the run directory",
    )
    res.set_defaults(func=_cmd_resume_nodes)


def _add_node_check(sub: Any) -> None:
    nc = sub.add_parser(
        "node-check",
        help="this node checks itself (Slurm HealthCheckProgram, prolog/epilog)",
        description="Runs the suite's per-node checks here, with no controller. Prints nothing "
        "and exits 0 when healthy; prints 'ERROR: rackops: Health check failed: <reason>' "
        "and exits 1 when not. --drain: drain this node in Slurm with that reason, and "
        "resume it once it passes if rackops drained it.",
    )
    nc.add_argument("-i", "--inventory", required=True)
    nc.add_argument("--suite", default="quick")
    nc.add_argument("--node", help="this node's inventory name (default: the short hostname)")
    nc.add_argument("--run-dir", help="keep the raw outputs here (default: discarded)")
    nc.add_argument(
        "--replay",
        metavar="DIR",
        help="answer the commands from this node's captured outputs instead of running them: "
        "a run directory (--run-dir of an earlier node-check) or NAME.cmd/.out/.err/.rc files; "
        "a check with no capture is listed, not judged",
    )
    nc.add_argument("--drain", action="store_true", help="drain/resume this node in Slurm")
    nc.add_argument("-v", "--verbose", action="store_true", help="say so when healthy too")
    nc.set_defaults(func=_cmd_node_check)


def _add_render(sub: Any) -> None:
    ren = sub.add_parser(
        "render",
        help="render switch QoS/MTU configs and the host side of the same intent",
        description="Render every switch's config (SONiC config_db.json, NVUE startup YAML and "
        "nv set commands, EOS CLI, OpenSM partitions for InfiniBand) and each host's QoS "
        "settings, read each config back and check it. Exit 0 consistent, 2 a rendered config "
        "breaks a rule (named by switch and port), 64 the design cannot be rendered.",
    )
    ren.add_argument("-i", "--inventory", required=True)
    _allow_lookups(ren)
    ren.add_argument("-o", "--output", help="directory (default build/<rack>)")
    ren.add_argument("--switch", help="render only this switch")
    ren.add_argument(
        "--diff",
        metavar="RUNNING",
        help="compare with configs saved from the switches: a directory of <switch>.json "
        "(SONiC `show runningconfiguration all`), <switch>.yaml (`nv config show -o yaml`), "
        "<switch>.cfg (EOS `show running-config`), or one file with --switch. Prints and "
        "writes the minimal change (changes.txt; SONiC config-patch.json for `config "
        "apply-patch`, NVUE nv-changes.txt); exit 1 if a push would change anything",
    )
    ren.set_defaults(func=_cmd_render)


def _add_provision(sub: Any) -> None:
    prov = sub.add_parser(
        "provision",
        help="run playbooks/provision.yml (OFED, driver stack, GPU Operator prerequisites)",
        description="A thin wrapper over ansible-playbook: same inventory, same exit code.",
    )
    prov.add_argument("-i", "--inventory", required=True)
    prov.add_argument("--check", action="store_true", help="--check --diff: change nothing")
    prov.add_argument(
        "ansible_args", nargs=argparse.REMAINDER, help="anything after -- goes to ansible-playbook"
    )
    prov.set_defaults(func=_cmd_provision)


def _add_report(sub: Any) -> None:
    rep = sub.add_parser(
        "report",
        help="regenerate the reports of a run directory, or compare it with an earlier run",
        description="Writes RUN_DIR's report.html, report.json, junit.xml and metrics.prom "
        "from its results. With --compare OLD_RUN (rackops report --compare OLD_RUN RUN_DIR): "
        "what RUN_DIR fixed, what is new and what got worse beyond noise since OLD_RUN, "
        "printed, in RUN_DIR/compare.json and in a section of RUN_DIR/report.html. Exit as "
        "the run's verdict; with --compare, at least 1 where something regressed.",
    )
    rep.add_argument("run_dir")
    rep.add_argument("--compare", metavar="OLD_RUN", help="an earlier run of the same rack")
    rep.add_argument("--format", choices=("text", "json"), default="text")
    rep.set_defaults(func=_cmd_report)


# the subcommands, in the order --help lists them
COMMANDS: tuple[Callable[[Any], None], ...] = (
    _add_lint,
    _add_parse,
    _add_check,
    _add_switch_counters,
    _add_lab,
    _add_validate,
    _add_profile,
    _add_resume_nodes,
    _add_node_check,
    _add_render,
    _add_provision,
    _add_report,
)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rackops",
        description="Provision, render and validate a rack of GPU servers from one inventory.",
    )
    parser.add_argument("--version", action="version", version=f"rackops {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return ExitCode.USAGE
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalSafe(out), TerminalSafe(err)
    try:
        return _run(func, args)
    finally:
        sys.stdout, sys.stderr = out, err


def _run(func: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return func(args)
    except RackopsError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"rackops: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("rackops: interrupted", file=sys.stderr)
        return 130
