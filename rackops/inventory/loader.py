"""Load an Ansible inventory through ansible-core and build the rack model.

Variables are read exactly as Ansible reads them (``InventoryManager`` +
``VariableManager``: group_vars/host_vars precedence, INI or YAML), then checked
with pydantic. Every problem becomes a :class:`Diagnostic` that names the file
and line (from ansible-core's origin tags), the host and the key.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rackops.diagnostics import Diagnostic, Level
from rackops.errors import InventoryError, ProfileError
from rackops.inventory.files import scan
from rackops.inventory.model import (
    Cluster,
    Fabric,
    Hca,
    HostQos,
    Node,
    Switch,
    SwitchQos,
    Versions,
)
from rackops.inventory.templating import (
    Budget,
    DesignTemplar,
    PlainVars,
    Refused,
    TemplateFailed,
    is_template,
    plain_tree,
)
from rackops.names import host_name_problem, ssh_args_problem
from rackops.profiles import LoadedProfile, available_profiles, find_profile, load_profile_file

# Quiet ansible-core before it is imported: rackops reports problems itself.
# an inventory directory's profiles/ and suites/ are rackops' (profiles and suites that win
# over the built-in ones), never inventory sources Ansible should parse
INVENTORY_IGNORE = ("^profiles$", "^suites$")
os.environ["ANSIBLE_INVENTORY_IGNORE_REGEX"] = ",".join(
    [*filter(None, [os.environ.get("ANSIBLE_INVENTORY_IGNORE_REGEX")]), *INVENTORY_IGNORE]
)
os.environ.setdefault("ANSIBLE_LOCALHOST_WARNING", "False")
os.environ.setdefault("ANSIBLE_INVENTORY_UNPARSED_WARNING", "False")
os.environ.setdefault("ANSIBLE_DEPRECATION_WARNINGS", "False")

CONNECTION_VARS = (
    "ansible_connection",  # a switch with `local` is render-only: never read by a run
    "ansible_host",
    "ansible_port",
    "ansible_user",
    "ansible_become",
    "ansible_ssh_private_key_file",
    "ansible_ssh_common_args",
    "ansible_ssh_extra_args",
)
NODE_GROUP = "gpu_nodes"
SWITCH_GROUP = "switches"
SWITCH_OS_GROUPS = ("sonic", "cumulus", "eos", "mlnx_os")

Origin = tuple[str, int | None]
M = TypeVar("M", bound=BaseModel)

# model field -> inventory variable, per model
NODE_VARS = {
    "address": "ansible_host",
    "ssh_port": "ansible_port",
    "profile": "rackops_profile",
    "gpus": "rackops_gpus",
    "hcas": "rackops_hcas",
    "qos": "rackops_host_qos",
    "tuning": "rackops_host_tuning",
    "hw_root": "rackops_hw_root",
    "nvidia_stack": "rackops_nvidia_stack",
    "nvlink": "rackops_nvlink",
}
SWITCH_VARS = {
    "address": "ansible_host",
    "ssh_port": "ansible_port",
    "os": "rackops_switch_os",
    "role": "rackops_switch_role",
    "rail": "rackops_switch_rail",
    "ports": "rackops_switch_ports",
    "mtu": "rackops_switch_mtu",
    "qos": "rackops_switch_qos",
    "os_version": "rackops_switch_os_version",
    "port_lanes": "rackops_switch_port_lanes",
    "port_speed_gbps": "rackops_switch_port_speed_gbps",
    "cable_m": "rackops_switch_cable_m",
    "buffers": "rackops_switch_buffers",
    "uplinks": "rackops_switch_uplinks",
    "plane": "rackops_switch_plane",
}
DESIGN_VARS = ("rackops_fabric", "rackops_versions")


@dataclass
class HostVars:
    """Plain (untagged, templated) rackops variables of one host, with origins."""

    name: str
    values: dict[str, Any]
    origins: dict[tuple[Any, ...], Origin] = field(default_factory=dict)
    default_path: str | None = None

    def origin(self, *path: Any) -> Origin:
        """The file and line that set ``path`` (falls back to its parents, then
        to where the host itself is defined)."""
        for cut in range(len(path), 0, -1):
            found = self.origins.get(tuple(path[:cut]))
            if found is not None:
                return found
        return self.origins.get(("ansible_host",)) or (self.default_path or "<inventory>", None)


@dataclass
class LoadResult:
    """The model (when the inventory is readable) and every problem found."""

    inventory: Path
    cluster: Cluster | None
    diagnostics: list[Diagnostic]
    hostvars: dict[str, HostVars]
    profiles: dict[str, LoadedProfile]

    def origin(self, host: str, *path: Any) -> Origin:
        hv = self.hostvars.get(host)
        return hv.origin(*path) if hv else (str(self.inventory), None)

    def raise_for_errors(self) -> Cluster:
        errors = [d for d in self.diagnostics if d.level is Level.ERROR]
        if errors or self.cluster is None:
            first = errors[0] if errors else None
            if first is None:
                raise InventoryError("inventory has no usable rack", path=str(self.inventory))
            raise InventoryError(f"{first.code} {first.message}", path=first.path, line=first.line)
        return self.cluster


def display_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it lies below it."""
    return _display_path(str(path), str(Path.cwd()))


