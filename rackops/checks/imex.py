"""IMEX on a tray of a multi-node NVLink domain: the domain as this tray's daemon sees it
(``nvidia-imex-ctl -N``) — UP, every node of it READY at the driver's version, every
connection of the matrix C, and as many nodes as the domain has trays; and each tray's own
IMEX (``check_imex_node``): READY, its channel 0, its nodes_config.cfg.

A node the table names is mapped to the inventory by its host name (``-H``) or its address,
so a tray whose IMEX is down is named as that tray from every other tray's view (one
culprit, however many trays see it), never as the tray that looked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from rackops.findings import Finding, Status, Subject
from rackops.inventory.model import Cluster, Node
from rackops.parsers.imex_node import ImexNode as ImexNodeState
from rackops.parsers.nvidia_imex import CONNECTION, ImexDomain, ImexNode

FIX_NODE = (
    "start IMEX on that tray (systemctl status nvidia-imex; /var/log/nvidia-imex.log says why "
    "it stopped) with the same nodes_config.cfg as every other tray"
)


def _trays(cluster: Cluster | None, node: Node | None) -> list[Node]:
    if cluster is None or node is None or node.nvlink is None:
        return []
    domain = node.nvlink.domain
    return [n for n in cluster.nodes if n.nvlink is not None and n.nvlink.domain == domain]


def _who(n: ImexNode, trays: Sequence[Node]) -> Node | None:
    """The inventory tray an IMEX node is: its host name, else its address."""
    for t in trays:
        if n.hostname is not None and n.hostname in (t.name, t.address):
            return t
    return next((t for t in trays if n.address == t.address), None)


def check_imex(
    parsed: ImexDomain,
    *,
    node: Node | None,
    cluster: Cluster | None,
    driver: str | None,
) -> list[Finding]:
    here = None if node is None else node.name
    if not parsed.complete:
        why = "; ".join(parsed.errors) or "no domain state or matrix rows missing (cut short?)"
        return [
            Finding(
                "IMEX-000",
                Status.ERROR,
                Subject(node=here),
                f"nvidia-imex-ctl -N output is not whole: {why}",
                remediation="run nvidia-imex-ctl -N -H again on the tray; it needs the IMEX "
                "config (IMEX_CMD_ENABLED=1) and a running daemon",
            )
        ]
    trays = _trays(cluster, node)
    found: list[Finding] = []
    named = {n.index: _who(n, trays) for n in parsed.nodes}

    def subject(n: ImexNode) -> Subject:
        t = named.get(n.index)
        return Subject(node=t.name if t is not None else here)

    def label(n: ImexNode) -> str:
        t = named.get(n.index)
        return f"IMEX node #{n.index} ({t.name if t else n.address})"

    found += _nodes(parsed, here, driver, subject, label)
    found += _links(parsed, here, label, named)
    if trays and len(parsed.nodes) != len(trays):
        found.append(
            Finding(
                "IMEX-003",
                Status.FAIL,
                Subject(node=here),
                f"{here}'s IMEX domain has {len(parsed.nodes)} nodes, the NVLink domain "
                f"{trays[0].nvlink.domain if trays[0].nvlink else ''} has {len(trays)} trays",
                len(parsed.nodes),
                len(trays),
                "nodes",
                remediation="list every tray of the domain in /etc/nvidia-imex/nodes_config.cfg, "
                "the same file on every tray, then restart IMEX",
            )
        )
    if parsed.state != "UP" and not found:
        found.append(
            Finding(
                "IMEX-001",
                Status.FAIL,
                Subject(node=here),
                f"IMEX domain {parsed.state} as {here} sees it",
                parsed.state,
                "UP",
                remediation=FIX_NODE,
            )
        )
    if not found:
        found.append(
            Finding(
                "IMEX-OK",
                Status.OK,
                Subject(node=here),
                f"IMEX domain UP: {len(parsed.nodes)} nodes READY, all connected",
                len(parsed.nodes),
                len(trays) or len(parsed.nodes),
                "nodes",
            )
        )
    return found


def _nodes(
    parsed: ImexDomain,
    here: str | None,
    driver: str | None,
    subject: Callable[[ImexNode], Subject],
    label: Callable[[ImexNode], str],
) -> list[Finding]:
    """Every node READY, at the driver's version."""
    found: list[Finding] = []
    for n in parsed.nodes:
        if n.state != "READY":
            found.append(
                Finding(
                    "IMEX-002",
                    Status.FAIL,
                    subject(n),
                    f"{label(n)} is {n.state} as {here} sees the domain",
                    n.state,
                    "READY",
                    remediation=FIX_NODE,
                )
            )
        elif driver is not None and n.version is not None and n.version != driver:
            found.append(
                Finding(
                    "IMEX-004",
                    Status.FAIL,
                    subject(n),
                    f"{label(n)} runs IMEX {n.version}, the driver pinned is {driver}: IMEX "
                    "must be the driver's exact version",
                    n.version,
                    driver,
                    remediation="install the nvidia-imex package of the driver (rackops provision)",
                )
            )
    return found


