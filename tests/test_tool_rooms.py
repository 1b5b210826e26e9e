"""A tool's room holds how it is run: no argv of a registry binary is written outside
``rackops/tools/`` (and the lab, which installs and simulates the binaries). Stages, render
and fleet ask the tool (``perfquery.switch_argv``, ``ibdiagnet.sweep_argv``,
``mlnx_qos.apply_argvs``, ``nvidia_smi_perf.sampler_argv``)."""

from __future__ import annotations

import ast

from test_lab import ROOT

from rackops.tools import binaries

ROOMS = ("rackops/tools/", "rackops/lab/")


def argv_leaks(source: str, names: set[str]) -> list[str]:
    """Where ``source`` writes a command line of one of ``names``: a list literal holding
    the binary's name (anywhere: ``["sudo", "perfquery", ...]``), or a line of a multi-line
    string (a shell script) that starts with it."""
    found = []
    tree = ast.parse(source)
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.List):
            for e in node.elts:
                if isinstance(e, ast.Constant) and isinstance(e.value, str) and e.value in names:
                    found.append(f"line {node.lineno}: argv of {e.value}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "\n" in node.value
            and id(node) not in docstrings
        ):
            for line in node.value.splitlines():
                words = line.strip().split()
                if words and words[0] in names:
                    found.append(f"line {node.lineno}: script runs {words[0]}")
    return found


def test_no_binary_of_the_registry_is_run_outside_its_tools_room() -> None:
    names = {b.name for _, b in binaries()}
    leaks = {
        str(path.relative_to(ROOT)): hits
        for path in sorted((ROOT / "rackops").rglob("*.py"))
        if not str(path.relative_to(ROOT)).startswith(ROOMS)
        and (hits := argv_leaks(path.read_text(), names))
    }
    assert leaks == {}, leaks


def test_the_scan_finds_an_argv_and_a_script_and_passes_messages() -> None:
    names = {"perfquery", "nvidia-smi"}
    src = (
        'a = ["sudo", "perfquery", "-x"]\n'
        'b = "set -e\\nnvidia-smi -q\\n"\n'
        'c = "perfquery -x failed: cut off"\n'  # a message, one line: not a command
        'd = ("perfquery", "-x")\n'  # a step's name and tuple: argv are lists
        'def f():\n    """perfquery -x: what it reads\n    and more."""\n'  # a docstring
    )
    assert argv_leaks(src, names) == ["line 1: argv of perfquery", "line 2: script runs nvidia-smi"]
