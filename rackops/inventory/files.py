"""The inventory's files, looked at before ansible-core reads any of them.

An inventory is untrusted input. Before Ansible parses it, every file in it is checked:

* **INV006** — a file Ansible would *run* rather than read: an executable (Ansible's
  ``script`` inventory plugin runs it), a YAML file that names an inventory ``plugin:``
  (``constructed``, ``generator`` and the like template and can run lookups), and plugin
  code (``vars_plugins/``, ``inventory_plugins/``, ``*.py``);
* **INV000** — a file that is not a regular file (a FIFO, a device such as ``/dev/zero``
  through a symlink), larger than :data:`MAX_FILE_BYTES`, more files than
  :data:`MAX_FILES`, a YAML document whose aliases expand past :data:`rackops.docload.MAX_VALUES`
  nodes (a "billion laughs"), or a YAML syntax error.

YAML is composed (not constructed) first, so an alias bomb is measured without being
expanded. Ansible's own tags (``!vault``, ``!unsafe``) are understood.
"""

from __future__ import annotations

import os
import re
import stat
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from rackops.diagnostics import Diagnostic, Level
from rackops.docload import DocumentTooLarge, SafeLoader, check_node
from rackops.names import host_name_problem
from rackops.scale import MAX_DESIGN_HOSTS
from rackops.yamlpos import yaml_error_location

MAX_FILE_BYTES = 8 * 2**20
MAX_FILES = 10_000
COUNT_CEILING = 10**12  # a host count this large is said as "at least"
MAX_HOSTS = MAX_DESIGN_HOSTS  # nodes and switches of one inventory, ranges counted expanded
VARS_DIRS = ("group_vars", "host_vars")
CODE_DIRS = ("vars_plugins", "inventory_plugins", "filter_plugins", "lookup_plugins", "plugins")
YAML_SUFFIXES = (".yml", ".yaml", ".json", "")
ANSIBLE_TAGS = ("!vault", "!unsafe", "!vault-encrypted")


class _Loader(SafeLoader):  # type: ignore[valid-type,misc]
    """YAML as Ansible reads it: its own tags are strings, not errors."""


def _as_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node)) if isinstance(node, yaml.ScalarNode) else ""


for _tag in ANSIBLE_TAGS:
    _Loader.add_constructor(_tag, _as_text)


def files_of(root: Path) -> Iterator[Path]:
    """Every path Ansible could read for the inventory at ``root`` (a file or a directory),
    with the vars directories beside an inventory file; through symlinked directories too
    (Ansible follows them), each real directory once."""
    if not root.is_dir():
        yield root
    base = root if root.is_dir() else root.parent
    tops = [base] if root.is_dir() else [base / n for n in VARS_DIRS if (base / n).is_dir()]
    seen: set[str] = set()
    for top in tops:
        for here, dirs, files in os.walk(top, followlinks=True):
            real = os.path.realpath(here)
            if real in seen:
                dirs[:] = []
                continue
            seen.add(real)
            for name in sorted(dirs) + sorted(files):
                yield Path(here) / name


def _outside(base: Path, path: Path) -> bool:
    """``path`` is a symlink whose target is not inside the inventory."""
    if not path.is_symlink():
        return False
    try:
        path.resolve().relative_to(base.resolve())
    except (ValueError, OSError, RuntimeError):
        return True
    return False


def scan(root: Path, display: Any = str) -> list[Diagnostic]:
    """Every problem with the inventory's files; empty when Ansible may read them."""
    problems: list[Diagnostic] = []
    count = 0
    hosts = 0
    for path in files_of(root):
        count += 1
        if count > MAX_FILES:
            problems.append(
                Diagnostic(
                    "INV000",
                    Level.ERROR,
                    f"more than {MAX_FILES} files under the inventory; point -i at the inventory "
                    "itself, not a directory above it",
                    display(root),
                )
            )
            break
        problem = _file_problem(root, path)
        if problem is not None:
            code, message = problem
            problems.append(Diagnostic(code, Level.ERROR, message, display(path), None))
            continue
        if path.is_file() and _read_as_yaml(root, path):
            problems.extend(_yaml_problems(path, display, not _in_vars_dir(root, path)))
        if path.is_file() and not _in_vars_dir(root, path):
            hosts += _host_count(path)
    if hosts > MAX_HOSTS:
        problems.append(
            Diagnostic(
                "INV000",
                Level.ERROR,
                f"{hosts if hosts < COUNT_CEILING else f'at least {COUNT_CEILING}'} hosts "
                f"(host ranges expanded), more than the {MAX_HOSTS} one inventory "
                "may hold; split the rack, or check the host ranges ([01:16])",
                display(root),
            )
        )
    return problems


