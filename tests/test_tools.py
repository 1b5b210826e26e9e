"""The tool registry: one module per tool, and everything that needs a tool's name reads it
from there. A new tool dropped into the registry is parsed, checked, planned, installed by
the lab's stand-in repository and open to the lab's fault injection with no other edit."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import rackops.tools
from rackops import tools
from rackops.cli import main
from rackops.inventory import load_inventory
from rackops.lab.repo import packages
from rackops.lab.scenario import Fault
from rackops.suites import load_suite
from rackops.validate.plan import make_plan

ROOT = Path(__file__).resolve().parent.parent
HWSIM = ROOT / "rackops" / "lab"


def _hwsim_dispatch() -> set[str]:
    sys.path.insert(0, str(HWSIM))
    try:
        mod = importlib.import_module("hwsim.__main__")
    finally:
        sys.path.remove(str(HWSIM))
    return set(mod.TOOLS)


def test_every_simulated_program_has_a_simulator_and_every_simulator_a_tool() -> None:
    assert set(tools.simulated_binaries()) == _hwsim_dispatch()


def test_every_simulated_program_is_installed_by_exactly_one_stand_in_package() -> None:
    cluster = load_inventory(str(ROOT / "inventories/example-roce")).raise_for_errors()
    pinned = [p for p in packages(cluster.versions) if "570" not in p.name]  # the older branch
    for name in tools.simulated_binaries():
        holders = [p.name for p in pinned if name in p.tools]
        assert len(holders) == 1, (name, holders)


def test_the_plan_is_the_registry_in_its_order() -> None:
    cluster = load_inventory(str(ROOT / "inventories/example-roce")).raise_for_errors()
    plan = make_plan(cluster, load_suite("acceptance"))
    names = [c.name for c in plan.node_checks]
    assert names[:3] == ["ibstat", "ofed_info", "ibv_devinfo"]
    assert {c.tool for c in plan.node_checks} <= set(tools.registry())
    order = {n: t.order for n, t in tools.registry().items()}
    assert [order[c.tool] for c in plan.node_checks] == sorted(
        order[c.tool] for c in plan.node_checks
    )


NEW_TOOL = '''
"""fwver: a made-up firmware reader, to show what adding a tool takes."""

from __future__ import annotations

from rackops.findings import Finding, Status, Subject
from rackops.parsers import ParseError
from rackops.tools.base import Binary, NodeCheck, Tool


def parse(text):
    if not text.startswith("fw "):
        raise ParseError("no 'fw' line")
    return text.split()[1]


def check(parsed, ctx, node):
    ok = parsed == "28.45.1020"
    return [Finding("FW-001", Status.OK if ok else Status.FAIL, Subject(node=node), parsed)]


def plan(suite, cluster):
    return [NodeCheck("fwver", "fwver", ("fwver", "-q"), 30, 1)]


TOOL = Tool(
    "fwver",
    "firmware version",
    parse=parse,
    check=check,
    plan=plan,
    order=15,
    binaries=(Binary("fwver", "mft"),),
)
'''


@pytest.fixture
def new_tool(tmp_path: Path) -> Iterator[None]:
    """A tool module dropped beside the others (a second directory of the package)."""
    (tmp_path / "fwver.py").write_text(textwrap.dedent(NEW_TOOL))
    rackops.tools.__path__.append(str(tmp_path))
    tools.registry.cache_clear()
    try:
        yield
    finally:
        rackops.tools.__path__.remove(str(tmp_path))
        sys.modules.pop("rackops.tools.fwver", None)
        tools.registry.cache_clear()


def test_a_new_tool_is_one_module(
    new_tool: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.txt"
    out.write_text("fw 28.39.1002\n")
    assert main(["check", "fwver", str(out), "--profile", "h100-sxm-ndr"]) == 2
    assert "FW-001" in capsys.readouterr().out
    assert main(["parse", "fwver", str(out), "--format", "json"]) == 0
    assert '"28.39.1002"' in capsys.readouterr().out
    cluster = load_inventory(str(ROOT / "inventories/example-roce")).raise_for_errors()
    plan = make_plan(cluster, load_suite("acceptance"))
    assert [c.name for c in plan.node_checks][:3] == ["ibstat", "fwver", "ofed_info"]
    (mft,) = [p for p in packages(cluster.versions) if p.name == "mft"]
    assert "fwver" in mft.tools
    assert Fault(kind="missing", tool="fwver").tool == "fwver"


def test_without_it_none_of_that_exists(tmp_path: Path) -> None:
    assert "fwver" not in tools.registry()
    with pytest.raises(ValueError, match="not simulated"):
        Fault(kind="missing", tool="fwver")
    with pytest.raises(SystemExit):
        main(["parse", "fwver", str(tmp_path / "x")])
