"""SONiC CONFIG_DB for the design: one dict, from which ``config_db.json`` (``config load``,
a switch built from it) and the JSON Patch (``config apply-patch``, a switch that runs) are
both written. CONFIG_DB is data, so it is built as data and serialised, never templated.

Sources per table family (docs/design.md has the list):
- QoS maps, PORT_QOS_MAP, SCHEDULER, QUEUE, WRED_PROFILE, PFC_WD: the YANG models vendored in
  ../shared/vendor/sonic-yang and sonic-buildimage ``files/build_templates/qos_config.j2``.
- Buffers: ``files/build_templates/buffers_config.j2`` and the NVIDIA Spectrum
  ``buffers_defaults_objects.j2`` (dynamic model), config.md §1.1.1–1.1.2.
"""

from __future__ import annotations

from typing import Any

from rackops.render.view import RenderError, SwitchView

# SONiC's own default names for the singleton buffer-parameter tables (buffers_config.j2)
AZURE = "AZURE"
MAP = "ROCE"


def _ranges(queues: list[int]) -> list[str]:
    """[0, 1, 2, 4, 5, 6] -> ['0-2', '4-6'] (BUFFER_QUEUE / BUFFER_PG key syntax)."""
    out: list[str] = []
    start = prev = None
    for q in [*queues, None]:
        if q is not None and prev is not None and q == prev + 1:
            prev = q
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = q
    return out


def missing_lanes(v: SwitchView) -> list[str]:
    return [p.name for p in v.ports if p.lanes is None]


def config_db(v: SwitchView) -> dict[str, Any]:
    """The CONFIG_DB tables rackops owns for this switch, all values strings."""
    q = v.qos
    meta: dict[str, str] = {"hostname": v.name}
    port: dict[str, dict[str, str]] = {}
    for p in v.ports:
        entry = {
            "admin_status": "up",
            "mtu": str(v.mtu),
            "speed": str(p.speed_gbps * 1000),
            "description": p.peer,
        }
        if p.lanes is not None:
            entry["lanes"] = p.lanes
        port[p.name] = entry
    db: dict[str, Any] = {"DEVICE_METADATA": {"localhost": meta}, "PORT": port}
    if q is None:
        return db
    names = [p.name for p in v.ports]
    lossless = sorted(q.pfc_priorities)  # priority == TC == queue == PG (identity maps)
    be = next(t for t in range(8) if t not in (q.roce_tc, q.cnp_tc))
    lossy_pg = next(t for t in range(8) if t not in lossless)  # PG 0 unless 0 is lossless
    dynamic = v.buffers.model == "dynamic"
    meta["buffer_model"] = v.buffers.model
    meta["default_pfcwd_status"] = "enable" if q.watchdog else "disable"

    db["DSCP_TO_TC_MAP"] = {MAP: {str(d): str(tc) for d, tc in enumerate(q.dscp_to_tc)}}
    db["TC_TO_PRIORITY_GROUP_MAP"] = {
        MAP: {str(tc): str(tc if tc in lossless else lossy_pg) for tc in range(8)}
    }
    db["TC_TO_QUEUE_MAP"] = {MAP: {str(tc): str(tc) for tc in range(8)}}
    db["MAP_PFC_PRIORITY_TO_QUEUE"] = {MAP: {str(p): str(p) for p in range(8)}}
    db["PFC_PRIORITY_TO_PRIORITY_GROUP_MAP"] = {MAP: {str(p): str(p) for p in lossless}}
    db["SCHEDULER"] = {
        "roce_dwrr": {"type": "DWRR", "weight": "50"},
        "be_dwrr": {"type": "DWRR", "weight": "50"},
        "cnp_strict": {"type": "STRICT"},
    }
    db["WRED_PROFILE"] = {
        "ROCE_LOSSLESS": {
            "ecn": "ecn_all",  # marks every colour; there is no ecn_ecn (config.md §1.1.1)
            "wred_green_enable": "true",
            "green_min_threshold": str(q.ecn_min_bytes),
            "green_max_threshold": str(q.ecn_max_bytes),
            "green_drop_probability": str(q.ecn_probability_pct),
        }
    }
    pfc = ",".join(str(p) for p in lossless)
    db["PORT_QOS_MAP"] = {"global": {"dscp_to_tc_map": MAP}} | {
        n: {
            "dscp_to_tc_map": MAP,
            "tc_to_pg_map": MAP,
            "tc_to_queue_map": MAP,
            "pfc_to_queue_map": MAP,
            "pfc_to_pg_map": MAP,
            "pfc_enable": pfc,
            "pfcwd_sw_enable": pfc if q.watchdog else "",
        }
        for n in names
    }
    queue: dict[str, dict[str, str]] = {}
    for n in names:
        queue[f"{n}|{q.roce_tc}"] = {"scheduler": "roce_dwrr", "wred_profile": "ROCE_LOSSLESS"}
        queue[f"{n}|{q.cnp_tc}"] = {"scheduler": "cnp_strict"}
        queue[f"{n}|{be}"] = {"scheduler": "be_dwrr"}
    db["QUEUE"] = queue
    db.update(_buffers(v, names, lossless, lossy_pg, dynamic))
    if q.watchdog:
        poll = min(q.watchdog_detect_ms, q.watchdog_restore_ms, 1000)
        db["PFC_WD"] = {"GLOBAL": {"POLL_INTERVAL": str(poll)}} | {
            n: {
                "action": q.watchdog_action,
                "detection_time": str(q.watchdog_detect_ms),
                "restoration_time": str(q.watchdog_restore_ms),
            }
            for n in names
        }
    return db