def _in_vars_dir(root: Path, path: Path) -> bool:
    base = root if root.is_dir() else root.parent
    try:
        rel = path.relative_to(base).parts
    except ValueError:
        return False
    return bool(rel) and rel[0] in VARS_DIRS


def _file_problem(root: Path, path: Path) -> tuple[str, str] | None:
    outside = _outside(root if root.is_dir() else root.parent, path)
    leaves = (
        "INV006",
        _runs(
            "a symlink out of the inventory: what it reaches could be any file of this machine, "
            "shown in a diagnostic"
        ),
    )
    try:
        st = path.stat()  # through a symlink: what Ansible would open
    except OSError as exc:
        return "INV000", f"cannot read: {exc.strerror or exc}; fix or remove the file"
    if stat.S_ISDIR(st.st_mode):
        if outside:
            return leaves
        if path.name in CODE_DIRS:
            return "INV006", _runs("a plugin directory: Ansible loads the code in it")
        return None
    if not stat.S_ISREG(st.st_mode):
        return "INV000", "not a regular file (a device, FIFO or socket); remove it"
    if outside:
        return leaves
    if st.st_size > MAX_FILE_BYTES:
        return (
            "INV000",
            f"{st.st_size / 2**20:.1f} MiB, more than the {MAX_FILE_BYTES // 2**20} MiB an "
            "inventory file may be; split it or remove what is not inventory",
        )
    if path.suffix == ".py" or any(p in CODE_DIRS for p in path.parts):
        return "INV006", _runs("Python code: Ansible may load it as a plugin")
    if not _in_vars_dir(root, path) and st.st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
        return "INV006", _runs(
            "an executable: Ansible runs it as an inventory script (chmod -x it if it is "
            "plain YAML or INI)"
        )
    return None


def _runs(what: str) -> str:
    return (
        f"{what}; reading a design runs nothing the inventory brings — remove it, or pass "
        "--allow-lookups if you trust this inventory"
    )


def _read_as_yaml(root: Path, path: Path) -> bool:
    if path.suffix in (".yml", ".yaml", ".json"):
        return True
    # files without a suffix: Ansible reads vars files as YAML; inventory files as INI or YAML
    return path.suffix == "" and _in_vars_dir(root, path)


