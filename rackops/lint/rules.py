"""Design rules: each decides one invariant from the inventory alone.

A rule is a function ``(ctx) -> Iterator[Diagnostic]`` registered with
:func:`rule`. Codes are stable: ``INVxxx`` inventory, ``CABxxx`` cabling,
``C-nn`` the cross-layer rules of reference/config.md §10, ``THRxxx`` thresholds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rackops.consistency import (
    HOST_RULES,
    PORT_RULES,
    Intent,
    Violation,
    check_host,
    cnp_dscp_violation,
    design_host,
    design_port,
    nccl_tc_violation,
)
from rackops.diagnostics import Diagnostic, Level
from rackops.inventory.loader import LoadResult, display_path
from rackops.inventory.model import Cluster, Node, RoceQos, Switch, SwitchQos
from rackops.profiles import peak_violations

ROCE_MIN_NETDEV_MTU = 4192  # smallest netdev MTU that gives RoCE active_mtu 4096 (C-23)
IPOIB_HEADER_BYTES = 4  # IPoIB datagram MTU = IB MTU - 4 (C-24)


@dataclass(frozen=True)
class Context:
    result: LoadResult
    cluster: Cluster

    def at(self, code: str, level: Level, message: str, host: str | None, *key: Any) -> Diagnostic:
        """A diagnostic located at the file/line that set ``key`` on ``host``."""
        if host is None:
            path, line = str(self.result.inventory), None
        else:
            path, line = self.result.origin(host, *key)
        keyname = ".".join(str(k) for k in key) or None
        return Diagnostic(code, level, message, path, line, host, keyname)

    def design(self, code: str, level: Level, message: str, *key: Any) -> Diagnostic:
        host = self.cluster.nodes[0].name if self.cluster.nodes else None
        return self.at(code, level, message, host, *key)


@dataclass(frozen=True)
class Rule:
    code: str
    summary: str
    check: Callable[[Context], Iterator[Diagnostic]]


RULES: list[Rule] = []


def rule(
    code: str, summary: str
) -> Callable[
    [Callable[[Context], Iterator[Diagnostic]]], Callable[[Context], Iterator[Diagnostic]]
]:
    def register(
        fn: Callable[[Context], Iterator[Diagnostic]],
    ) -> Callable[[Context], Iterator[Diagnostic]]:
        RULES.append(Rule(code, summary, fn))
        return fn

    return register


E, W = Level.ERROR, Level.WARNING


# ---------------------------------------------------------------- inventory


def _hosts(ctx: Context) -> list[Node | Switch]:
    return [*ctx.cluster.nodes, *ctx.cluster.switches]


@rule("INV003", "no two hosts, and no two fabric interfaces, share an address")
def duplicate_addresses(ctx: Context) -> Iterator[Diagnostic]:
    seen: dict[tuple[str, int], str] = {}
    for host in _hosts(ctx):
        key = (host.address, host.ssh_port)
        if key in seen:
            yield ctx.at(
                "INV003",
                E,
                f"{host.name}: address {host.address}:{host.ssh_port} is already used by "
                f"{seen[key]}; give each host its own ansible_host (or ansible_port)",
                host.name,
                "ansible_host",
            )
        else:
            seen[key] = host.name
    fabric: dict[str, str] = {}
    for node in ctx.cluster.nodes:
        for i, hca in enumerate(node.hcas):
            if hca.address is None:
                continue
            here = f"{node.name}/{hca.device}"
            if hca.address in fabric:
                yield ctx.at(
                    "INV003",
                    E,
                    f"{here}: fabric address {hca.address} is already used by "
                    f"{fabric[hca.address]}; every HCA needs its own address",
                    node.name,
                    "rackops_hcas",
                    i,
                    "address",
                )
            else:
                fabric[hca.address] = here


@rule("INV004", "host names are unique, and a host is either a node or a switch")
def duplicate_hostnames(ctx: Context) -> Iterator[Diagnostic]:
    node_names = {n.name for n in ctx.cluster.nodes}
    for sw in ctx.cluster.switches:
        if sw.name in node_names:
            yield ctx.at(
                "INV004",
                E,
                f"{sw.name} is in both gpu_nodes and switches; keep it in one group",
                sw.name,
                "ansible_host",
            )
    seen: dict[str, str] = {}
    for host in _hosts(ctx):
        folded = host.name.casefold()
        if folded in seen and seen[folded] != host.name:
            yield ctx.at(
                "INV004",
                E,
                f"{host.name} differs from {seen[folded]} only in letter case; DNS and "
                f"most tools treat them as one host — rename one",
                host.name,
                "ansible_host",
            )
        seen.setdefault(folded, host.name)


# ------------------------------------------------------------------ cabling


@rule("CAB001", "every switch port carries at most one cable")
def switch_port_reuse(ctx: Context) -> Iterator[Diagnostic]:
    used: dict[tuple[str, str], str] = {}
    for node in ctx.cluster.nodes:
        for i, hca in enumerate(node.hcas):
            key = (hca.switch, hca.port)
            here = f"{node.name}/{hca.device}"
            if key in used:
                yield ctx.at(
                    "CAB001",
                    E,
                    f"{here} is cabled to {hca.switch} port {hca.port}, which already "
                    f"carries {used[key]}; one switch port takes one cable — fix the port",
                    node.name,
                    "rackops_hcas",
                    i,
                    "port",
                )
            else:
                used[key] = here


@rule("CAB002", "every cable ends on a known switch and one of its ports")
def unknown_switch_port(ctx: Context) -> Iterator[Diagnostic]:
    for node in ctx.cluster.nodes:
        for i, hca in enumerate(node.hcas):
            sw = ctx.cluster.switch(hca.switch)
            here = f"{node.name}/{hca.device}"
            if sw is None:
                known = ", ".join(s.name for s in ctx.cluster.switches) or "none"
                yield ctx.at(
                    "CAB002",
                    E,
                    f"{here} is cabled to switch {hca.switch!r}, which is not in the "
                    f"'switches' group (known: {known}); add it or fix the name",
                    node.name,
                    "rackops_hcas",
                    i,
                    "switch",
                )
            elif hca.port not in sw.ports:
                yield ctx.at(
                    "CAB002",
                    E,
                    f"{here} is cabled to {sw.name} port {hca.port!r}, which is not in "
                    f"{sw.name}'s rackops_switch_ports ({', '.join(sw.ports)}); "
                    f"fix the port name or add the port to the switch",
                    node.name,
                    "rackops_hcas",
                    i,
                    "port",
                )


@rule("CAB003", "every HCA is cabled to a leaf of its own rail")
def rail_alignment(ctx: Context) -> Iterator[Diagnostic]:
    for node in ctx.cluster.nodes:
        for i, hca in enumerate(node.hcas):
            sw = ctx.cluster.switch(hca.switch)
            if sw is None:
                continue  # CAB002
            here = f"{node.name}/{hca.device} (rail {hca.rail})"
            if sw.role != "leaf":
                yield ctx.at(
                    "CAB003",
                    E,
                    f"{here} is cabled to {sw.name}, a {sw.role}; hosts connect to "
                    f"leaves — recable to the rail-{hca.rail} leaf",
                    node.name,
                    "rackops_hcas",
                    i,
                    "switch",
                )
            elif sw.rail is not None and sw.rail != hca.rail:
                right = [s.name for s in ctx.cluster.switches if s.rail == hca.rail]
                fix = f"recable to {', '.join(right)}" if right else "fix the rail"
                yield ctx.at(
                    "CAB003",
                    E,
                    f"{here} is cabled to {sw.name}, the rail-{sw.rail} leaf; "
                    f"expected a rail-{hca.rail} leaf — {fix}",
                    node.name,
                    "rackops_hcas",
                    i,
                    "switch",
                )


@rule("CAB004", "every HCA of every node is cabled exactly once")
def hca_cabled_once(ctx: Context) -> Iterator[Diagnostic]:
    for node in ctx.cluster.nodes:
        seen: dict[str, int] = {}
        for i, hca in enumerate(node.hcas):
            if hca.device in seen:
                yield ctx.at(
                    "CAB004",
                    E,
                    f"{node.name}/{hca.device} is listed twice in rackops_hcas "
                    f"(entries {seen[hca.device]} and {i}); an HCA has one cable — "
                    f"remove one entry",
                    node.name,
                    "rackops_hcas",
                    i,
                    "device",
                )
            seen.setdefault(hca.device, i)
        loaded = ctx.result.profiles.get(node.profile)
        if loaded is None:
            continue
        want = loaded.profile.hca.count
        if len(seen) != want:
            yield ctx.at(
                "CAB004",
                E,
                f"{node.name} has {len(seen)} HCAs in its cabling map; profile "
                f"{node.profile} has {want} compute HCAs — cable every one of them "
                f"(list {want} entries in rackops_hcas)",
                node.name,
                "rackops_hcas",
            )


@rule("CAB005", "every HCA pairs with a GPU of its node, one HCA per GPU")
def gpu_pairing(ctx: Context) -> Iterator[Diagnostic]:
    for node in ctx.cluster.nodes:
        paired: dict[int, str] = {}
        for i, hca in enumerate(node.hcas):
            if hca.gpu >= node.gpus:
                yield ctx.at(
                    "CAB005",
                    E,
                    f"{node.name}/{hca.device} pairs with GPU {hca.gpu}, but the node "
                    f"has GPUs 0..{node.gpus - 1}; fix 'gpu'",
                    node.name,
                    "rackops_hcas",
                    i,
                    "gpu",
                )
            elif hca.gpu in paired:
                yield ctx.at(
                    "CAB005",
                    W,
                    f"{node.name}/{hca.device} pairs with GPU {hca.gpu}, like "
                    f"{paired[hca.gpu]}; GPUDirect tests pair one HCA per GPU — "
                    f"check 'nvidia-smi topo -m' for the PIX/PXB neighbour",
                    node.name,
                    "rackops_hcas",
                    i,
                    "gpu",
                )
            paired.setdefault(hca.gpu, hca.device)


@rule("CAB006", "a rail-optimised node has one HCA per rail")
def one_hca_per_rail(ctx: Context) -> Iterator[Diagnostic]:
    for node in ctx.cluster.nodes:
        rails: dict[int, str] = {}
        for i, hca in enumerate(node.hcas):
            if hca.rail in rails:
                yield ctx.at(
                    "CAB006",
                    W,
                    f"{node.name}/{hca.device} is on rail {hca.rail} like "
                    f"{rails[hca.rail]}; a rail-optimised node has one HCA per rail",
                    node.name,
                    "rackops_hcas",
                    i,
                    "rail",
                )
            rails.setdefault(hca.rail, hca.device)


@rule("NVL001", "a multi-node NVLink domain is whole: its slots filled once, one profile")
def nvlink_domains(ctx: Context) -> Iterator[Diagnostic]:
    """A GB200/GB300 NVL72 rack is accepted as one NVLink domain: every tray of it says so
    (``rackops_nvlink: {domain, slot}``), each slot has one tray, and the trays' GPUs make
    the profile's domain (18 x 4 = 72). A partial domain is named with its empty slots."""
    domains: dict[str, list[Node]] = {}
    for node in ctx.cluster.nodes:
        lp = ctx.result.profiles.get(node.profile)
        size = lp.profile.gpu.nvlink_domain if lp is not None else 0
        if node.nvlink is None:
            if size:
                yield ctx.at(
                    "NVL001",
                    E,
                    f"{node.name}: profile {node.profile} is a tray of a {size}-GPU NVLink "
                    "domain; say which and where: rackops_nvlink: {domain: NAME, slot: N}",
                    node.name,
                    "rackops_profile",
                )
        elif not size:
            yield ctx.at(
                "NVL001",
                E,
                f"{node.name}: rackops_nvlink names domain {node.nvlink.domain}, but profile "
                f"{node.profile} has no multi-node NVLink domain (gpu.nvlink_domain 0)",
                node.name,
                "rackops_nvlink",
            )
        else:
            domains.setdefault(node.nvlink.domain, []).append(node)
    for name, trays in sorted(domains.items()):
        yield from _whole_domain(ctx, name, trays)


