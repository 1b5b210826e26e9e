"""The switches' counters, read before and after a run and judged per cabled port
(:mod:`rackops.checks.switchports`): from saved outputs (``rackops switch-counters``).

A read of one switch is a directory of its outputs, ``<dir>/<switch>/<file>``: any of the
NOS's counter commands, each file one command's output as the switch printed it. SONiC and
EOS print every port in one output; NVUE prints one interface, so an NVUE file is named for
its interface first (``swp5.counters.txt``, ``swp5.roce.json``). A leaf's port views in the
after directory — ``lldp.*`` and ``status.*`` (SONiC ``show lldp table`` / ``show interfaces
status``, EOS's ``| json``), ``interface.*`` (NVUE ``nv show interface``) — judge its uplinks
(neighbour, speed) as a run does. The directories are
untrusted: a switch name not in the inventory, a file name no port has, a symlink, a file over
the parsers' size limit or more files than a switch has ports is refused with its path.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from rackops.checks.phy import PortReport, PortSample
from rackops.checks.switchports import judge_switch, judge_uplinks, port_views, samples
from rackops.errors import InputError, RackopsError
from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster, Switch
from rackops.parsers._common import MAX_INPUT_CHARS, ParseError
from rackops.parsers.switch_ports import SwitchPorts
from rackops.profiles import PhyThresholds
from rackops.tools import parse
from rackops.validate.rundir import read_regular

TOOL_OF = {"sonic": "sonic-counters", "cumulus": "nvue-counters", "eos": "eos-counters"}
MAX_FILES = 4096
_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


@dataclass
class SwitchRead:
    """One switch's read: its ports' samples, what could not be read, when it was taken."""

    ports: dict[str, PortSample] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    mtimes: list[float] = field(default_factory=list)
    views: list[SwitchPorts] = field(default_factory=list)  # lldp / status / interface files


# a saved read's port-view files, by stem: what the switch says is at each port
VIEW_STEMS = {"sonic": ("lldp", "status"), "eos": ("lldp", "status"), "cumulus": ("interface",)}


def _nvue_port(sw: Switch, name: str) -> str | None:
    port = name.split(".", 1)[0]
    return port if port in sw.ports else None


def parse_output(sw: Switch, text: str) -> tuple[Any, str | None]:
    """One output of the switch's NOS, parsed; or None and why it cannot be used."""
    try:
        parsed = parse(TOOL_OF[sw.os], text)
    except ParseError as exc:
        return None, str(exc)
    if not getattr(parsed, "complete", False):
        return None, "the output is cut; its counters are not used"
    return parsed, None


def read_switch(sw: Switch, d: Path, roce_priority: int) -> SwitchRead:
    read = SwitchRead()
    if sw.os not in TOOL_OF:
        read.problems.append(f"{sw.name}: no counter reader for {sw.os} (SONiC, Cumulus, EOS)")
        return read
    files = sorted(p for p in d.iterdir()) if d.is_dir() else []
    if len(files) > MAX_FILES:
        raise InputError(f"{d}: {len(files)} files, more than {MAX_FILES}: not a switch's read")
    outputs: list[tuple[str, Any]] = []
    for f in files:
        if not _FILE.match(f.name):
            raise InputError(f"{f}: not a file name rackops reads (letters, digits, . _ : -)")
        if f.name.split(".", 1)[0] in VIEW_STEMS.get(sw.os, ()):
            _read_view(sw, d, f, read)
            continue
        port = ""
        if sw.os == "cumulus" and (port := _nvue_port(sw, f.name) or "") == "":
            read.problems.append(
                f"{f}: NVUE prints one interface: name the file for one of "
                f"{sw.name}'s ports first (swp5.counters.txt)"
            )
            continue
        try:
            text = read_regular(d, f, MAX_INPUT_CHARS).decode("utf-8", errors="replace")
        except (RackopsError, OSError) as exc:  # a damaged read is a problem
            read.problems.append(f"{f}: {exc}")
            continue
        parsed, why = parse_output(sw, text)
        if why is not None:
            read.problems.append(f"{f}: {why}")
            continue
        outputs.append((port, parsed))
        read.mtimes.append(f.lstat().st_mtime)
    if not files:
        read.problems.append(f"{d}: no saved output for {sw.name}")
    read.ports = samples(sw, outputs, roce_priority)
    return read


def _read_view(sw: Switch, d: Path, f: Path, read: SwitchRead) -> None:
    try:
        text = read_regular(d, f, MAX_INPUT_CHARS).decode("utf-8", errors="replace")
        got = parse(PORTS_TOOL_OF[sw.os], text)
    except (RackopsError, OSError) as exc:  # a damaged or unreadable view is a problem
        read.problems.append(f"{f}: {exc}")
        return
    if not isinstance(got, SwitchPorts) or not got.complete:
        read.problems.append(f"{f}: the output is cut; the uplinks are not judged from it")
        return
    read.views.append(got)


