"""``rackops render``: switch QoS/MTU configs and the host side of the same intent, from
one computation, each read back and checked before it is written."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import jinja2
import yaml

from rackops import __version__, data
from rackops.consistency import Intent
from rackops.design import node_design
from rackops.diagnostics import Diagnostic, Level
from rackops.docload import load_json
from rackops.inventory.model import Cluster
from rackops.names import safe_file_stem
from rackops.outdir import write_under
from rackops.render import diff, nvue, sonic
from rackops.render.verify import READERS, check_ports
from rackops.render.view import RenderError, SwitchView, host_view, switch_view
from rackops.tools import mlnx_qos

TEMPLATES = data.path("templates") / "switch"
# text formats are Jinja templates; data formats (SONiC CONFIG_DB JSON, the NVUE tree) are
# built as data and serialised (render/sonic.py, render/nvue.py)
TEMPLATED = {
    "eos": ["running-config"],
    "mlnx-os": ["partitions.conf"],
}
PRIMARY = {"sonic": "config_db.json", "cumulus": "startup.yaml", "eos": "running-config"}


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\u2028\u2029]")


def one_line(value: Any) -> Any:
    """Every value a template prints: it may not add a line to the config (a second guard
    behind the inventory's name checks)."""
    if isinstance(value, str) and _CONTROL.search(value):
        raise RenderError(f"{value!r} would add a line to a switch config; fix the inventory")
    return value


def output_file(directory: Path, name: str, suffix: str = "") -> Path:
    """``directory/<name><suffix>``, refused unless ``name`` is a plain name that stays in
    ``directory`` (a second guard behind the inventory's name checks)."""
    path = directory / f"{name}{suffix}"
    if not safe_file_stem(name) or path.resolve().parent != directory.resolve():
        raise RenderError(f"{name!r} cannot name a file in {directory}; fix the inventory")
    return path


@functools.cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        finalize=one_line,
    )


def render_switch(cluster: Cluster, name: str, inventory: str) -> dict[str, str]:
    sw = next((s for s in cluster.switches if s.name == name), None)
    if sw is None:
        raise RenderError(f"no switch {name!r} in the inventory")
    view = switch_view(cluster, sw)
    header = {
        "tool": f"rackops {__version__}",
        "inventory": inventory,
        "line": f"rendered by rackops {__version__} from {inventory} for {sw.name}; "
        f"do not edit, re-render",
    }
    if sw.os == "sonic":
        return _sonic_files(view)
    if sw.os == "cumulus":
        t = nvue.tree(view)
        return {
            "startup.yaml": nvue.startup_yaml(
                t,
                f"{header['line']}\nNVUE startup YAML (Cumulus Linux {view.os_version}): "
                f"`nv config replace <file>`, then `nv config apply`",
            ),
            "nv-set.txt": nvue.nv_set_text(
                t, f"{header['line']}\nThe same configuration as startup.yaml, as NVUE commands"
            ),
        }
    env = _env()
    return {
        f: env.get_template(f"{sw.os}/{f}.j2").render(sw=view, q=view.qos, header=header)
        for f in TEMPLATED[sw.os]
    }


def _sonic_files(view: SwitchView) -> dict[str, str]:
    """config_db.json needs every port's lanes (a new switch is built from it); without them
    only the tables are rendered, for a patch against the running config (--running)."""
    db = sonic.config_db(view)
    if sonic.missing_lanes(view):
        return {"tables.json": json.dumps(db, indent=2) + "\n"}
    return {"config_db.json": json.dumps(db, indent=2) + "\n"}


def render_notes(cluster: Cluster, name: str) -> list[Diagnostic]:
    """What a render could not produce, and the fix (warnings, not read-back errors)."""
    sw = next(s for s in cluster.switches if s.name == name)
    if sw.os != "sonic":
        return []
    missing = sonic.missing_lanes(switch_view(cluster, sw))
    if not missing:
        return []
    return [
        Diagnostic(
            "R-01",
            Level.WARNING,
            f"{sw.name}: no config_db.json: rackops_switch_port_lanes has no lanes for "
            f"{', '.join(missing)} (PORT.lanes is mandatory in sonic-port.yang). Give them "
            f"(from the platform's port_config.ini or `show interfaces status`), or render "
            f"with --running DIR holding the switch's config_db.json to get a JSON Patch; "
            f"tables.json holds the QoS tables meanwhile",
            subject=sw.name,
            key="rackops_switch_port_lanes",
        )
    ]


