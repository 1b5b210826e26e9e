"""Prove a rendered switch config, don't just trust it: read it back (JSON for SONiC, YAML
for NVUE, a small line reader for the EOS lines rackops emits) into one neutral shape, and
check the §10 rules per port against the host intent."""

from __future__ import annotations

import re
from typing import Any

from rackops.consistency import Intent, PortQos, check_port
from rackops.diagnostics import Diagnostic, Level
from rackops.docload import load_json, load_yaml

PortConfig = PortQos  # the normalised port view every reader fills


def read_sonic(text: str) -> dict[str, PortConfig]:
    db = load_json(text)
    out = {}
    maps = db.get("DSCP_TO_TC_MAP", {})
    wred = db.get("WRED_PROFILE", {})
    sched = db.get("SCHEDULER", {})
    for port, attrs in db.get("PORT", {}).items():
        pc = PortConfig(mtu=int(attrs["mtu"]) if "mtu" in attrs else None)
        qm = db.get("PORT_QOS_MAP", {}).get(port)
        if qm:
            m = maps.get(qm.get("dscp_to_tc_map", ""), {})
            pc.trust_dscp = bool(m)
            pc.dscp_to_tc = {int(k): int(v) for k, v in m.items()}
            pc.pfc = tuple(int(p) for p in qm.get("pfc_enable", "").split(",") if p)
            pc.watchdog = port in db.get("PFC_WD", {}) and qm.get("pfcwd_sw_enable") == qm.get(
                "pfc_enable"
            )
        strict = []
        for key, q in db.get("QUEUE", {}).items():
            qport, _, qid = key.partition("|")
            if qport != port:
                continue
            kind = sched.get(q.get("scheduler", ""), {}).get("type")
            if kind:
                pc.queue_modes[int(qid)] = "strict" if kind == "STRICT" else kind.lower()
            if kind == "STRICT":
                strict.append(int(qid))
            prof = wred.get(q.get("wred_profile", ""))
            if (
                prof
                and prof.get("ecn", "ecn_none") != "ecn_none"
                and prof.get("wred_green_enable") == "true"
            ):
                pc.ecn_queue = int(qid)
                pc.ecn_min = int(prof["green_min_threshold"])
                pc.ecn_max = int(prof["green_max_threshold"])
        pc.strict_queues = tuple(sorted(strict))
        pc.lossless_headroom = _sonic_headroom(db, port, pc.pfc)
        out[port] = pc
    return out


def _pgs(spec: str) -> set[int]:
    lo, _, hi = spec.partition("-")
    return (
        set(range(int(lo), int(hi or lo) + 1)) if lo.isdigit() and (hi or lo).isdigit() else set()
    )


def _sonic_headroom(db: dict[str, Any], port: str, pfc: tuple[int, ...]) -> bool | None:
    """Every PFC priority's priority group of the port has a BUFFER_PG entry (a lossless
    profile, or NULL in the dynamic model); None when the file has no buffer tables."""
    pgs = db.get("BUFFER_PG")
    if pgs is None:
        return None
    tc_to_pg: dict[str, Any] = next(
        iter(db.get("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", {}).values()), {}
    )
    covered: set[int] = set()
    for key, v in pgs.items():
        kport, _, spec = key.partition("|")
        if kport == port and "lossy" not in str(v.get("profile", "")):
            covered |= _pgs(spec)
    return all(int(tc_to_pg.get(str(p), p)) in covered for p in pfc)


def read_nvue(text: str) -> dict[str, PortConfig]:
    docs = load_yaml(text)
    conf: dict[str, Any] = {}
    for doc in docs or []:
        conf.update(doc.get("set", {}))
    qos = conf.get("qos", {})
    mapping = qos.get("mapping", {}).get("default-global", {})
    trust = mapping.get("trust") in ("l3", "both")
    table = {d >> 0: d >> 3 for d in range(64)} if trust else {}
    for dscp, v in (mapping.get("dscp") or {}).items():
        table[int(dscp)] = int(v["switch-priority"])
    pfc = tuple(
        sorted(
            int(p)
            for p in (qos.get("pfc", {}).get("default-global", {}).get("switch-priority") or {})
        )
    )
    ecn_tc = mn = mx = None
    for tc, v in (
        qos.get("congestion-control", {}).get("default-global", {}).get("traffic-class") or {}
    ).items():
        if v.get("ecn") in ("enable", "enabled"):  # Cumulus <= 5.14 / >= 5.15
            ecn_tc, mn, mx = int(tc), int(v["min-threshold"]), int(v["max-threshold"])
    modes = {
        int(tc): str(v.get("mode"))
        for tc, v in (
            qos.get("egress-scheduler", {}).get("default-global", {}).get("traffic-class") or {}
        ).items()
        if v.get("mode")
    }
    strict = tuple(sorted(tc for tc, m in modes.items() if m == "strict"))
    headroom = (qos.get("roce") or {}).get("mode") in ("lossless", "lossless-single-ipool")
    out = {}
    for port, v in (conf.get("interface") or {}).items():
        wd = (v.get("qos") or {}).get("pfc-watchdog", {}).get("state") in ("enable", "enabled")
        out[port] = PortConfig(
            mtu=(v.get("link") or {}).get("mtu"),
            trust_dscp=trust,
            dscp_to_tc=dict(table),
            pfc=pfc,
            ecn_queue=ecn_tc,
            ecn_min=mn,
            ecn_max=mx,
            strict_queues=strict,
            watchdog=wd,
            queue_modes=dict(modes),
            lossless_headroom=headroom if "roce" in qos else None,
        )
    return out