def _whole_domain(ctx: Context, name: str, trays: list[Node]) -> Iterator[Diagnostic]:
    profiles = sorted({t.profile for t in trays})
    if len(profiles) > 1:
        yield ctx.at(
            "NVL001",
            E,
            f"domain {name} mixes profiles {', '.join(profiles)}: one domain is one tray model",
            trays[0].name,
            "rackops_profile",
        )
        return
    gpu = ctx.result.profiles[profiles[0]].profile.gpu
    said = sorted({t.nvlink.gpus for t in trays if t.nvlink and t.nvlink.gpus is not None})
    if len(said) > 1 or (
        said and len(said) == 1 and any(t.nvlink and t.nvlink.gpus is None for t in trays)
    ):
        yield ctx.at(
            "NVL001",
            E,
            f"domain {name}: its trays give its size differently (rackops_nvlink.gpus "
            f"{', '.join(map(str, said))}"
            + (" and unset" if any(t.nvlink and t.nvlink.gpus is None for t in trays) else "")
            + "): one domain, one size",
            trays[0].name,
            "rackops_nvlink",
            "gpus",
        )
        return
    size = trays[0].nvlink.size(gpu.nvlink_domain) if trays[0].nvlink else gpu.nvlink_domain
    if size > gpu.nvlink_domain or size % gpu.count:
        yield ctx.at(
            "NVL001",
            E,
            f"domain {name}: rackops_nvlink.gpus {size} is not a whole number of "
            f"{gpu.count}-GPU trays up to the profile's {gpu.nvlink_domain}-GPU domain",
            trays[0].name,
            "rackops_nvlink",
            "gpus",
        )
        return
    slots = size // gpu.count
    held: dict[int, str] = {}
    for t in sorted(trays, key=lambda t: t.name):
        assert t.nvlink is not None
        slot = t.nvlink.slot
        if slot > slots:
            yield ctx.at(
                "NVL001",
                E,
                f"{t.name}: slot {slot} is past the {slots} trays of a {size}-GPU domain ({name})",
                t.name,
                "rackops_nvlink",
                "slot",
            )
        elif slot in held:
            yield ctx.at(
                "NVL001",
                E,
                f"domain {name}: slot {slot} is {held[slot]}'s and {t.name}'s; give each tray "
                "its own slot",
                t.name,
                "rackops_nvlink",
                "slot",
            )
        else:
            held[slot] = t.name
    gpus = sum(t.gpus for t in trays)
    empty = [s for s in range(1, slots + 1) if s not in held]
    if gpus != size or empty:
        yield ctx.at(
            "NVL001",
            E,
            f"domain {name}: {len(trays)} trays, {gpus} GPUs; a {size}-GPU domain "
            f"is {slots} trays of {gpu.count}"
            + (f": slot(s) {', '.join(map(str, empty))} have no tray" if empty else ""),
            trays[0].name,
            "rackops_nvlink",
        )
    cliques = sorted({t.nvlink.clique for t in trays if t.nvlink and t.nvlink.clique})
    if len(cliques) > 1:
        yield ctx.at(
            "NVL001",
            E,
            f"domain {name} pins cliques {', '.join(map(str, cliques))}: one domain's trays "
            "share one NVLink partition",
            trays[0].name,
            "rackops_nvlink",
            "clique",
        )