def verify_switch(cluster: Cluster, name: str, files: dict[str, str]) -> list[Diagnostic]:
    sw = next(s for s in cluster.switches if s.name == name)
    if sw.os not in PRIMARY:
        return []
    primary = next((f for f in (PRIMARY[sw.os], "tables.json") if f in files), None)
    if primary is None:
        return []
    ports = READERS[sw.os](files[primary])
    return check_ports(sw.name, ports, Intent.of(cluster), f"{sw.name}/{primary}")


RUNNING_SUFFIX = {"sonic": ".json", "cumulus": ".yaml", "eos": ".cfg"}


def switch_changes(
    cluster: Cluster, name: str, files: dict[str, str], running_text: str
) -> tuple[list[str], dict[str, str]]:
    """The minimal change from a saved running config to the design: the lines a reader
    checks, and the files a push applies (SONiC: config-patch.json)."""
    sw = next(s for s in cluster.switches if s.name == name)
    ports = list(sw.ports)
    if sw.os == "sonic":
        running = load_json(running_text)
        if not isinstance(running, dict):
            raise ValueError("not a CONFIG_DB JSON object")
        desired = sonic.config_db(switch_view(cluster, sw))
        for entry in desired["PORT"].values():  # the switch's breakout owns its lanes
            entry.pop("lanes", None)
        ops = diff.sonic_patch(running, desired, ports)
        diff.apply_patch(running, ops)  # raises if the switch lacks a port of the design
        return diff.describe_patch(ops, running), {
            "config-patch.json": json.dumps(ops, indent=2) + "\n"
        }
    if sw.os == "cumulus":
        lines = diff.nvue_changes(
            diff.nvue_running(running_text), nvue.tree(switch_view(cluster, sw)), ports
        )
        return lines, {"nv-changes.txt": "\n".join([*lines, "nv config apply -y"]) + "\n"}
    if sw.os == "eos":
        return diff.eos_changes(running_text, files["running-config"], ports), {}
    raise ValueError(f"{sw.os}: rackops does not diff this network OS")


def render_host(cluster: Cluster, node: str) -> str:
    """One host's side of the fabric design: the commands and values the roce_host_qos role
    applies, from the host's computed design (its own overrides included) — never from the
    rack-wide view, which only refuses a design no switch could carry."""
    v = host_view(cluster, node)
    design = node_design(cluster, node)
    data: dict[str, object] = {"node": v.node, "mtu": v.mtu, "netdevs": list(v.netdevs)}
    if v.qos is not None and design.roce is not None:
        q, d = v.qos, design.roce
        data.update(
            {
                "mlnx_qos": [argv for nd in v.netdevs for argv in mlnx_qos.apply_argvs(nd, d)],
                "ecn": {
                    nd: {
                        f"roce_np/enable/{d.priority}": 1,
                        f"roce_rp/enable/{d.priority}": 1,
                        "roce_np/cnp_dscp": d.cnp_dscp,
                        "roce_np/cnp_802p_prio": d.cnp_priority,
                    }
                    for nd in v.netdevs
                },
                "roce_tos": {dev: d.tos for dev in v.devices},
                "nccl_env": {"NCCL_IB_TC": str(d.tos), "NCCL_IB_HCA": ",".join(v.devices)},
                # the host's design as the roles read it, and the switch side it relies on
                "intent": design.as_vars()["roce"]
                | {
                    "ecn_min_bytes": q.ecn_min_bytes,
                    "ecn_max_bytes": q.ecn_max_bytes,
                    "ecn_probability_pct": q.ecn_probability_pct,
                    "watchdog": q.watchdog,
                },
            }
        )
    header = f"# rendered by rackops {__version__}: host side of the fabric design for {node}\n"
    return header + yaml.safe_dump(data, sort_keys=False, width=100)


def render_all(
    cluster: Cluster, inventory: str, out: Path, only: str | None = None
) -> tuple[list[Path], list[Diagnostic]]:
    written: list[Path] = []
    problems: list[Diagnostic] = []
    for sw in cluster.switches:
        if only and sw.name != only:
            continue
        files = render_switch(cluster, sw.name, inventory)
        problems += verify_switch(cluster, sw.name, files)
        files["rendered-by.txt"] = (
            f"rendered by rackops {__version__} from {inventory} "
            f"for {sw.name} ({sw.os}); do not edit, re-render\n"
        )
        for fname, text in files.items():
            output_file(out / "switches", sw.name)  # a plain name (the second guard)
            written.append(write_under(out, Path("switches", sw.name, fname), text))
    if only is None:
        for node in cluster.nodes:
            output_file(out / "hosts", node.name, ".yaml")
            path = Path("hosts", f"{node.name}.yaml")
            written.append(write_under(out, path, render_host(cluster, node.name)))
    return written, problems
