"""Untrusted JSON and YAML are bounded before they are built (rackops/docload.py): depth,
alias expansion, and libyaml's own nesting refusal, read as one kind of error everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rackops import docload
from rackops.errors import ProfileError
from rackops.profiles import load_profile_file
from rackops.suites import load_suite

LAUGHS = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{b}: &{b} [{','.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize("loader", [yaml.SafeLoader, docload.SafeLoader])
def test_an_alias_bomb_is_measured_not_expanded(loader: type[yaml.SafeLoader]) -> None:
    with pytest.raises(docload.DocumentTooLarge, match="alias"):
        docload.load_yaml(LAUGHS, loader)


@pytest.mark.parametrize("loader", [yaml.SafeLoader, docload.SafeLoader])
@pytest.mark.parametrize("depth", [docload.MAX_DEPTH + 1, 5000, 200_000])
def test_yaml_nested_past_the_bound_is_refused(loader: type[yaml.SafeLoader], depth: int) -> None:
    with pytest.raises(docload.DocumentTooLarge, match="deeper"):
        docload.load_yaml("[" * depth + "]" * depth, loader)


def test_yaml_at_the_bound_and_shared_aliases_under_it_are_read() -> None:
    deep = "[" * docload.MAX_DEPTH + "]" * docload.MAX_DEPTH
    assert docload.load_yaml(deep) is not None
    assert docload.load_yaml("a: &a [1, 2]\nb: *a\n") == {"a": [1, 2], "b": [1, 2]}


def test_bad_yaml_is_a_value_error_naming_its_line() -> None:
    with pytest.raises(ValueError, match=r"YAML syntax error.*\(line \d+\)"):
        docload.load_yaml("a: 1\nb: [\n")


@pytest.mark.parametrize("depth", [docload.MAX_DEPTH + 1, 900, 200_000])
def test_json_nested_past_the_bound_is_refused(depth: int) -> None:
    with pytest.raises(docload.DocumentTooLarge, match="deeper"):
        docload.load_json("[" * depth + "]" * depth)


def test_json_constants_go_to_the_callers_hook() -> None:
    def refuse(name: str) -> float:
        raise ValueError(f"{name} is not a number rackops writes")

    with pytest.raises(ValueError, match="NaN is not"):
        docload.load_json('{"bw": NaN}', refuse)
    assert docload.load_json('{"bw": [1, {"x": 2}]}') == {"bw": [1, {"x": 2}]}


def test_a_profile_or_suite_file_with_an_alias_bomb_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text(LAUGHS)
    for load in (lambda: load_profile_file(path), lambda: load_suite(str(path))):
        with pytest.raises(ProfileError) as err:
            load()
        assert str(err.value).startswith(f"{path}: its aliases expand"), err.value


def test_a_chain_of_aliases_is_as_deep_as_it_expands() -> None:
    """Each anchor holding the previous one nests one level more once built: a linear file
    of 5,000 anchors is 5,000 levels deep, though each node is reached at depth 2."""
    chain = "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 5000))
    with pytest.raises(docload.DocumentTooLarge, match="deeper"):
        docload.load_yaml(chain)
    with pytest.raises(docload.DocumentTooLarge, match="deeper"):
        docload.load_yaml(chain, yaml.SafeLoader)
    ok = "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 150))
    assert docload.load_yaml(ok)["a149"] is not None