@lru_cache(maxsize=4096)  # every loaded value carries its file: resolve each file once
def _display_path(path: str, cwd: str) -> str:
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path(cwd).resolve()))
    except ValueError:
        return str(p)


def _origin_of(value: Any) -> Origin | None:
    try:  # ansible-core >= 2.19 tags every loaded value with where it came from
        from ansible._internal._datatag._tags import Origin as AnsibleOrigin
    except ImportError:  # pragma: no cover - older ansible-core: file-level only
        return None
    tag = AnsibleOrigin.get_tag(value)
    if tag is None or tag.path is None:
        return None
    return (display_path(tag.path), tag.line_num)


def _plain(value: Any, path: tuple[Any, ...], origins: dict[tuple[Any, ...], Origin]) -> Any:
    """Strip ansible's tagged types to builtins, recording each value's origin."""
    found = _origin_of(value)
    if found is not None:
        origins[path] = found
    if isinstance(value, Mapping):
        return {
            _plain(k, (), {}): _plain(v, (*path, _plain(k, (), {})), origins)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_plain(v, (*path, i), origins) for i, v in enumerate(value)]
    if isinstance(value, bool) or value is None:
        return value
    for kind in (int, float, str):
        if isinstance(value, kind):
            return kind(value)
    return value


def short_repr(value: Any, limit: int = 120) -> str:
    """``repr(value)``, cut to ``limit`` characters (a value in a message is evidence, not
    a copy of a file), and never an error (a 5000-digit int has no decimal repr)."""
    try:
        text = repr(value)
    except ValueError:
        text = f"<a {type(value).__name__} too large to print>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _loc_to_path(loc: tuple[int | str, ...], var_of: Mapping[str, str]) -> tuple[Any, ...]:
    if not loc:
        return ()
    head = var_of.get(str(loc[0]), str(loc[0]))
    return (head, *loc[1:])


def _validate(
    model: type[M],
    data: dict[str, Any],
    *,
    hv: HostVars,
    var_of: Mapping[str, str],
    subject: str,
    diagnostics: list[Diagnostic],
    root_var: str | None = None,
) -> M | None:
    data = {k: v for k, v in data.items() if v is not None}  # unset means missing
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            path = (root_var, *loc) if root_var else _loc_to_path(loc, var_of)
            key = ".".join(str(p) for p in path) or model.__name__
            file, line = hv.origin(*path)
            found = err.get("input")
            found_txt = "nothing" if err["type"] == "missing" else short_repr(found)
            if err["type"] == "missing":
                msg = f"{subject}: {key} is required but not set; add it"
            else:
                msg = f"{subject}: {key}: {err['msg']} (found {found_txt})"
            diagnostics.append(Diagnostic("INV001", Level.ERROR, msg, file, line, subject, key))
        return None


def _forget_cached_vars_files() -> None:
    """ansible-core caches which group_vars/host_vars files exist, per process.

    A long-lived process (the test suite, the lab) reads inventories that change
    between loads; start every load from the files as they are now.
    """
    try:
        from ansible.plugins.vars import host_group_vars
    except ImportError:  # pragma: no cover
        return
    for name in ("FOUND", "NAK"):
        cache: Any = getattr(host_group_vars, name, None)
        if cache is not None:
            cache.clear()


