"""Judge a fleet's facts: against the golden node, by majority without one, and against
the profile's version floors. Every message names node, device, fact, value and the value
it should have, with where that value came from."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

from rackops.findings import Finding, Status, Subject
from rackops.fleet.facts import KINDS, Fact, kind_of
from rackops.profiles import Floor, Golden

Table = Mapping[str, Sequence[Fact]]  # node → its facts


def subject(node: str | None, device: str, where: str = "") -> Subject:
    gpu = int(device[3:]) if device.startswith("gpu") and device[3:].isdigit() else None
    hca = device if device not in ("node",) and gpu is None else None
    return Subject(node=node, gpu=gpu, hca=hca, bus_id=where or None)


def _what(f: Fact) -> str:
    kind = kind_of(f.name)
    if f.name.startswith("mlxconfig."):
        return f"mlxconfig {f.name.split('.', 1)[1]}"
    if f.name.startswith("acs."):
        return f"ACS on bridge {f.where or f.name}"
    return kind.label


def _fix(f: Fact, device: str) -> str:
    fix = kind_of(f.name).fix
    if f.name.startswith("mlxconfig."):
        fix = fix.replace("DEV", device).replace("KEY", f.name.split(".", 1)[1])
    return fix.replace("GPU", device[3:]) if device.startswith("gpu") else fix


def _code(f: Fact) -> str:
    return "FLEET-" + re.sub(r"[^A-Z0-9]+", "-", f.name.split(".", 1)[0].upper()).strip("-")


def _who(device: str) -> str:
    return "" if device == "node" else f"{device}: "


def against_golden(node: str, facts: Sequence[Fact], golden: Golden) -> list[Finding]:
    """Each golden fact this node has with another value; a golden device it lacks is left
    to the inventory checks (a missing GPU or HCA is named there)."""
    out: list[Finding] = []
    have = {f.key: f for f in facts}
    read = {(f.device, f.source) for f in facts}
    for device, named in sorted(golden.facts.items()):
        for name, gf in sorted(named.items()):
            f = have.get((device, name))
            if f is None and (device, gf.source) in read:
                out.append(
                    _missing(node, device, name, gf.source, f"the golden node ({golden.node})")
                )
                continue
            if f is None or f.value == gf.value:
                continue
            out.append(_differs(node, f, gf.value, f", golden {gf.value} ({golden.node})"))
    return out


def _differs(node: str, f: Fact, reference: str, against: str) -> Finding:
    """``f`` on ``node`` is not ``reference`` (the golden node's, or the rack's)."""
    return Finding(
        _code(f),
        f.status(),
        subject(node, f.device, f.where),
        f"{_who(f.device)}{_what(f)} {f.value}{against}; read by {f.source}",
        remediation=_fix(f, f.device),
        observed=f.value,
        expected=reference,
        action=kind_of(f.name).action,
    )


def _missing(node: str, device: str, name: str, source: str, who: str) -> Finding:
    """A fact the command printed for the reference but not here, though it ran and printed
    this device's others: the output was cut, or this firmware hides the setting."""
    f = Fact(device, name, "", source)
    return Finding(
        "FLEET-MISSING",
        Status.WARN,
        subject(node, device),
        f"{_who(device)}{_what(f)} not in {source}, though {who} has it: the output was cut, "
        "or this firmware/driver does not show it",
        remediation=f"run {source} on the node and compare",
    )


def _nodes(names: Iterable[str], limit: int = 6) -> str:
    s = sorted(names)
    return ", ".join(s) if len(s) <= limit else ", ".join(s[:limit]) + f" and {len(s) - limit} more"


