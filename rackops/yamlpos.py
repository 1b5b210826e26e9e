"""Read YAML into plain Python while remembering the line of every key.

Profiles, suites and scenario files are plain YAML that rackops owns; errors in
them must name ``file:line``. ``load_with_lines`` returns the data and a map from
key path (a tuple of keys and list indexes) to its 1-based line number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rackops.docload import DocumentTooLarge, check_node, yaml_error_location

__all__ = ["YamlTooDeep", "load_with_lines", "read_yaml_file", "yaml_error_location"]

Key = str | int
LineMap = dict[tuple[Key, ...], int]


class _LineLoader(yaml.SafeLoader):
    """A SafeLoader that keeps each node's start line next to the data."""


def _walk(node: yaml.Node, path: tuple[Key, ...], lines: LineMap, loader: _LineLoader) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        loader.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = _walk(value_node, (*path, key), lines, loader)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(item, (*path, i), lines, loader) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def load_with_lines(text: str, name: str = "<string>") -> tuple[Any, LineMap]:
    """Parse one YAML document; raise ``yaml.YAMLError`` on bad syntax."""
    loader = _LineLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            check_node(node)  # an alias bomb is refused before _walk expands it
        lines: LineMap = {}
        data = None if node is None else _walk(node, (), lines, loader)
    finally:
        loader.dispose()
    return data, lines


class YamlTooDeep(yaml.YAMLError):
    """Nesting deeper than any real file has (it would exhaust the stack), or aliases that
    expand past any real file's size."""


def read_yaml_file(path: Path) -> tuple[Any, LineMap]:
    """Read a YAML file; ``OSError``/``yaml.YAMLError`` propagate to the caller (text that is
    not UTF-8, or nested too deeply to read, is a ``yaml.YAMLError`` too)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise yaml.YAMLError(f"not UTF-8 text (byte {exc.start}): not a YAML file") from exc
    try:
        return load_with_lines(text, str(path))
    except RecursionError as exc:
        raise YamlTooDeep("nested too deeply to be a rackops file") from exc
    except DocumentTooLarge as exc:
        raise YamlTooDeep(str(exc)) from exc