@contextmanager
def _file_plugins_only(enabled: bool) -> Iterator[None]:
    """While reading: Ansible's inventory plugins that read YAML or INI files and its vars
    plugin that reads group_vars/host_vars, nothing else (no script, auto, constructed,
    generator; no vars plugin from elsewhere) unless not ``enabled``; and a source Ansible
    cannot parse is an error, never a warning and a half-read rack."""
    import ansible.constants as c

    saved = (c.INVENTORY_ENABLED, c.VARIABLE_PLUGINS_ENABLED, c.INVENTORY_ANY_UNPARSED_IS_FAILED)
    if enabled:
        c.INVENTORY_ENABLED = ["yaml", "ini"]
        c.VARIABLE_PLUGINS_ENABLED = ["host_group_vars"]
    c.INVENTORY_ANY_UNPARSED_IS_FAILED = True  # a half-read inventory is not the rack
    try:
        yield
    finally:
        c.INVENTORY_ENABLED, c.VARIABLE_PLUGINS_ENABLED, c.INVENTORY_ANY_UNPARSED_IS_FAILED = saved


def _read_hostvars(path: Path, safe: bool = True) -> tuple[Any, Any, Any]:
    from ansible.errors import AnsibleError
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    _forget_cached_vars_files()
    loader = DataLoader()
    try:
        with _file_plugins_only(safe):
            inv = InventoryManager(loader=loader, sources=[str(path)])
    except AnsibleError as exc:
        source = re.search(r"parse inventory source (.+)$", exc.message or "")
        if source:
            raise InventoryError(
                "Ansible cannot parse this file as an inventory source (YAML or INI; its "
                "reasons are above): an inventory directory holds inventory files only — fix "
                "it, or move it out (Ansible skips *.md, *.txt, *.rst, *.cfg)",
                path=display_path(source.group(1)),
            ) from exc
        raise InventoryError(
            f"ansible cannot read the inventory: {exc.message}", path=str(path)
        ) from exc
    return loader, inv, VariableManager(loader=loader, inventory=inv)


LOOKUP_CALLS = ("lookup", "query", "q")


def _strings(v: Any) -> Iterator[str]:
    if isinstance(v, str):
        yield str(v)
    elif isinstance(v, Mapping):
        for x in v.values():
            yield from _strings(x)
    elif isinstance(v, list | tuple):
        for x in v:
            yield from _strings(x)


def lookups_reached(value: Any, raw: Mapping[str, Any]) -> list[tuple[str | None, str]]:
    """The lookup/query calls that templating `value` would run: (variable it sits in, or
    None for `value` itself; the plugin), following the variables the templates name."""
    import jinja2
    from jinja2 import nodes

    env = jinja2.Environment()
    found: list[tuple[str | None, str]] = []
    seen: set[str] = set()
    todo: list[tuple[str | None, Any]] = [(None, value)]
    while todo:
        var, v = todo.pop()
        for text in _strings(v):
            if "{{" not in text and "{%" not in text:
                continue
            try:
                tree = env.parse(text)
            except jinja2.TemplateSyntaxError:
                continue  # Ansible reports it when it templates
            called = {}
            for call in tree.find_all(nodes.Call):
                if isinstance(call.node, nodes.Name) and call.args:
                    arg = call.args[0]
                    called[id(call.node)] = arg.value if isinstance(arg, nodes.Const) else "?"
            # any use of the lookup functions, called directly or through another name
            for n in tree.find_all(nodes.Name):
                if n.name in LOOKUP_CALLS and n.ctx == "load":
                    found.append((var, f"{n.name}('{called.get(id(n), '?')}')"))
            # the names it reads, from the parse tree alone: compiling it (as
            # meta.find_undeclared_variables does) folds constants, and `'x' * 10**10`
            # folded is 10 GB
            names = {n.name for n in tree.find_all(nodes.Name) if n.ctx == "load"}
            for name in sorted(names):
                if name in raw and name not in seen:
                    seen.add(name)
                    todo.append((name, raw[name]))
    return found


