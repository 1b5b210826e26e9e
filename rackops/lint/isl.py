"""Design rules for the inter-switch links (ISLs): a leaf's uplinks to its spines.

A leaf lists its uplinks (``rackops_switch_uplinks``: leaf port, spine, spine port, speed);
the spines' side is read from them. Each rule here is registered with the same
:func:`rackops.lint.rules.rule` as the host cabling's and is located at the uplink's entry.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from rackops.checks.cabling import ib_port_number
from rackops.consistency import design_port, isl_violations
from rackops.diagnostics import Diagnostic
from rackops.inventory.model import Switch, SwitchQos, Uplink
from rackops.lint.rules import LEVEL, Context, E, rule


def _here(leaf: Switch, up: Uplink) -> str:
    return f"{leaf.name} port {up.port} ↔ {up.spine} port {up.spine_port}"


def _at(ctx: Context, code: str, msg: str, leaf: Switch, i: int, key: str) -> Diagnostic:
    return ctx.at(code, E, msg, leaf.name, "rackops_switch_uplinks", i, key)


@rule("ISL001", "every uplink leaves one of its leaf's ports for a known spine's port")
def uplink_ends(ctx: Context) -> Iterator[Diagnostic]:
    for leaf in ctx.cluster.switches:
        for i, up in enumerate(leaf.uplinks):
            spine = ctx.cluster.switch(up.spine)
            if up.port not in leaf.ports:
                yield _at(
                    ctx,
                    "ISL001",
                    f"{_here(leaf, up)}: {up.port!r} is not in {leaf.name}'s "
                    "rackops_switch_ports; add it (it gets the fabric's MTU and QoS only then)",
                    leaf,
                    i,
                    "port",
                )
            if spine is None:
                known = ", ".join(s.name for s in ctx.cluster.spines) or "none"
                yield _at(
                    ctx,
                    "ISL001",
                    f"{_here(leaf, up)}: {up.spine!r} is not in the 'switches' group "
                    f"(spines: {known}); add it or fix the name",
                    leaf,
                    i,
                    "spine",
                )
            elif spine.role != "spine":
                yield _at(
                    ctx,
                    "ISL001",
                    f"{_here(leaf, up)}: {spine.name} is a {spine.role}; a leaf's uplinks "
                    "go to spines — fix the name or rackops_switch_role",
                    leaf,
                    i,
                    "spine",
                )
            elif up.spine_port not in spine.ports:
                yield _at(
                    ctx,
                    "ISL001",
                    f"{_here(leaf, up)}: {up.spine_port!r} is not in {spine.name}'s "
                    f"rackops_switch_ports ({', '.join(spine.ports)}); fix the port",
                    leaf,
                    i,
                    "spine_port",
                )


@rule("ISL002", "every switch port carries one cable, to a host or to another switch")
def isl_port_reuse(ctx: Context) -> Iterator[Diagnostic]:
    used: dict[tuple[str, str], str] = {}
    for node in ctx.cluster.nodes:
        for hca in node.hcas:
            used.setdefault((hca.switch, hca.port), f"{node.name}/{hca.device}")
    for leaf in ctx.cluster.switches:
        for i, up in enumerate(leaf.uplinks):
            for end, key, what in (
                ((leaf.name, up.port), "port", f"{leaf.name} port {up.port}"),
                ((up.spine, up.spine_port), "spine_port", f"{up.spine} port {up.spine_port}"),
            ):
                if end in used:
                    yield _at(
                        ctx,
                        "ISL002",
                        f"{_here(leaf, up)}: {what} already carries {used[end]}; one switch "
                        "port takes one cable — fix the port",
                        leaf,
                        i,
                        key,
                    )
                else:
                    used[end] = _here(leaf, up)


@rule("ISL003", "a leaf's uplinks carry its hosts' bandwidth within the oversubscription")
def oversubscription(ctx: Context) -> Iterator[Diagnostic]:
    if not ctx.cluster.spines:
        return  # one tier: no leaf has uplinks to count
    ratio = ctx.cluster.fabric.oversubscription
    for leaf in ctx.cluster.switches:
        if leaf.role != "leaf":
            continue
        hosts = sum(h.switch == leaf.name for n in ctx.cluster.nodes for h in n.hcas)
        down = hosts * leaf.port_speed_gbps
        up = sum(leaf.uplink_speed(u) for u in leaf.uplinks)
        if down == 0 or (up and down / up <= ratio + 1e-9):
            continue
        need = math.ceil(down / ratio / leaf.port_speed_gbps) - len(leaf.uplinks)
        said = (
            "no uplinks: its hosts reach no other leaf"
            if not up
            else (
                f"{len(leaf.uplinks)} uplinks ({up} Gb/s) for {hosts} host ports ({down} Gb/s): "
                f"{down / up:.2f}:1, over the design's {ratio:g}:1"
            )
        )
        yield ctx.at(
            "ISL003",
            E,
            f"{leaf.name} has {said} — cable {need} more uplink(s) to the spines, or raise "
            "rackops_fabric.oversubscription if the design means it",
            leaf.name,
            "rackops_switch_uplinks",
        )


@rule("ISL004", "a leaf's uplinks stay in its spine plane, both ends at one speed")
def plane_and_speed(ctx: Context) -> Iterator[Diagnostic]:
    for leaf in ctx.cluster.switches:
        for i, up in enumerate(leaf.uplinks):
            spine = ctx.cluster.switch(up.spine)
            if spine is None or spine.role != "spine":
                continue  # ISL001
            if leaf.plane is not None and spine.plane is not None and spine.plane != leaf.plane:
                right = [s.name for s in ctx.cluster.spines if s.plane == leaf.plane]
                yield _at(
                    ctx,
                    "ISL004",
                    f"{_here(leaf, up)}: {leaf.name} is in spine plane {leaf.plane}, "
                    f"{spine.name} in plane {spine.plane} — recable to "
                    f"{', '.join(right) or f'a plane-{leaf.plane} spine'}",
                    leaf,
                    i,
                    "spine",
                )
            speed = leaf.uplink_speed(up)
            if speed != spine.port_speed_gbps:
                yield _at(
                    ctx,
                    "ISL004",
                    f"{_here(leaf, up)}: {speed} Gb/s at the leaf end, {spine.name}'s ports "
                    f"are {spine.port_speed_gbps} Gb/s; the link trains at the lower rate — "
                    "set one speed on both ends",
                    leaf,
                    i,
                    "speed_gbps",
                )


@rule("C-45", "both ends of an inter-switch link: one PFC set, one RoCE class")
def isl_qos(ctx: Context) -> Iterator[Diagnostic]:
    if ctx.cluster.fabric.type != "roce":
        return
    roce = ctx.cluster.fabric.roce
    found: dict[tuple[str, str, str, tuple[str | int, ...]], list[str]] = {}
    for leaf, spine in sorted({(lf.name, up.spine) for lf, up in ctx.cluster.isls()}):
        lsw, ssw = ctx.cluster.switch(leaf), ctx.cluster.switch(spine)
        if lsw is None or ssw is None:
            continue  # ISL001
        # the end whose own settings differ from the design is the one to fix
        odd, other = (ssw, lsw) if (ssw.mtu, ssw.qos) != (None, SwitchQos()) else (lsw, ssw)
        ends = design_port(ctx.cluster, lsw), design_port(ctx.cluster, ssw)
        for v in isl_violations(*ends, roce):
            found.setdefault((odd.name, v.message, v.fix, v.where), []).append(other.name)
    for (odd_name, message, fix, where), others in found.items():
        yield ctx.at(
            "C-45",
            LEVEL["error"],
            f"{odd_name} ↔ {', '.join(others)}: {message} — {fix}",
            odd_name,
            "rackops_switch_qos",
            *where,
        )


@rule("ISL005", "the InfiniBand sweep runs from a node of the inventory")
def sweep_node(ctx: Context) -> Iterator[Diagnostic]:
    name = ctx.cluster.fabric.sweep_node
    if name is not None and name not in {n.name for n in ctx.cluster.nodes}:
        yield ctx.design(
            "ISL005",
            E,
            f"rackops_fabric.sweep_node {name!r} is not a node of this inventory: the fabric "
            "sweep (ibdiagnet) would run nowhere — name one of its nodes, or leave it out "
            "(the run's first node)",
            "rackops_fabric",
            "sweep_node",
        )


@rule("ISL006", "every InfiniBand switch port name says its IB port number, once")
def ib_port_names(ctx: Context) -> Iterator[Diagnostic]:
    if ctx.cluster.fabric.type != "infiniband":
        return
    for sw in ctx.cluster.switches:
        seen: dict[int, str] = {}
        for i, port in enumerate(sw.ports):
            num = ib_port_number(port)
            if num is None:
                why = (
                    f"{sw.name} port {port!r}: no IB port number can be read from it, so the "
                    "fabric sweep cannot find its cable — name it as ibdiagnet labels it: "
                    "N, IB1/N, P/S (split S of port P) or 1/P/S"
                )
            elif num in seen:
                why = (
                    f"{sw.name} ports {seen[num]!r} and {port!r} are both IB port {num}: "
                    "name each port once"
                )
            else:
                seen[num] = port
                continue
            yield ctx.at("ISL006", E, why, sw.name, "rackops_switch_ports", i)