def _links(
    parsed: ImexDomain,
    here: str | None,
    label: Callable[[ImexNode], str],
    named: dict[int, Node | None],
) -> list[Finding]:
    """Every connection of the matrix C, between nodes that are READY. A lost connection is
    the pair's, named by its first tray whichever tray looked and whichever way it was seen
    (every tray's table holds the whole matrix: one culprit, not one per tray)."""
    found: list[Finding] = []
    by_index = {n.index: n for n in parsed.nodes}
    down = {n.index for n in parsed.nodes if n.state != "READY"}
    for link in parsed.links:
        if link.state == "C" or link.dst in down or link.src in down:
            continue  # a node that is not READY is named once, not by each of its links
        a, b = by_index.get(link.src), by_index.get(link.dst)
        what = CONNECTION.get(link.state, link.state)
        ends = sorted(t.name for t in (named.get(link.src), named.get(link.dst)) if t is not None)
        found.append(
            Finding(
                "IMEX-005",
                Status.FAIL,
                Subject(node=ends[0] if ends else here),
                f"IMEX connection {label(a) if a else link.src} -> "
                f"{label(b) if b else link.dst}: {link.state} ({what})",
                link.state,
                "C",
                remediation="check the IMEX network between the two trays (the addresses in "
                "nodes_config.cfg) and that both list the same nodes"
                + (" (!M!: their nodes_config.cfg differ)" if link.state == "!M!" else ""),
            )
        )
    return found


FIX_CHANNEL = (
    "give the tray IMEX channel 0 at the channel class's major: load the nvidia module with "
    "NVreg_CreateImexChannel0=1, or `mknod -m 666 /dev/nvidia-caps-imex-channels/channel0 c "
    "<major of nvidia-caps-imex-channels in /proc/devices> 0` (channels do not survive a "
    "reboot)"
)