# ------------------------------------------------------------ RoCE QoS (§10)


def _roce(ctx: Context) -> RoceQos | None:
    return ctx.cluster.fabric.roce if ctx.cluster.fabric.type == "roce" else None


def _qos_switches(ctx: Context) -> list[Switch]:
    return [s for s in ctx.cluster.switches if s.os != "mlnx-os"]


@rule("C-01", "NCCL_IB_TC >> 2 equals the RoCE DSCP")
def nccl_tc(ctx: Context) -> Iterator[Diagnostic]:
    roce = _roce(ctx)
    if roce is None:
        return
    v = nccl_tc_violation(roce, roce.nccl_ib_tc)
    if v is not None:
        yield ctx.design(
            v.code,
            LEVEL[v.severity],
            f"{v.message} — {v.fix}",
            "rackops_fabric",
            "roce",
            "nccl_ib_tc",
        )
    for node in ctx.cluster.nodes:
        if node.qos.nccl_ib_tc is None:
            continue
        v = nccl_tc_violation(roce, node.qos.nccl_ib_tc)
        if v is not None:
            yield _diag(ctx, v, node.name, node.name, ("rackops_host_qos", "nccl_ib_tc"))


@rule("C-09", "the host CNP DSCP equals the switch CNP classifier DSCP")
def cnp_dscp(ctx: Context) -> Iterator[Diagnostic]:
    roce = _roce(ctx)
    if roce is None:
        return
    for node in ctx.cluster.nodes:
        v = cnp_dscp_violation(roce, node.qos.cnp_dscp)
        if v is not None:
            yield ctx.at(
                "C-09",
                E,
                f"{node.name}: {v.message} — {v.fix}",
                node.name,
                "rackops_host_qos",
                "cnp_dscp",
            )