def _host_vars(
    name: str,
    raw: Mapping[str, Any],
    loader: Any,
    inventory_path: Path,
    allow_lookups: bool = False,
    diagnostics: list[Diagnostic] | None = None,
    budget: Budget | None = None,
) -> HostVars:
    wanted = {k: v for k, v in raw.items() if k.startswith("rackops_") or k in CONNECTION_VARS}
    origins: dict[tuple[Any, ...], Origin] = {}
    values = {k: _plain(v, (k,), origins) for k, v in wanted.items()}
    default = str(inventory_path if inventory_path.is_file() else inventory_path / "hosts.yml")
    hv = HostVars(name, values, origins, default)
    found = diagnostics if diagnostics is not None else []
    if not allow_lookups:
        _refuse_command_ssh_args(hv, found)
    templated = {k: plain_tree(v) for k, v in wanted.items()}
    todo = [k for k, v in templated.items() if _has_template(v)]
    if not todo:
        return hv
    if allow_lookups:  # the user trusts this inventory: Ansible's own templating, as a play
        from ansible.template import Templar

        templar = Templar(loader=loader, variables=raw)
        for k in todo:
            values[k] = _plain(templar.template(wanted[k]), (k,), {})
        return hv
    design = DesignTemplar(PlainVars(raw), budget)  # a variable is converted when read
    for k in todo:
        calls = lookups_reached(wanted[k], raw)
        try:
            if calls:
                var, call = calls[0]
                raise Refused(f"runs {call}{f' (through {var})' if var else ''}")
            values[k] = design.template(templated[k])
        except Refused as exc:
            del values[k]  # not templated, not used
            found.append(_refused(hv, k, str(exc)))
        except TemplateFailed as exc:
            del values[k]
            path, line = hv.origin(k)
            msg = f"{name}: {k}: its template cannot be rendered: {exc}; fix the template"
            found.append(Diagnostic("INV001", Level.ERROR, msg, path, line, name, k))
    return hv


def _refuse_command_ssh_args(hv: HostVars, found: list[Diagnostic]) -> None:
    """ansible_ssh_*_args that would run a command when validate connects: INV006."""
    for key in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        value = hv.values.get(key)
        if not isinstance(value, str):
            continue
        try:
            args = shlex.split(value)
        except ValueError:
            args = value.split()
        problem = ssh_args_problem(args)
        if problem:
            hv.values.pop(key)
            found.append(_refused(hv, key, problem, templated=False))


def _host_name_problems(inv: Any) -> list[Diagnostic]:
    """Every host name Ansible read (YAML, INI, ranges expanded) is a host name."""
    found = []
    for name, host in inv.hosts.items():
        problem = host_name_problem(name)
        if problem:
            path, line = _origin_of(host.name) or (None, None)
            msg = f"host {problem}; rename it in the inventory"
            found.append(Diagnostic("INV001", Level.ERROR, msg, path, line, None, "host"))
    return found


