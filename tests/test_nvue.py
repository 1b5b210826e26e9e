"""NVUE: startup.yaml and the `nv set` commands say the same thing, per Cumulus release.

The replay below reads `nv set` lines the way NVUE does — each word a step down the config
tree, the last word the value — knowing only which NVUE objects are collections whose members
are set without a value (`nv set qos pfc default-global switch-priority 3`). It shares no code
with the renderer."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Rack
from hypothesis import given, settings
from hypothesis import strategies as st
from test_render import ROCE, _design

from rackops.cli import main
from rackops.inventory.model import Cluster
from rackops.render import render_switch
from rackops.render.view import RenderError

ROOT = Path(__file__).resolve().parent.parent
# NVUE objects whose members are set by id alone (from the NVUE command reference)
VALUELESS = {("qos", "pfc", "*", "switch-priority", "*")}


def _valueless(path: tuple[str, ...]) -> bool:
    return any(
        len(p) == len(path) and all(a in ("*", b) for a, b in zip(p, path, strict=True))
        for p in VALUELESS
    )


def replay(text: str) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    applied = False
    for raw in text.splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        words = shlex.split(raw)
        if words == ["nv", "config", "apply"]:
            applied = True
            continue
        assert words[:2] == ["nv", "set"], raw
        assert not applied, f"{raw!r} comes after nv config apply"
        path = tuple(words[2:])
        if _valueless(path):
            keys, value = path, None
        else:
            keys, value = path[:-1], path[-1]
        node = tree
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = {} if value is None else value
    assert applied, "no nv config apply"
    return tree


def _strings(t: Any) -> Any:
    if isinstance(t, dict):
        return {str(k): _strings(v) for k, v in t.items()}
    if isinstance(t, bool):
        return "on" if t else "off"
    return str(t)


def _startup(text: str) -> dict[str, Any]:
    docs = yaml.safe_load(text)
    assert isinstance(docs, list) and len(docs) == 1 and set(docs[0]) == {"set"}
    return dict(_strings(docs[0]["set"]))


def _with_release(cluster: Cluster, release: str) -> Cluster:
    switches = tuple(
        s.model_copy(update={"os_version": release}) if s.os == "cumulus" else s
        for s in cluster.switches
    )
    return cluster.model_copy(update={"switches": switches})


def _pair(cluster: Cluster, name: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    files = render_switch(cluster, name, "test")
    return replay(files["nv-set.txt"]), _startup(files["startup.yaml"]), files["nv-set.txt"]


@pytest.mark.parametrize("release", ["5.9", "5.14", "5.15", "5.16"])
def test_nv_set_replays_into_startup_yaml_for_each_release(release: str) -> None:
    cluster = _with_release(ROCE, release)
    for sw in (s for s in cluster.switches if s.os == "cumulus"):
        replayed, startup, text = _pair(cluster, sw.name)
        assert replayed == startup, sw.name
        new = tuple(int(x) for x in release.split(".")) >= (5, 15)
        assert ("nv set qos roce state enabled" in text) is new
        assert ("nv set qos roce enable on" in text) is not new
        assert ("ecn enabled" in text) is new
        assert "qos pfc-watchdog state enable" in text
        assert "state enabled\nnv set interface" not in text  # per-port watchdog: enable


def test_the_replay_catches_a_line_missing_from_one_side() -> None:
    files = render_switch(ROCE, "leaf-r3", "test")
    lines = files["nv-set.txt"].splitlines()
    cut = "\n".join(x for x in lines if "bw-percent" not in x)
    assert replay(cut) != _startup(files["startup.yaml"])
    changed = files["nv-set.txt"].replace("link mtu 9216", "link mtu 9000", 1)
    assert replay(changed) != _startup(files["startup.yaml"])


def test_example_releases_are_the_inventorys() -> None:
    assert {s.name: s.os_version for s in ROCE.switches if s.os == "cumulus"} == {
        "leaf-r3": "5.14",
        "leaf-r4": "5.14",
        "leaf-r5": "5.15",
    }
    assert "roce state enabled" in render_switch(ROCE, "leaf-r5", "t")["nv-set.txt"]
    assert "roce enable on" in render_switch(ROCE, "leaf-r3", "t")["nv-set.txt"]


@pytest.mark.parametrize("release", [None, "4.4", "six"])
def test_an_unknown_or_missing_release_is_refused_by_name(release: str | None) -> None:
    cluster = _with_release(ROCE, "5.14")
    switches = tuple(
        s.model_copy(update={"os_version": release}) if s.name == "leaf-r4" else s
        for s in cluster.switches
    )
    with pytest.raises(RenderError, match=r"leaf-r4.*rackops_switch_os_version"):
        render_switch(cluster.model_copy(update={"switches": switches}), "leaf-r4", "t")


def test_an_unquoted_release_is_an_inventory_error(
    roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    inv = roce.path
    hosts = inv / "hosts.yml"
    text = hosts.read_text()
    hosts.write_text(text.replace('os_version: "5.14"', "os_version: 5.10"))
    assert main(["lint", "-i", str(inv)]) == 2
    out = capsys.readouterr().out
    assert "INV001 leaf-r3: rackops_switch_os_version" in out
    assert "quote the release" in out


@settings(max_examples=25, deadline=None)
@given(
    dscp=st.integers(0, 63),
    cnp_dscp=st.integers(0, 63),
    prio=st.integers(0, 7),
    cnp_prio=st.integers(0, 7),
    host_mtu=st.integers(4200, 9198),
    release=st.sampled_from(["5.4", "5.14", "5.15", "5.16", "5.20.1"]),
)
def test_random_designs_replay_identically(
    dscp: int, cnp_dscp: int, prio: int, cnp_prio: int, host_mtu: int, release: str
) -> None:
    if dscp == cnp_dscp or prio == cnp_prio:
        return
    design = _design(dscp, cnp_dscp, prio, cnp_prio, host_mtu, 0, 150_000, 10)
    cluster = _with_release(design, release)
    for sw in (s for s in cluster.switches if s.os == "cumulus"):
        replayed, startup, _ = _pair(cluster, sw.name)
        assert replayed == startup