def _switch_key(sw: Switch, where: tuple[str | int, ...]) -> tuple[Any, ...]:
    if where[:1] == ("mtu",):
        return ("rackops_switch_mtu",) if sw.mtu else ("rackops_fabric", "mtu", "switch")
    return ("rackops_switch_qos", *where)


DESIGN_KEY = {
    "pfc_priorities": ("rackops_fabric", "roce", "pfc_priorities"),
    "mtu": ("rackops_fabric", "mtu", "switch"),
    "dscp2prio": ("rackops_fabric", "roce"),
    "trust": ("rackops_fabric", "roce", "trust"),
    "dscp_to_tc": ("rackops_fabric", "roce"),
}
DESIGN_ONLY_KEY = {"C-16": ("rackops_fabric", "roce", "pfc_watchdog", "enabled")}
LEVEL = {"error": E, "warning": W}


def _diag(
    ctx: Context, v: Violation, subject: str, host: str | None, key: tuple[Any, ...]
) -> Diagnostic:
    return ctx.at(v.code, LEVEL[v.severity], f"{subject}: {v.message} — {v.fix}", host, *key)


def _design_key(v: Violation) -> tuple[Any, ...]:
    if v.code in DESIGN_ONLY_KEY:
        return DESIGN_ONLY_KEY[v.code]
    return DESIGN_KEY.get(str(v.where[0]) if v.where else "", ("rackops_fabric", "roce"))


