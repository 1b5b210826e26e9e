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
        elif isinstance(node, ast.Tuple) and len(node.elts) > 1:
            # a tuple argv: the binary first, an option after it (a step's name beside its
            # argv, or a tuple of program names, is none)
            words = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            first = node.elts[0]
            if (
                isinstance(first, ast.Constant)
                and first.value in names
                and any(isinstance(w, str) and w.startswith("-") for w in words[1:])
            ):
                found.append(f"line {node.lineno}: argv of {first.value}")
        elif id(node) not in docstrings and isinstance(node, ast.Constant | ast.JoinedStr):
            parts = (
                [node.value]
                if isinstance(node, ast.Constant)
                else [v.value for v in node.values if isinstance(v, ast.Constant)]
            )
            text = "".join(p for p in parts if isinstance(p, str))
            if "\n" not in text:
                continue  # one line: a message or a label, never a script
            for line in text.splitlines():
                words = line.strip().split()
                if words and words[0] in names:
                    found.append(f"line {node.lineno}: script runs {words[0]}")
    return list(dict.fromkeys(found))  # an f-string's parts are walked too


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
        'd = ("perfquery", ["x"])\n'  # a step's name beside its argv
        'e = ("perfquery", "-x")\n'  # a tuple argv
        'f = f"set -e\\n{x}\\nnvidia-smi -L\\n"\n'  # an f-string script
        'def f():\n    """perfquery -x: what it reads\n    and more."""\n'  # a docstring
    )
    assert sorted(argv_leaks(src, names)) == [
        "line 1: argv of perfquery",
        "line 2: script runs nvidia-smi",
        "line 5: argv of perfquery",
        "line 6: script runs nvidia-smi",
    ]


def test_the_fleet_asks_the_tools_for_facts_and_names_none_of_them() -> None:
    """Which outputs hold fleet facts, and what each says, is the tool's (``Tool.facts``):
    the fleet's modules name no tool of the registry (a fact kind may share a word with
    one: ``mlxconfig.KEY``); the command that read a fact is the tool's word too."""
    from rackops.fleet.facts import KINDS, sources
    from rackops.tools import registry

    tools = set(registry())
    named = []
    for path in sorted((ROOT / "rackops" / "fleet").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                word = node.value
                if word in tools and word not in KINDS:
                    named.append(f"{path.name}:{node.lineno} {word}")
    assert named == []
    assert {"nvidia-smi-xml", "ofed_info", "lspci", "mlxconfig"} <= set(sources())