_EOS_MAP = re.compile(r"^qos map dscp (\d+) to traffic-class (\d+)$")
_EOS_ECN = re.compile(
    r"random-detect ecn minimum-threshold (\d+) bytes maximum-threshold "
    r"(\d+) bytes"
)


def read_eos(text: str) -> dict[str, PortConfig]:
    table = {d: d >> 3 for d in range(64)}
    profiles: dict[str, PortConfig] = {}
    profile = PortConfig()
    watchdog_global = False
    ports: dict[str, PortConfig] = {}
    section: str | None = None
    queue: int | None = None
    current: str | None = None
    for raw in text.splitlines():
        if not raw.strip() or raw.strip().startswith("!"):  # comments, also indented (!!)
            continue
        line = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if indent == 0:
            section, current, queue = line, None, None
            if m := _EOS_MAP.match(line):
                table[int(m.group(1))] = int(m.group(2))
            elif line.startswith("priority-flow-control pause watchdog default timeout"):
                watchdog_global = True
            elif line.startswith("interface "):
                current = line.split()[1]
                ports[current] = PortConfig()
            elif line.startswith("qos profile "):
                profile = profiles.setdefault(line.split()[2], PortConfig())
            continue
        if section is not None and section.startswith("qos profile "):
            if line == "qos trust dscp":
                profile.trust_dscp = True
            elif m := re.match(r"priority-flow-control priority (\d+) no-drop", line):
                profile.pfc = (*profile.pfc, int(m.group(1)))
            elif m := re.match(r"(?:uc-)?tx-queue (\d+)", line):
                queue = int(m.group(1))
                # EOS serves a tx-queue strict unless it says `no priority`
                profile.queue_modes.setdefault(queue, "strict (EOS default)")
                if queue not in profile.strict_queues:
                    profile.strict_queues = (*profile.strict_queues, queue)
            elif (m := _EOS_ECN.search(line)) and queue is not None:
                profile.ecn_queue, profile.ecn_min, profile.ecn_max = (
                    queue,
                    int(m.group(1)),
                    int(m.group(2)),
                )
            elif line == "priority strict" and queue is not None:
                profile.queue_modes[queue] = "strict"
            elif line == "no priority" and queue is not None:
                profile.queue_modes[queue] = "dwrr"
                profile.strict_queues = tuple(x for x in profile.strict_queues if x != queue)
        elif current is not None:
            if line.startswith("mtu "):
                ports[current].mtu = int(line.split()[1])
            elif line.startswith("service-profile ") and line.split()[1] in profiles:
                profile = profiles[line.split()[1]]
                ports[current].trust_dscp = profile.trust_dscp
                ports[current].dscp_to_tc = dict(table)
                ports[current].pfc = profile.pfc
                ports[current].ecn_queue = profile.ecn_queue
                ports[current].ecn_min, ports[current].ecn_max = profile.ecn_min, profile.ecn_max
                ports[current].strict_queues = profile.strict_queues
                ports[current].queue_modes = dict(profile.queue_modes)
                ports[current].watchdog = watchdog_global
    return ports


READERS = {"sonic": read_sonic, "cumulus": read_nvue, "eos": read_eos}


def check_ports(
    switch: str, ports: dict[str, PortQos], intent: Intent, path: str | None = None
) -> list[Diagnostic]:
    """The §10 port rules (rackops.consistency) on every port of a switch config."""
    out: list[Diagnostic] = []
    for port, pc in ports.items():
        for v in check_port(intent, pc):
            level = Level.ERROR if v.severity == "error" else Level.WARNING
            out.append(
                Diagnostic(
                    v.code,
                    level,
                    f"{switch} port {port}: {v.message} — {v.fix}",
                    path,
                    None,
                    switch,
                    port,
                )
            )
    return out


FIELDS = (
    "mtu",
    "trust_dscp",
    "pfc",
    "ecn_queue",
    "ecn_min",
    "ecn_max",
    "strict_queues",
    "watchdog",
)


def diff_ports(rendered: dict[str, PortConfig], running: dict[str, PortConfig]) -> list[str]:
    """The QoS/MTU differences a push would make, one line per port and field."""
    out = []
    for port in sorted(set(rendered) | set(running)):
        want, have = rendered.get(port), running.get(port)
        if want is None:
            out.append(f"{port}: on the switch, not in the design (left as is)")
            continue
        if have is None:
            out.append(f"{port}: missing on the switch; would be configured")
            continue
        for f in FIELDS:
            a, b = getattr(have, f), getattr(want, f)
            if a != b:
                out.append(f"{port}: {f} {a!r} -> {b!r}")
        for dscp in sorted(set(want.dscp_to_tc) | set(have.dscp_to_tc)):
            a, b = have.dscp_to_tc.get(dscp), want.dscp_to_tc.get(dscp)
            if a != b:
                out.append(f"{port}: DSCP {dscp} -> TC {a} becomes {b}")
    return out