def check_imex_node(
    parsed: ImexNodeState, *, node: Node | None, cluster: Cluster | None
) -> list[Finding]:
    """One tray's own IMEX: its daemon READY, the IMEX channel class and channel 0 at its
    major and minor 0 (a channel0 made with nvidia-caps' numbers, as on a real GB200 NVL72
    node, gives every workload CUDA_ERROR_NOT_PERMITTED), and a nodes_config.cfg of the
    domain's trays, each once. The same file on every tray is the domain stage's to judge."""
    here = Subject(node=None if node is None else node.name)
    if not parsed.complete:
        return [
            Finding(
                "IMEX-010",
                Status.ERROR,
                here,
                "the tray's IMEX read is not whole (a part is missing, or it was cut)",
                remediation="run it again; it reads /proc/devices, /dev/nvidia-caps-imex-channels "
                "and /etc/nvidia-imex/nodes_config.cfg, and asks nvidia-imex-ctl -q",
            )
        ]
    found: list[Finding] = []
    if parsed.ctl != "READY":
        said = "; ".join(parsed.ctl_said[:3]) or "nothing (no daemon answered)"
        found.append(
            Finding(
                "IMEX-011",
                Status.FAIL,
                here,
                f"IMEX on this tray is not READY: nvidia-imex-ctl -q said {said}",
                parsed.ctl,
                "READY",
                remediation=FIX_NODE,
            )
        )
    channel0 = next((c for c in parsed.channels if c.name == "channel0"), None)
    if parsed.channel_major is None:
        found.append(
            Finding(
                "IMEX-012",
                Status.FAIL,
                here,
                "the driver has no IMEX channel class (no nvidia-caps-imex-channels in "
                "/proc/devices): no workload can import memory across the domain",
                remediation="load a driver with IMEX channels (R550+; the GB200 pin) and check "
                "the nvidia module loaded",
            )
        )
    elif channel0 is None:
        found.append(
            Finding(
                "IMEX-013",
                Status.FAIL,
                here,
                "no IMEX channel 0 (/dev/nvidia-caps-imex-channels/channel0"
                + (f": {parsed.channels_error}" if parsed.channels_error else "")
                + "): NCCL's MNNVL and every CUDA fabric allocation need one",
                remediation=FIX_CHANNEL,
            )
        )
    elif (channel0.kind, channel0.major, channel0.minor) != ("c", parsed.channel_major, 0):
        found.append(
            Finding(
                "IMEX-014",
                Status.FAIL,
                here,
                f"IMEX channel 0 is {'a device ' if channel0.kind == 'c' else 'not a device, '}"
                f"{channel0.major},{channel0.minor}; the channel class is major "
                f"{parsed.channel_major} (minor 0): a fabric allocation through it fails "
                "(CUDA_ERROR_NOT_PERMITTED)",
                f"{channel0.major},{channel0.minor}",
                f"{parsed.channel_major},0",
                remediation="remove it, then " + FIX_CHANNEL,
            )
        )
    found += _nodes_config(parsed, here, len(_trays(cluster, node)))
    return found or [
        Finding(
            "IMEX-010",
            Status.OK,
            here,
            f"IMEX READY; channel 0 at {parsed.channel_major},0; nodes_config.cfg lists "
            f"{len(parsed.nodes)} nodes",
        )
    ]


def judge_nodes_configs(domain: str, configs: dict[str, tuple[str, ...]]) -> list[Finding]:
    """The domain's trays each read nodes_config.cfg once (``configs``: tray → its entries,
    in order): a tray whose file is not the one most trays share is named (IMEX refuses a
    node map that differs, ``!M!``, and logs "Node configuration mapping mismatch")."""
    if len(configs) < 2:
        return []
    counts: dict[tuple[str, ...], int] = {}
    for entries in configs.values():
        counts[entries] = counts.get(entries, 0) + 1
    major, held = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    if held * 2 <= len(configs) and len(counts) > 1:
        return [
            Finding(
                "IMEX-016",
                Status.FAIL,
                Subject(),
                f"domain {domain}: its trays' nodes_config.cfg are {len(counts)} different "
                "files, none held by most trays",
                remediation="write one nodes_config.cfg (every tray once, one order) to every "
                "tray, then restart nvidia-imex on each",
                action="node",
            )
        ]
    return [
        Finding(
            "IMEX-016",
            Status.FAIL,
            Subject(node=tray),
            f"{tray}'s nodes_config.cfg is not the domain's ({held} of {len(configs)} trays "
            f"share one of {len(major)} entries): "
            + (
                f"it lists {len(entries)}"
                if len(entries) != len(major)
                else "the same count, another order or other entries"
            ),
            len(entries),
            len(major),
            remediation="copy the domain's nodes_config.cfg to this tray, then restart "
            "nvidia-imex on it",
        )
        for tray, entries in sorted(configs.items())
        if entries != major
    ]


def _nodes_config(parsed: ImexNodeState, here: Subject, trays: int) -> list[Finding]:
    """The tray's nodes_config.cfg lists each of the domain's ``trays`` once."""
    twice = sorted(n for n, k in Counter(parsed.nodes).items() if k > 1)
    if parsed.nodes and not twice and (not trays or len(parsed.nodes) == trays):
        return []
    why = (
        (parsed.nodes_error or "it lists no node")
        if not parsed.nodes
        else f"{', '.join(twice)} listed twice"
        if twice
        else f"it lists {len(parsed.nodes)} nodes, the domain has {trays} trays"
    )
    return [
        Finding(
            "IMEX-015",
            Status.FAIL,
            here,
            f"/etc/nvidia-imex/nodes_config.cfg: {why}",
            len(parsed.nodes),
            trays or None,
            remediation="list every tray of the domain once, in the same order on every tray "
            "(IMEX reads it only when it starts: restart nvidia-imex after)",
        )
    ]