def _buffers(
    v: SwitchView, names: list[str], lossless: list[int], lossy_pg: int, dynamic: bool
) -> dict[str, Any]:
    """Pools, profiles and their per-port bindings. Dynamic model: pools without sizes,
    lossless PGs bound to NULL so that buffermgrd computes headroom from speed, cable length
    (CABLE_LENGTH) and MTU, steered by DEFAULT_LOSSLESS_BUFFER_PARAMETER and
    LOSSLESS_TRAFFIC_PATTERN. Traditional model: the platform's pool sizes and a static
    ``pg_lossless_<speed>_<cable>_profile`` per speed/cable pair."""
    b = v.buffers
    mode = "dynamic" if dynamic else "static"

    def pool(name: str, kind: str) -> dict[str, str]:
        entry = {"type": kind, "mode": mode}
        if name in b.pools:
            entry["size"] = str(b.pools[name])
        return entry

    out: dict[str, Any] = {
        "BUFFER_POOL": {
            "ingress_lossless_pool": pool("ingress_lossless_pool", "ingress"),
            "egress_lossless_pool": pool("egress_lossless_pool", "egress"),
            "egress_lossy_pool": pool("egress_lossy_pool", "egress"),
        }
    }
    profiles = {
        "ingress_lossless_profile": {
            "pool": "ingress_lossless_pool",
            "size": "0",
            "dynamic_th": "7",
        },
        "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "3"},
        "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "dynamic_th": "7"},
        "egress_lossy_profile": {"pool": "egress_lossy_pool", "size": "9216", "dynamic_th": "7"},
        "q_lossy_profile": {"pool": "egress_lossy_pool", "size": "0", "dynamic_th": "3"},
    }
    pg: dict[str, dict[str, str]] = {}
    lossless_key = ",".join(_ranges(lossless))
    for p in v.ports:
        if dynamic:
            pg[f"{p.name}|{lossless_key}"] = {"profile": "NULL"}
        else:
            h = b.headroom
            if h is None:  # the model refuses this; keep mypy and a future caller honest
                raise RenderError(f"{v.name}: traditional buffers need rackops_switch_buffers")
            name = f"pg_lossless_{p.speed_gbps * 1000}_{p.cable_m}m_profile"
            profiles[name] = {
                "pool": "ingress_lossless_pool",
                "size": str(h.size),
                "xon": str(h.xon),
                "xoff": str(h.xoff),
                "dynamic_th": str(h.dynamic_th),
            }
            pg[f"{p.name}|{lossless_key}"] = {"profile": name}
        pg[f"{p.name}|{lossy_pg}"] = {"profile": "ingress_lossy_profile"}
    out["BUFFER_PROFILE"] = profiles
    out["BUFFER_PG"] = pg
    lossy = [i for i in range(8) if i not in lossless]
    out["BUFFER_QUEUE"] = {
        f"{n}|{lossless_key}": {"profile": "egress_lossless_profile"} for n in names
    } | {f"{n}|{r}": {"profile": "q_lossy_profile"} for n in names for r in _ranges(lossy)}
    out["BUFFER_PORT_INGRESS_PROFILE_LIST"] = {
        n: {"profile_list": "ingress_lossless_profile"} for n in names
    }
    out["BUFFER_PORT_EGRESS_PROFILE_LIST"] = {
        n: {"profile_list": "egress_lossless_profile,egress_lossy_profile"} for n in names
    }
    out["CABLE_LENGTH"] = {AZURE: {p.name: f"{p.cable_m}m" for p in v.ports}}
    if dynamic:
        out["DEFAULT_LOSSLESS_BUFFER_PARAMETER"] = {AZURE: {"default_dynamic_th": "0"}}
        out["LOSSLESS_TRAFFIC_PATTERN"] = {AZURE: {"mtu": "1024", "small_packet_percentage": "50"}}
    return out