def _yaml_problems(path: Path, display: Any, inventory_file: bool) -> list[Diagnostic]:
    def problem(code: str, message: str, line: int | None = None) -> list[Diagnostic]:
        return [Diagnostic(code, Level.ERROR, message, display(path), line)]

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return problem("INV000", f"cannot read file: {exc}")
    try:
        docs = list(yaml.compose_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        line, reason = yaml_error_location(exc)
        return problem("INV000", f"{reason}; fix the YAML", line)
    except RecursionError:
        return problem("INV000", "nested too deeply to be an inventory file; fix the YAML")
    for doc in docs:
        if doc is None:
            continue
        try:
            check_node(doc)
        except DocumentTooLarge as exc:
            return problem("INV000", f"{exc}; write the values out, with fewer aliases of aliases")
        bad_host = _bad_host_key(doc) if inventory_file else None
        if bad_host is not None:
            node, why = bad_host
            return problem(
                "INV001", f"host {why}; rename it in the inventory", node.start_mark.line + 1
            )
        if _names_a_plugin(doc):
            return problem(
                "INV006",
                _runs("an inventory plugin configuration (plugin:): the plugin runs templates"),
                doc.start_mark.line + 1,
            )
    try:
        list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        line, reason = yaml_error_location(exc)
        return problem("INV000", f"{reason}; fix the YAML", line)
    except (ValueError, OverflowError) as exc:  # a 5000-digit number, the date 2001-02-30
        return problem("INV000", f"a value YAML cannot read ({str(exc)[:120]}); fix it")
    except RecursionError:
        return problem("INV000", "nested too deeply to be an inventory file; fix the YAML")
    return []


# Ansible's host range in a YAML or INI inventory: node[01:16], leaf-[a:d]
_RANGE = re.compile(r"\[[0-9a-zA-Z]+:[0-9a-zA-Z]+(?::[0-9]+)?\]")


def _host_keys(doc: yaml.Node) -> Iterator[yaml.ScalarNode]:
    """Every host key of a YAML inventory document: the keys of each group's ``hosts:``."""
    todo: list[tuple[yaml.Node, bool]] = [(doc, False)]
    while todo:
        node, hosts_map = todo.pop()
        if not isinstance(node, yaml.MappingNode):
            continue
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            if hosts_map:
                yield key
            elif key.value != "vars":
                todo.append((value, key.value == "hosts"))


def _bad_host_key(doc: yaml.Node) -> tuple[yaml.Node, str] | None:
    """A host whose name is not a host name (an Ansible range is checked as the names it
    expands to)."""
    for key in _host_keys(doc):
        problem = host_name_problem(_RANGE.sub("0", key.value))
        if problem:
            return key, problem.replace(repr(_RANGE.sub("0", key.value)), repr(key.value))
    return None


def range_count(name: str) -> int:
    """How many hosts Ansible expands a host pattern to, counted without expanding it:
    node[01:16] is 16, [a:c][1:2] is 6, [a:Z] is 52 (a..z then A..Z), and a range Ansible
    refuses (begin after end, a step of 0, a bound that is no number) names none. Each rule
    is ansible-core's ``expand_hostname_range``: the first ``[`` and ``]`` split the name,
    the rest of the name repeats per value of the range."""
    count = 1
    rest = name
    while "[" in rest:
        parts = rest.replace("[", "|", 1).replace("]", "|", 1).split("|")
        if len(parts) != 3:
            return 0
        bounds = parts[1].split(":")
        if len(bounds) not in (2, 3):
            return 0
        count *= _range_size(bounds[0] or "0", bounds[1], bounds[2] if len(bounds) == 3 else "1")
        if count == 0:
            return 0
        count = min(count, COUNT_CEILING)  # x[0:9999...] repeated: an answer, not a bignum
        rest = parts[2]
    return count


def _range_size(beg: str, end: str, step: str) -> int:
    if not end:
        return 0
    if beg[0] == "0" and len(beg) > 1 and len(beg) != len(end):
        return 0  # Ansible: "host range must specify equal-length begin and end formats"
    try:
        by = int(step)
        if by == 0:
            return 0
        try:  # a letter range: ascii_letters.index, which finds "ab" too
            lo, hi = string.ascii_letters.index(beg), string.ascii_letters.index(end)
            return 0 if lo > hi else len(string.ascii_letters[lo : hi + 1 : by])
        except ValueError:
            start, stop = int(beg), int(end) + 1
            return max(0, (stop - start + by - (1 if by > 0 else -1)) // by)
    except ValueError:  # not a number, or past Python's 4300 digits
        return 0


def _host_count(path: Path) -> int:
    """Hosts an inventory file names, ranges expanded (YAML hosts: keys, INI host lines)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    if path.suffix in (".yml", ".yaml", ".json"):
        try:
            docs = list(yaml.compose_all(text, Loader=_Loader))
        except (yaml.YAMLError, RecursionError):
            return 0
        return sum(range_count(k.value) for d in docs if d is not None for k in _host_keys(d))
    total, section = 0, ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line
            continue
        if not section.endswith((":vars]", ":children]")):
            total += range_count(line.split()[0])
    return total


def _names_a_plugin(doc: yaml.Node) -> bool:
    return isinstance(doc, yaml.MappingNode) and any(
        isinstance(k, yaml.ScalarNode) and k.value == "plugin" for k, _ in doc.value
    )