def _switch_violations(ctx: Context, code: str) -> Iterator[Diagnostic]:
    """A port rule over the designed ports: what the design itself gets wrong is reported
    once on the design, what a switch's own settings add, on that switch."""
    switches = _qos_switches(ctx)
    if not switches:
        return
    intent = Intent.of(ctx.cluster)
    fn = next(f for r, f in PORT_RULES if r.code == code)
    plain = switches[0].model_copy(update={"qos": SwitchQos(), "mtu": None})
    designed = fn(intent, design_port(ctx.cluster, plain))
    if not (code in ("C-13",) and _design_violations(ctx)):  # C-12 names the design's PFC
        for v in designed:
            yield ctx.design(
                v.code, LEVEL[v.severity], f"design: {v.message} — {v.fix}", *_design_key(v)
            )
    seen = {(v.code, v.message) for v in designed}
    for sw in switches:
        for v in fn(intent, design_port(ctx.cluster, sw)):
            if (v.code, v.message) not in seen:
                yield _diag(ctx, v, sw.name, sw.name, _switch_key(sw, v.where))


def _design_violations(ctx: Context) -> list[Violation]:
    roce = _roce(ctx)
    if roce is None:
        return []
    return check_host(Intent.of(ctx.cluster), design_host(None, roce))


def _host_violations(ctx: Context, code: str) -> Iterator[Diagnostic]:
    """A host rule over the designed hosts: the design once, then each host's overrides."""
    roce = _roce(ctx)
    if roce is None:
        return
    intent = Intent.of(ctx.cluster)
    fn = next(f for r, f in HOST_RULES if r.code == code)
    designed = fn(intent, design_host(None, roce))
    for v in designed:
        yield ctx.design(
            v.code, LEVEL[v.severity], f"design: {v.message} — {v.fix}", *_design_key(v)
        )
    seen = {(v.code, v.message) for v in designed}
    for node in ctx.cluster.nodes:
        for v in fn(intent, design_host(node, roce)):
            if (v.code, v.message) not in seen:
                yield _diag(ctx, v, node.name, node.name, ("rackops_host_qos", *v.where))