def _has_template(v: Any) -> bool:
    if isinstance(v, dict):
        return any(_has_template(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_template(x) for x in v)
    return is_template(v)


def _refused(hv: HostVars, key: str, why: str, templated: bool = True) -> Diagnostic:
    path, line = hv.origin(key)
    what = (
        f"{key} {why if why.startswith('runs') else 'holds ' + why} when templated"
        if templated
        else f"{key}: {why}"
    )
    return Diagnostic(
        "INV006",
        Level.ERROR,
        f"{hv.name}: {what}; checking a design never runs lookups, includes, plugins or "
        f"commands the inventory brings — write the value, or pass --allow-lookups if you "
        f"trust this inventory",
        path,
        line,
        hv.name,
        key,
    )


def load_inventory(path: str | Path, *, allow_lookups: bool = False) -> LoadResult:
    """Read the inventory at ``path`` and build the rack model.

    Never raises for a bad inventory: every problem is a diagnostic. Raises
    :class:`InventoryError` only when ``path`` is not an inventory at all.
    """
    root = Path(path)
    if not root.exists():
        raise InventoryError("no such inventory file or directory; pass -i PATH", path=str(root))
    diagnostics = [
        d for d in scan(root, display_path) if not (allow_lookups and d.code == "INV006")
    ]
    if diagnostics:
        return LoadResult(root, None, diagnostics, {}, {})

    from ansible.errors import AnsibleError

    loader, inv, vm = _read_hostvars(root, safe=not allow_lookups)
    diagnostics = _host_name_problems(inv)
    if diagnostics:
        return LoadResult(root, None, diagnostics, {}, {})
    inventory_dir = root if root.is_dir() else root.parent
    groups = inv.groups
    if NODE_GROUP not in groups or not groups[NODE_GROUP].get_hosts():
        raise InventoryError(
            f"the inventory has no hosts in group {NODE_GROUP!r}; put the GPU servers there",
            path=str(root),
        )

    hostvars: dict[str, HostVars] = {}
    budget = Budget()
    try:
        for host in inv.get_hosts():
            with _file_plugins_only(not allow_lookups):
                raw = vm.get_vars(host=host, include_hostvars=False)
            hostvars[host.name] = _host_vars(
                host.name, raw, loader, root, allow_lookups, diagnostics, budget
            )
    except AnsibleError as exc:
        raise InventoryError(
            f"ansible cannot read the variables: {exc.message}", path=str(root)
        ) from exc

    node_names = [h.name for h in groups[NODE_GROUP].get_hosts()]
    switch_hosts = groups[SWITCH_GROUP].get_hosts() if SWITCH_GROUP in groups else []
    switch_names = [h.name for h in switch_hosts]

    profiles: dict[str, LoadedProfile] = {}
    nodes: list[Node] = []
    for name in node_names:
        node = _build_node(name, hostvars[name], inventory_dir, profiles, diagnostics)
        if node is not None:
            nodes.append(node)

    switches: list[Switch] = []
    for host in switch_hosts:
        os_groups = [g.name for g in host.get_groups() if g.name in SWITCH_OS_GROUPS]
        sw = _build_switch(host.name, hostvars[host.name], os_groups, diagnostics)
        if sw is not None:
            switches.append(sw)

    fabric, versions = _build_design(node_names + switch_names, hostvars, diagnostics)
    cluster = None
    if fabric is not None and versions is not None:
        cluster = Cluster(
            name=inventory_dir.name,
            fabric=fabric,
            versions=versions,
            nodes=tuple(nodes),
            switches=tuple(switches),
        )
    return LoadResult(root, cluster, diagnostics, hostvars, profiles)


def _build_node(
    name: str,
    hv: HostVars,
    inventory_dir: Path,
    profiles: dict[str, LoadedProfile],
    diagnostics: list[Diagnostic],
) -> Node | None:
    v = hv.values
    profile_name = v.get("rackops_profile")
    gpus = v.get("rackops_gpus")
    if isinstance(profile_name, str):
        loaded = profiles.get(profile_name)
        if loaded is None and find_profile(profile_name, inventory_dir) is None:
            file, line = hv.origin("rackops_profile")
            known = ", ".join(available_profiles(inventory_dir))
            diagnostics.append(
                Diagnostic(
                    "INV002",
                    Level.ERROR,
                    f"{name}: rackops_profile {profile_name!r} is not a known hardware profile; "
                    f"use one of: {known} (or add profiles/{profile_name}.yaml beside the "
                    "inventory)",
                    file,
                    line,
                    name,
                    "rackops_profile",
                )
            )
        elif loaded is None:
            path = find_profile(profile_name, inventory_dir)
            assert path is not None
            try:
                loaded = load_profile_file(path, check_peaks=False)
                profiles[profile_name] = loaded
            except ProfileError as exc:
                file, line = hv.origin("rackops_profile")
                diagnostics.append(
                    Diagnostic(
                        "INV002",
                        Level.ERROR,
                        f"{name}: profile {profile_name!r}: {exc}",
                        file,
                        line,
                        name,
                        "rackops_profile",
                    )
                )
        if gpus is None and loaded is not None:
            gpus = loaded.profile.gpu.count
        if v.get("rackops_hcas") == [] and loaded is not None and loaded.profile.hca.count:
            file, line = hv.origin("rackops_hcas")
            diagnostics.append(
                Diagnostic(
                    "INV001",
                    Level.ERROR,
                    f"{name}: rackops_hcas is empty (a GPU-only node), but profile "
                    f"{profile_name} has {loaded.profile.hca.count} HCAs: list them, or use a "
                    "profile with hca.count: 0",
                    file,
                    line,
                    name,
                    "rackops_hcas",
                )
            )
            return None
    if gpus is None and isinstance(v.get("rackops_hcas"), list):
        gpus = (
            max(
                (
                    h.get("gpu", 0)
                    for h in v["rackops_hcas"]
                    if isinstance(h, dict) and isinstance(h.get("gpu"), int)
                ),
                default=0,
            )
            + 1
        )
    data = {
        "name": name,
        "address": v.get("ansible_host", name),
        "ssh_port": v.get("ansible_port", 22),
        "profile": profile_name,
        "gpus": gpus,
        "hcas": v.get("rackops_hcas"),
        "qos": v.get("rackops_host_qos") or {},
        "tuning": v.get("rackops_host_tuning") or {},
        "hw_root": v.get("rackops_hw_root") or "",
        "nvidia_stack": v.get("rackops_nvidia_stack", True),
        "nvlink": v.get("rackops_nvlink"),
    }
    return _validate(Node, data, hv=hv, var_of=NODE_VARS, subject=name, diagnostics=diagnostics)


def _build_switch(
    name: str, hv: HostVars, os_groups: list[str], diagnostics: list[Diagnostic]
) -> Switch | None:
    v = hv.values
    os_name = v.get("rackops_switch_os")
    if os_name is None and len(os_groups) == 1:
        os_name = os_groups[0]
    data = {
        "name": name,
        "address": v.get("ansible_host", name),
        "ssh_port": v.get("ansible_port", 22),
        "os": os_name,
        "role": v.get("rackops_switch_role"),
        "rail": v.get("rackops_switch_rail"),
        "ports": v.get("rackops_switch_ports"),
        "mtu": v.get("rackops_switch_mtu"),
        "qos": v.get("rackops_switch_qos") or {},
        "os_version": v.get("rackops_switch_os_version"),
        "port_lanes": v.get("rackops_switch_port_lanes") or {},
        "port_speed_gbps": v.get("rackops_switch_port_speed_gbps", 400),
        "cable_m": v.get("rackops_switch_cable_m") or {},
        "buffers": v.get("rackops_switch_buffers") or {},
        "uplinks": v.get("rackops_switch_uplinks") or (),
        "plane": v.get("rackops_switch_plane"),
    }
    return _validate(Switch, data, hv=hv, var_of=SWITCH_VARS, subject=name, diagnostics=diagnostics)


def _build_design(
    hosts: list[str], hostvars: dict[str, HostVars], diagnostics: list[Diagnostic]
) -> tuple[Fabric | None, Versions | None]:
    """The design is the same for every host; a host that differs is an error."""
    reference = hosts[0]
    ref = hostvars[reference]
    for host in hosts[1:]:
        hv = hostvars[host]
        for var in DESIGN_VARS:
            if hv.values.get(var) != ref.values.get(var):
                file, line = hv.origin(var)
                diagnostics.append(
                    Diagnostic(
                        "INV005",
                        Level.ERROR,
                        f"{host}: {var} differs from the one {reference} gets "
                        f"({ref.origin(var)[0]}); the fabric design and pinned versions must be "
                        f"set once for the whole rack (group_vars/all), not per host",
                        file,
                        line,
                        host,
                        var,
                    )
                )
    fabric = _validate(
        Fabric,
        ref.values.get("rackops_fabric") or {},
        hv=ref,
        var_of={},
        subject="design",
        diagnostics=diagnostics,
        root_var="rackops_fabric",
    )
    versions = _validate(
        Versions,
        ref.values.get("rackops_versions") or {},
        hv=ref,
        var_of={},
        subject="design",
        diagnostics=diagnostics,
        root_var="rackops_versions",
    )
    return fabric, versions


__all__ = ["Hca", "HostQos", "HostVars", "LoadResult", "SwitchQos", "load_inventory"]