def by_majority(table: Table) -> list[Finding]:
    """Without a golden node: each fact compared across the nodes that have it. Nodes whose
    value differs from the others are named with the count while they are a few (at most a
    quarter, and one of three); more than that and the rack is split: one rack-wide
    finding listing the groups, never one per node."""
    values: dict[tuple[str, str], dict[str, Fact]] = defaultdict(dict)
    read: dict[tuple[str, str], set[str]] = defaultdict(set)  # (device, command) → nodes
    for node, facts in table.items():
        for f in facts:
            values[f.key][node] = f
            read[(f.device, f.source)].add(node)
    out: list[Finding] = []
    for (device, name), per_node in sorted(values.items()):
        sample = next(iter(per_node.values()))
        ran = read[(device, sample.source)]
        if 2 * len(per_node) > len(ran):
            for node in sorted(ran - per_node.keys()):
                out.append(
                    _missing(
                        node, device, name, sample.source, f"{len(per_node)} of {len(ran)} nodes"
                    )
                )
        n = len(per_node)
        if n < 2:
            continue
        counts = Counter(f.value for f in per_node.values())
        if len(counts) == 1:
            continue
        top, c = counts.most_common(1)[0]
        if n - c <= max(1, n // 4):  # a few odd ones out: named; more, the rack is split
            out += [
                _differs(node, f, top, f"; {c} of {n} nodes have {top}")
                for node, f in sorted(per_node.items())
                if f.value != top
            ]
            continue
        groups = defaultdict(list)
        for node, f in per_node.items():
            groups[f.value].append(node)
        split = "; ".join(
            f"{len(nodes)} have {v} ({_nodes(nodes)})"
            for v, nodes in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        )
        out.append(
            Finding(
                _code(sample),
                sample.status(),
                subject(None, device),
                f"the rack is split on {_who(device)}{_what(sample)}: {split}; no majority "
                "says which is right",
                remediation="decide which is golden, capture it (rackops profile capture) "
                "and bring the others to it: " + _fix(sample, device),
                observed={v: sorted(ns) for v, ns in groups.items()},
            )
        )
    return out


_TOKEN = re.compile(r"\d+|[A-Za-z]+")


def version_key(v: str) -> tuple[tuple[int, int | str], ...]:
    """``550.54.15`` < ``550.127.05``; ``5.15.0-91-generic`` by its numbers; letters after."""
    return tuple((0, int(t)) if t.isdigit() else (1, t.lower()) for t in _TOKEN.findall(v))


def below(value: str, floor: str) -> bool:
    return version_key(value) < version_key(floor)


FLOOR_FACTS = {k.floor: name for name, k in KINDS.items() if k.floor}


def against_floors(node: str, facts: Sequence[Fact], floors: Sequence[Floor]) -> list[Finding]:
    """Each version below the floor of its branch: FAIL quoting the reason and source. A
    version of a branch no floor of its component names, where the floors are per branch,
    is a WARN (the bulletins cited list no fix for that branch)."""
    out: list[Finding] = []
    by_fact: dict[str, list[Floor]] = defaultdict(list)
    for floor in floors:
        by_fact[FLOOR_FACTS[floor.component]].append(floor)
    for f in facts:
        for value in f.value.split(",") if f.name in by_fact else ():  # packages: several
            version = value.split()[-1] if value.split() else value
            scoped = by_fact[f.name]
            if not version[:1].isdigit():
                out.append(
                    Finding(
                        "FLEET-FLOOR",
                        Status.FAIL,
                        subject(node, f.device),
                        f"{_who(f.device)}{_what(f)} {version!r} is not a version a floor can "
                        f"be compared with (floor {scoped[0].min}: {scoped[0].reason})",
                        remediation=f"read the version on the node: {f.source}",
                        action="node",
                    )
                )
                continue
            applicable = [fl for fl in scoped if fl.applies(version)]
            if not applicable:
                branches = ", ".join(sorted({fl.branch or "" for fl in scoped}))
                out.append(
                    Finding(
                        "FLEET-FLOOR",
                        Status.WARN,
                        subject(node, f.device),
                        f"{_who(f.device)}{_what(f)} {version}: no floor of the profile covers "
                        f"its branch (floors for {branches}): not checked against the "
                        "bulletins it cites",
                        remediation="move to a branch the floors name, or add its floor",
                        action="node",
                    )
                )
            for floor in applicable:
                if below(version, floor.min):
                    out.append(
                        Finding(
                            "FLEET-FLOOR",
                            Status.FAIL,
                            subject(node, f.device),
                            f"{_who(f.device)}{_what(f)} {version} is below the floor "
                            f"{floor.min}: {floor.reason} ({floor.source})",
                            remediation=f"upgrade to {floor.min} or later: {_fix(f, f.device)}",
                            observed=version,
                            expected=f">= {floor.min}",
                            action="node",
                        )
                    )
    return out


def below_capability(node: str, facts: Sequence[Fact]) -> list[Finding]:
    """An HCA whose PCIe link trained below what it and its slot are capable of (PCIE-001,
    the lspci check's rule, here with the HCA's name), without any sibling to compare
    with. A GPU's trained speed drops at idle; its width nvidia-smi judges."""
    have = {f.key: f for f in facts}
    out = []
    for f in facts:
        if f.device.startswith("gpu") or f.name not in ("pcie.width", "pcie.speed"):
            continue
        cap = have.get((f.device, f.name + "_max"))
        try:
            low = cap is not None and float(f.value) < float(cap.value)
        except ValueError:
            continue
        if low and cap is not None:
            out.append(
                Finding(
                    "PCIE-001",
                    Status.FAIL,
                    subject(node, f.device, f.where),
                    f"{f.device}: {_what(f)} {f.value}, capable of {cap.value} ({f.where}); "
                    f"read by {f.source}",
                    observed=f.value,
                    expected=cap.value,
                    remediation=_fix(f, f.device),
                )
            )
    return out