def _register_shared() -> None:
    """Every §10 rule of rackops.consistency is a lint rule over the designed views."""
    for r, _ in PORT_RULES:
        if r.code in ("C-06", "C-17", "C-18", "SCH001"):
            continue  # no inventory setting can break these: checked on rendered/running configs

        def check(ctx: Context, code: str = r.code) -> Iterator[Diagnostic]:
            if ctx.cluster.fabric.type != "roce":
                return iter(())
            return _switch_violations(ctx, code)

        RULES.append(Rule(r.code, r.summary, check))
    for r, _ in HOST_RULES:

        def hcheck(ctx: Context, code: str = r.code) -> Iterator[Diagnostic]:
            return _host_violations(ctx, code)

        RULES.append(Rule(r.code, r.summary, hcheck))


@rule("C-23", "all RoCE hosts share one netdev MTU ≥ 4192")
def host_mtu(ctx: Context) -> Iterator[Diagnostic]:
    fabric = ctx.cluster.fabric
    if fabric.type != "roce":
        return
    if fabric.mtu.host < ROCE_MIN_NETDEV_MTU:
        yield ctx.design(
            "C-23",
            E,
            f"host MTU {fabric.mtu.host} is below {ROCE_MIN_NETDEV_MTU}; RoCE "
            f"active_mtu drops below 4096 — use 9000",
            "rackops_fabric",
            "mtu",
            "host",
        )
    for node in ctx.cluster.nodes:
        if node.qos.mtu is not None and node.qos.mtu != fabric.mtu.host:
            yield ctx.at(
                "C-23",
                E,
                f"{node.name}: host MTU {node.qos.mtu} differs from the rack's "
                f"{fabric.mtu.host}; NCCL silently uses the smaller MTU for every "
                f"peer — remove the override",
                node.name,
                "rackops_host_qos",
                "mtu",
            )


@rule("C-24", "InfiniBand: link MTU 4096 and IPoIB datagram MTU 4092")
def ib_mtu(ctx: Context) -> Iterator[Diagnostic]:
    fabric = ctx.cluster.fabric
    if fabric.type != "infiniband":
        return
    ib = fabric.mtu.ib
    if ib != 4096:
        yield ctx.design(
            "C-24",
            E,
            f"IB link MTU is {ib if ib else 'unset'}, expected 4096 (mtu=5 in the "
            f"SM partition; OpenSM's default is 2048) — set rackops_fabric.mtu.ib",
            "rackops_fabric",
            "mtu",
            "ib" if ib else "host",
        )
    want_host = (ib or 4096) - IPOIB_HEADER_BYTES
    if fabric.mtu.host != want_host:
        yield ctx.design(
            "C-24",
            E,
            f"IPoIB MTU is {fabric.mtu.host}, expected {want_host} (datagram mode: "
            f"IB MTU − 4; ConnectX-4+ has no connected mode)",
            "rackops_fabric",
            "mtu",
            "host",
        )


# ---------------------------------------------------------------- versions


