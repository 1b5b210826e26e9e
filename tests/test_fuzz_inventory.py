"""Fuzzing the inventory loader and the renderers: a real example rack with random values put
where its values were. Whatever they are, `lint` and `render` end with an exit code and
diagnostics — never a traceback — and `render` writes only inside its output directory."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
import yaml
from conftest import EXAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackops.cli import main

HOSTILE_TEXT = [
    "../../escape",
    "--all",
    "node[01-99]",
    "x\ninterface Ethernet9\n   shutdown",
    "{{ lookup('pipe', 'id') }}",
    "{% include 'x' %}",
    "#jinja2:variable_start_string:'[['\n[[ 1 ]]",
    "$(reboot)",
    "a;b",
    "",
    " ",
    "\x00",
    "é",
    "9" * 400,
]
SCALARS = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.text(max_size=40),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.lists(st.integers(min_value=0, max_value=9), max_size=3),
    st.dictionaries(st.sampled_from(["a", "mtu", "device"]), st.integers(), max_size=2),
)


def _leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in _leaves(v, (*path, k))] or [path]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in _leaves(v, (*path, i))] or [path]
    return [path]


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


FILES = sorted(
    str(p.relative_to(EXAMPLES / "example-roce"))
    for p in (EXAMPLES / "example-roce").rglob("*.yml")
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(FILES), st.integers(min_value=0), SCALARS),
        min_size=1,
        max_size=4,
    )
)
def test_a_mutated_inventory_never_gives_a_traceback(
    edits: list[tuple[str, int, Any]],
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = tmp_path_factory.mktemp("fuzz")
    inv = base / "inv"
    shutil.copytree(EXAMPLES / "example-roce", inv)
    for rel, pick, value in edits:
        file = inv / rel
        data = yaml.safe_load(file.read_text())
        leaves = [p for p in _leaves(data) if p]
        if not leaves:
            continue
        _set(data, leaves[pick % len(leaves)], value)
        file.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    before = set(base.rglob("*"))
    rc = main(["lint", "-i", str(inv)])
    assert rc in (0, 1, 2, 64), rc
    out = base / "out"
    rc = main(["render", "-i", str(inv), "-o", str(out)])
    assert rc in (0, 1, 2, 64), rc
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    written = set(base.rglob("*")) - before
    assert all(out in p.parents or p == out for p in written), sorted(written - {out})