def judge_reads(
    cluster: Cluster,
    before: Path,
    after: Path,
    phy: PhyThresholds,
    interval_s: float | None = None,
) -> tuple[list[Finding], dict[tuple[str, str], PortReport]]:
    """Every switch of the inventory with a read in both directories: its cabled ports."""
    for root in (before, after):
        if not root.is_dir():
            raise InputError(f"{root}: not a directory of switch reads (<dir>/<switch>/<file>)")
        entries = sorted(itertools.islice(root.iterdir(), MAX_FILES + 1))
        if len(entries) > MAX_FILES:
            raise InputError(f"{root}: more than {MAX_FILES} entries: not a directory of reads")
        linked = next((p for p in entries if p.is_symlink()), None)
        if linked is not None:  # the run-directory rule: a read is its own files, never a link
            raise InputError(f"{linked}: is a symlink; copy the switch's read into {root}")
        unknown = [p.name for p in entries if cluster.switch(p.name) is None]
        if unknown:
            known = ", ".join(s.name for s in cluster.switches)
            raise InputError(f"{root}: {unknown[0]!r} is not a switch of the inventory ({known})")
    prio = cluster.fabric.roce.priority if cluster.fabric.roce else 0
    findings: list[Finding] = []
    reports: dict[tuple[str, str], PortReport] = {}
    for sw in cluster.switches:
        if not (before / sw.name).exists() and not (after / sw.name).exists():
            continue
        b, a = read_switch(sw, before / sw.name, prio), read_switch(sw, after / sw.name, prio)
        for why in b.problems + a.problems:
            findings.append(Finding("SWP-002", Status.ERROR, Subject(switch=sw.name), why))
        dt = interval_s
        if dt is None:
            dt = median(a.mtimes) - median(b.mtimes) if a.mtimes and b.mtimes else 0.0
        found, rep = judge_switch(cluster, sw, b.ports, a.ports, phy, max(dt, 0.0))
        findings += found
        if a.views and sw.uplinks and not a.problems:  # the after read says what is there
            findings += judge_uplinks(cluster, sw, port_views(a.views))
        reports.update({(sw.name, p): r for p, r in rep.items()})
    if not findings:
        raise InputError(f"no switch of the inventory has a read in both {before} and {after}")
    return findings, reports


def run_cli(args: Any) -> int:
    """``rackops switch-counters``: judge two saved reads; exit as ``rackops check`` does."""
    import json

    from rackops.findings import exit_code, worst
    from rackops.inventory import load_inventory

    result = load_inventory(args.inventory)
    cluster = result.raise_for_errors()
    loaded = result.profiles.get(cluster.nodes[0].profile) if cluster.nodes else None
    phy = loaded.profile.phy if loaded is not None else PhyThresholds()
    findings, reports = judge_reads(
        cluster, Path(args.before), Path(args.after), phy, args.interval_s
    )
    verdict = worst(findings)
    if args.format == "json":
        ports = [
            {"switch": sw, "port": port, "delta": r.delta, "absolute": r.absolute}
            for (sw, port), r in sorted(reports.items())
        ]
        doc = {"verdict": verdict.value, "findings": [f.as_dict() for f in findings]}
        print(json.dumps(doc | {"ports": ports}, indent=2))
    else:
        for f in findings:
            if f.status is not Status.OK or args.verbose:
                print(f.human())
        print(f"verdict: {verdict.value} ({len(findings)} findings)")
    return exit_code(verdict)


# ------------------------------------------------------------------ read from the switches
# What one read of a switch runs, per NOS: (file name, command line). NVUE prints one
# interface per command, so its commands are per design port.
COMMANDS: dict[str, tuple[tuple[str, str], ...]] = {
    "sonic": (
        ("interfaces", "show interfaces counters"),
        ("fec", "show interfaces counters fec-stats"),
        ("pfc", "show pfc counters"),
        ("wred", "show queue wredcounters"),
    ),
    "eos": (
        ("errors", "show interfaces counters errors | json"),
        ("discards", "show interfaces counters discards | json"),
        ("pfc", "show priority-flow-control counters | json"),
        ("ecn", "show qos interfaces ecn counters queue | json"),
    ),
}
READ_TIMEOUT_S = 60.0
# What the switch says is at each port (LLDP neighbour, speed, state), read once, after the
# pair rounds, to judge its uplinks against the design: (file name, command line)
PORT_COMMANDS: dict[str, tuple[tuple[str, str], ...]] = {
    "sonic": (("lldp", "show lldp table"), ("status", "show interfaces status")),
    "cumulus": (("interface", "nv show interface"),),
    "eos": (
        ("lldp", "show lldp neighbors | json"),
        ("status", "show interfaces status | json"),
    ),
}
PORTS_TOOL_OF = {"sonic": "sonic-ports", "cumulus": "nvue-ports", "eos": "eos-ports"}


def commands(sw: Switch) -> list[tuple[str, str]]:
    if sw.os == "cumulus":
        return [
            (f"{p}.{what}", f"nv show interface {p} {cmd}")
            for p in sw.ports
            for what, cmd in (("counters", "counters"), ("roce", "qos roce counters"))
        ]
    return list(COMMANDS.get(sw.os, ()))


def switch_targets(result: Any, cluster: Cluster) -> dict[str, Any]:
    """The switches the run can read: those the inventory gives an SSH connection (not
    ``ansible_connection: local``, a render-only entry) and whose NOS rackops reads."""
    from rackops.validate.executor import Target

    out = {}
    for sw in cluster.switches:
        v = result.hostvars[sw.name].values
        if v.get("ansible_connection", "ssh") in ("local",) or sw.os not in TOOL_OF:
            continue
        out[sw.name] = Target(
            sw.name,
            sw.address,
            sw.ssh_port,
            user=v.get("ansible_user"),
            key_file=v.get("ansible_ssh_private_key_file"),
        )
    return out