@rule("C-28", "fabric manager version equals the driver version")
def fabric_manager(ctx: Context) -> Iterator[Diagnostic]:
    versions = ctx.cluster.versions
    nvswitch = any(lp.profile.gpu.nvswitch for lp in ctx.result.profiles.values())
    if not nvswitch:
        return
    if versions.fabric_manager is None:
        yield ctx.design(
            "C-28",
            E,
            f"no fabric_manager version is pinned on an NVSwitch system; CUDA "
            f"fails to initialise without it — set it to {versions.driver}",
            "rackops_versions",
        )
    elif versions.fabric_manager != versions.driver:
        yield ctx.design(
            "C-28",
            E,
            f"fabric_manager {versions.fabric_manager} differs from driver "
            f"{versions.driver}; they must be the exact same version — set "
            f'fabric_manager: "{versions.driver}"',
            "rackops_versions",
            "fabric_manager",
        )


@rule("VER001", "the pinned versions are at or above the profile's version floors")
def version_floors(ctx: Context) -> Iterator[Diagnostic]:
    """A pin below a floor would be provisioned, then failed by validate: say it first."""
    from rackops.fleet.compare import below

    v = ctx.cluster.versions
    pinned = {"driver": v.driver, "fabric_manager": v.fabric_manager, "ofed": v.ofed}
    for name, lp in sorted(ctx.result.profiles.items()):
        for floor in lp.profile.floors:
            value = pinned.get(floor.component)
            if value is not None and floor.applies(value) and below(value, floor.min):
                yield ctx.design(
                    "VER001",
                    E,
                    f"{floor.component} {value} is pinned, below profile {name}'s floor "
                    f"{floor.min}: {floor.reason} ({floor.source}) — pin {floor.min} or later",
                    "rackops_versions",
                    floor.component,
                )


_register_shared()

# ------------------------------------------------------------ rendered configs


@rule("RND001", "every rendered switch config, read back, agrees with the host intent")
def rendered_configs(ctx: Context) -> Iterator[Diagnostic]:
    from rackops.render import render_switch, verify_switch
    from rackops.render.view import RenderError

    for sw in ctx.cluster.switches:
        try:
            files = render_switch(ctx.cluster, sw.name, str(ctx.result.inventory))
        except RenderError:
            return  # the design rules above already name why it cannot render
        problems = [
            d for d in verify_switch(ctx.cluster, sw.name, files) if d.level is Level.ERROR
        ]  # warnings on rendered files repeat the design's warnings above
        if problems:
            detail = "; ".join(f"{d.code} {d.message}" for d in problems[:3])
            more = f" (+{len(problems) - 3} more)" if len(problems) > 3 else ""
            yield ctx.at(
                "RND001",
                E,
                f"{sw.name}: its rendered config breaks the fabric "
                f"design on {len(problems)} port checks: {detail}{more}; run "
                f"`rackops render --switch {sw.name}` to see the file",
                sw.name,
                "rackops_switch_qos",
            )


# -------------------------------------------------------------- thresholds


@rule("THR001", "no profile floor is above the physical peak of its link")
def threshold_peaks(ctx: Context) -> Iterator[Diagnostic]:
    for loaded in ctx.result.profiles.values():
        for v in peak_violations(loaded.profile):
            yield Diagnostic(
                "THR001",
                E,
                f"profile {loaded.profile.name}: {v.message()}",
                display_path(loaded.path),
                loaded.line_of("thresholds", v.key),
                loaded.profile.name,
                f"thresholds.{v.key}",
            )


def run_rules(ctx: Context) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for r in RULES:
        out.extend(r.check(ctx))
    return out


# Codes raised by the loader, or as a second code by a rule above.
OTHER_CODES = {
    "INV000": "every inventory file is readable YAML (exit 64 otherwise)",
    "INV001": "every variable matches the schema (type, range, required keys)",
    "INV002": "every node names a known hardware profile",
    "INV005": "the fabric design and pinned versions are the same for every host",
    "INV006": "reading the inventory runs no lookup()/query() unless --allow-lookups",
    "C-02": "NCCL_IB_TC carries ECT(0) in its ECN bits (raised by C-01)",  # consistency.ECT
    "C-14": "the CNP priority is in no PFC set (raised by C-12/C-13)",
}


def rule_table() -> dict[str, str]:
    codes = dict(OTHER_CODES)
    for r in RULES:
        codes[r.code] = r.summary
    return codes
