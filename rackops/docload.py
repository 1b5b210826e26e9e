"""JSON and YAML from untrusted text, bounded before they are built.

A switch's saved running config, a tool's JSON output, a run directory's records and an
inventory's files come from outside. Each is refused (:class:`DocumentTooLarge`, a
``ValueError`` naming the bound) when it is

* nested deeper than :data:`MAX_DEPTH` (``[`` × 200,000 exhausts the stack of a recursive
  reader; 900 levels pass Python's ``json`` and then exhaust every walker after it), or
* larger than :data:`MAX_VALUES` values once every YAML alias is expanded (a "billion
  laughs" of 567 bytes). YAML is *composed* first and the alias graph measured without
  expanding it; only then is it constructed.

One rule, used by every reader of such text: the inventory pre-scan, ``render --diff``'s
running configs, the switch-counter and tool-output parsers, the run-directory reader.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import yaml

MAX_DEPTH = 200  # the deepest real document rackops reads (NVUE's tree) is under 20
MAX_VALUES = 2_000_000  # after alias expansion; 8 MiB of YAML written out holds fewer

# libyaml's parser where PyYAML was built with it (a wheel is): the same documents, ten
# times faster, and it refuses nesting past 1,000 levels itself
SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_error_location(exc: yaml.YAMLError) -> tuple[int | None, str]:
    """Line (1-based) and a one-line reason for a YAML syntax error (a bound's refusal,
    which has no position, is its own message)."""
    if getattr(exc, "problem", None) is None and not hasattr(exc, "problem_mark"):
        return None, str(exc)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    reason = f"{context}, {problem}" if context else str(problem)
    return line, f"YAML syntax error: {reason}"


class DocumentTooLarge(ValueError):
    """Nested too deeply, or too many values once its aliases are expanded."""


def too_deep() -> DocumentTooLarge:
    return DocumentTooLarge(f"nested deeper than {MAX_DEPTH} levels: not a real document")


def expanded_size(node: yaml.Node) -> int:
    """How many values a composed YAML node is once every alias is expanded, counted
    without expanding them (each node once); past :data:`MAX_VALUES` it is
    ``MAX_VALUES + 1``. :class:`DocumentTooLarge` when, built, it would nest past
    :data:`MAX_DEPTH` — an alias counts as deep as what it names, so a chain of anchors is
    as deep as it is long."""
    return _measure(node, {}, 1)[0]


def _measure(node: yaml.Node, seen: dict[int, tuple[int, int]], depth: int) -> tuple[int, int]:
    """(values, levels of containers from this node down), each node measured once."""
    if id(node) in seen:
        size, height = seen[id(node)]
        if depth - 1 + height > MAX_DEPTH:  # an alias reached deeper than first seen
            raise too_deep()
        return size, height
    children: list[yaml.Node] = []
    if isinstance(node, yaml.SequenceNode):
        children = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    else:
        return 1, 0
    if depth > MAX_DEPTH:  # ``depth`` containers, this one included
        raise too_deep()
    seen[id(node)] = (MAX_VALUES + 1, MAX_DEPTH + 1)  # reached from itself: refuse, no loop
    size, height = 1, 0
    for child in children:
        child_size, child_height = _measure(child, seen, depth + 1)
        size += child_size
        height = max(height, child_height)
        if size > MAX_VALUES:
            break
    seen[id(node)] = (size, height + 1)
    return size, height + 1


def check_node(node: yaml.Node) -> None:
    """Refuse a composed YAML document too deep or too large once expanded."""
    if expanded_size(node) > MAX_VALUES:
        raise DocumentTooLarge(
            f"its aliases expand to more than {MAX_VALUES} values (an alias bomb?): not a "
            "real document"
        )


def load_yaml_all(text: str, loader: type[yaml.SafeLoader] = SafeLoader) -> list[Any]:
    """Every document of ``text``, each measured before it is built. ``ValueError`` for bad
    syntax (with its line); :class:`DocumentTooLarge` past a bound."""
    reader = loader(text)
    docs: list[Any] = []
    try:
        while reader.check_node():
            node = reader.get_node()
            if node is None:
                break
            check_node(node)
            docs.append(reader.construct_document(node))
    except RecursionError as exc:  # the pure-Python composer, nested past the stack
        raise too_deep() from exc
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's own bound
            raise too_deep() from exc
        line, reason = yaml_error_location(exc)
        raise ValueError(f"{reason}{f' (line {line})' if line else ''}") from exc
    finally:
        reader.dispose()
    return docs


def load_yaml(text: str, loader: type[yaml.SafeLoader] = SafeLoader) -> Any:
    """One YAML document (``None`` for none), bounded as :func:`load_yaml_all`."""
    docs = load_yaml_all(text, loader)
    if len(docs) > 1:
        raise ValueError(f"{len(docs)} YAML documents where one was expected")
    return docs[0] if docs else None


def _interned(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys, and short string values, are the interpreter's one copy."""
    return {
        sys.intern(k): sys.intern(v) if type(v) is str and len(v) <= INTERN_CHARS else v
        for k, v in pairs
    }


INTERN_CHARS = 40  # a status, a code, a node or port name; not a message


def load_json(
    text: str | bytes, parse_constant: Callable[[str], Any] | None = None, shared: bool = False
) -> Any:
    """JSON nested at most :data:`MAX_DEPTH` deep; ``ValueError`` (``json``'s own, or
    :class:`DocumentTooLarge`) otherwise. ``parse_constant`` is ``json``'s: what
    ``NaN``/``Infinity`` become (refuse them there). ``shared``: keys and short strings
    interned, for many small documents held at once (a run's records: those of a
    1,024-node synthetic run took 104 MB so, 254 MB not, for 15 % more time to read)."""
    try:
        hook = _interned if shared else None
        value = json.loads(text, parse_constant=parse_constant, object_pairs_hook=hook)
    except RecursionError as exc:
        raise too_deep() from exc
    if depth_past(value, MAX_DEPTH):
        raise too_deep()
    return value


def depth_past(value: Any, limit: int) -> bool:
    """Whether a built value nests more than ``limit`` lists and objects deep (walked
    without recursion)."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            todo.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False
