"""Cumulus Linux NVUE: one config tree per switch, in the syntax of its release, from which
both ``startup.yaml`` (``nv config replace`` + ``nv config apply``) and the ``nv set`` commands
are written, so the two cannot say different things.

The tree mirrors the ``nv set`` path: every key is one word of the command, a leaf's value its
last word, an empty mapping a path set with no value (``nv set qos pfc default-global
switch-priority 3``). Syntax per release (docs/design.md cites the Cumulus documentation):
``SYNTAX`` holds every word that differs between releases; nothing else does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from rackops.render.view import RenderError, SwitchView


@dataclass(frozen=True)
class Syntax:
    release: str
    roce: dict[str, str]  # qos roce: how RoCE is switched on, beside mode
    ecn: dict[str, str]  # congestion-control traffic-class N: how ECN marking is switched on
    watchdog_state: tuple[str, str]  # interface qos pfc-watchdog state: (on, off)


# Cumulus Linux 5.15 renamed `nv set qos roce enable on|off` to `nv set qos roce state
# enabled|disabled` (5.15 "New and Changed NVUE Commands", On/Off tab); the NVUE command
# reference writes ECN as `ecn enabled` where the 5.14 guide has `ecn enable`. The interface
# PFC watchdog takes `state enable|disable` in both (the NVUE reference).
SYNTAX = {
    "5.14": Syntax("5.14", {"enable": "on"}, {"ecn": "enable"}, ("enable", "disable")),
    "5.15": Syntax("5.15", {"state": "enabled"}, {"ecn": "enabled"}, ("enable", "disable")),
}
OLDEST, NEWEST = "5.14", "5.15"


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".")[:2] if x.isdigit())


def syntax_for(release: str | None, switch: str) -> Syntax:
    """The syntax of a Cumulus release: 5.15 and later use the 5.15 words, 5.0-5.14 the 5.14
    words; an unset release is refused rather than guessed."""
    if release is None:
        raise RenderError(
            f"{switch}: set rackops_switch_os_version (e.g. '5.14' or '5.15'): NVUE syntax "
            f"changed in Cumulus Linux 5.15 and rackops renders the switch's own release"
        )
    v = _version(release)
    if len(v) < 2 or v[0] != 5:
        raise RenderError(
            f"{switch}: rackops_switch_os_version {release!r} is not a Cumulus Linux 5.x "
            f"release; NVUE exists from 5.0 (rackops renders 5.x: {OLDEST} and {NEWEST} syntax)"
        )
    return SYNTAX[NEWEST] if v >= _version(NEWEST) else SYNTAX[OLDEST]


def tree(v: SwitchView) -> dict[str, Any]:
    """The NVUE ``set`` tree for one switch."""
    s = syntax_for(v.os_version, v.name)
    q = v.qos
    out: dict[str, Any] = {}
    if q is not None:
        be = next(t for t in range(8) if t not in (q.roce_tc, q.cnp_tc))
        qos: dict[str, Any] = {
            "roce": {**s.roce, "mode": "lossless"},
            "mapping": {
                "default-global": {
                    "trust": "l3",
                    "dscp": {
                        str(d): {"switch-priority": q.dscp_to_tc[d]}
                        for d in (q.roce_dscp, q.cnp_dscp)
                    },
                }
            },
            "pfc": {"default-global": {"switch-priority": {str(p): {} for p in q.pfc_priorities}}},
            "congestion-control": {
                "default-global": {
                    "traffic-class": {
                        str(q.roce_tc): {
                            **s.ecn,
                            "min-threshold": q.ecn_min_bytes,
                            "max-threshold": q.ecn_max_bytes,
                            "probability": q.ecn_probability_pct,
                        }
                    }
                }
            },
            "egress-scheduler": {
                "default-global": {
                    "traffic-class": {
                        str(q.cnp_tc): {"mode": "strict"},
                        str(q.roce_tc): {"mode": "dwrr", "bw-percent": 50},
                        str(be): {"mode": "dwrr", "bw-percent": 50},
                    }
                }
            },
        }
        if q.watchdog:
            # NVUE acts after `robustness` polls that all see a storm: detection time =
            # polling-interval x robustness; polls every 100 ms (the minimum)
            poll = 100
            qos["pfc-watchdog"] = {
                "polling-interval": poll,
                "robustness": max(1, -(-q.watchdog_detect_ms // poll)),
            }
        out["qos"] = qos
    interfaces: dict[str, Any] = {}
    for p in v.ports:
        iface: dict[str, Any] = {
            "type": "swp",
            "description": p.peer,
            "link": {"mtu": v.mtu},
        }
        if q is not None:
            on, off = s.watchdog_state
            iface["qos"] = {"pfc-watchdog": {"state": on if q.watchdog else off}}
        interfaces[p.name] = iface
    out["interface"] = interfaces
    return out


def startup_yaml(t: dict[str, Any], header: str) -> str:
    body = yaml.safe_dump([{"set": t}], sort_keys=False, default_flow_style=False, width=200)
    return "".join(f"# {line}\n" for line in header.splitlines()) + body


def _word(x: Any) -> str:
    s = str(x)
    if not s or any(c.isspace() for c in s) or any(c in s for c in "'\"\\;|&$`"):
        return "'" + s.replace("'", "'\\''") + "'"
    return s


def set_lines(t: dict[str, Any], path: tuple[str, ...] = ()) -> list[str]:
    """Depth-first ``nv set`` commands for a tree, one per leaf or empty mapping."""
    out: list[str] = []
    for key, val in t.items():
        here = (*path, str(key))
        if isinstance(val, dict) and val:
            out += set_lines(val, here)
        else:
            words = [*here, *([] if val == {} else [val])]
            out.append("nv set " + " ".join(_word(w) for w in words))
    return out


def nv_set_text(t: dict[str, Any], header: str) -> str:
    head = "".join(f"# {line}\n" for line in header.splitlines())
    return head + "\n".join([*set_lines(t), "nv config apply"]) + "\n"


def leaves(t: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], str | None]:
    """path -> value (None for a path set without value), values as the CLI writes them."""
    if isinstance(t, dict):
        if not t and path:
            return {path: None}
        out: dict[tuple[str, ...], str | None] = {}
        for k, v in t.items():
            out.update(leaves(v, (*path, str(k))))
        return out
    if isinstance(t, bool):
        return {path: "on" if t else "off"}  # YAML 1.1 readers turn `on` into True
    return {path: str(t)}
