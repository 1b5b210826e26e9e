"""`rackops validate --limit`: validate some nodes of an inventory (one scalable unit, the
nodes back from repair) as if the inventory held only them; a limit that names nothing, or
is not a node pattern, is refused before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rackops.cli import main
from rackops.errors import RackopsError
from rackops.inventory import load_inventory
from rackops.validate.plan import limited

ROOT = Path(__file__).resolve().parent.parent
INV = str(ROOT / "inventories/example-roce")


def dry_run(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    rc = main(["validate", "-i", INV, "--suite", "acceptance", "--dry-run", *extra])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_the_plan_holds_only_the_limited_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = dry_run(capsys, "--limit", "node01,node03")
    assert rc == 0, out
    assert "plan: 2 nodes" in out and "1 node pairs × 8 rails = 8 links" in out
    assert "node02" not in out and "node04" not in out


def test_a_pattern_selects_like_a_shell_glob() -> None:
    cluster = load_inventory(INV).raise_for_errors()
    assert [n.name for n in limited(cluster, "node0[2-4]", INV).nodes] == [
        "node02",
        "node03",
        "node04",
    ]
    assert [n.name for n in limited(cluster, "node*", INV).nodes] == [n.name for n in cluster.nodes]


@pytest.mark.parametrize(
    ("limit", "says"),
    [
        ("node09", "'node09' matches no node"),
        ("node01,gpu*", "'gpu*' matches no node"),
        ("", "--limit is empty"),
        ("node01,,node02", "empty name"),
        ("--all", "not a node name or pattern"),
        ("node01;reboot", "not a node name or pattern"),
        ("node01 node02", "not a node name or pattern"),
        ("../node01", "not a node name or pattern"),
    ],
)
def test_a_limit_that_selects_nothing_or_is_no_pattern_is_refused(
    capsys: pytest.CaptureFixture[str], limit: str, says: str
) -> None:
    rc, out, err = dry_run(capsys, f"--limit={limit}")
    assert rc == 64, out + err
    assert says in err and "Traceback" not in err
    assert "plan:" not in out  # nothing planned, nothing run


def test_a_limit_that_names_nothing_lists_what_there_is(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, _, err = dry_run(capsys, "--limit", "node9*")
    assert INV in err and "node01, node02, node03, node04" in err


def test_too_many_patterns_are_refused() -> None:
    cluster = load_inventory(INV).raise_for_errors()
    with pytest.raises(RackopsError, match="more than 10000"):
        limited(cluster, ",".join(["node01"] * 10001), INV)


def test_suspects_outside_the_limit_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = dry_run(
        capsys, "--limit", "node01,node02,node03", "--pairing", "suspects", "--suspects", "node04"
    )
    assert rc == 64 and "node04" in err and "--limit" in err


def test_a_resumed_run_keeps_its_limit_and_refuses_another(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("")
    (run / "run.json").write_text(json.dumps({"limit": "node01,node02"}))
    from rackops.validate import validate

    with pytest.raises(RackopsError, match=r"--limit 'node01,node03'.*'node01,node02'"):
        validate(INV, "acceptance", resume=str(run), limit="node01,node03")


def _run_dir(tmp_path: Path, meta: object | None) -> Path:
    run = tmp_path / "run"
    run.mkdir(parents=True)
    (run / "results.jsonl").write_text("")
    if meta is not None:
        (run / "run.json").write_text(json.dumps(meta))
    return run


def test_a_resumed_full_run_refuses_a_limit(tmp_path: Path) -> None:
    """A run that validated every node is not narrowed on resume (its report would mix
    the two), whether run.json says limit null or predates --limit."""
    from rackops.validate import validate

    for meta in ({"limit": None}, {"suite": "acceptance"}):
        run = _run_dir(tmp_path / str(len(str(meta))), meta)
        with pytest.raises(RackopsError, match="every node of the inventory"):
            validate(INV, "acceptance", resume=str(run), limit="node0[1-2]")


def test_a_resumed_run_keeps_the_limit_it_recorded(tmp_path: Path) -> None:
    from rackops.validate import validate

    run = _run_dir(tmp_path, {"limit": "node02,node01"})
    # the same patterns in another order are the same limit
    out = validate(INV, "acceptance", resume=str(run), limit="node01,node02", dry_run=True)
    assert out.plan.nodes == ("node01", "node02")
    out = validate(INV, "acceptance", resume=str(run), dry_run=True)
    assert out.plan.nodes == ("node01", "node02")


def test_a_recorded_limit_is_checked_like_a_given_one(tmp_path: Path) -> None:
    from rackops.validate import validate

    run = _run_dir(tmp_path, {"limit": "node01\x1b[2J"})
    with pytest.raises(RackopsError, match=r"not a node name or pattern") as err:
        validate(INV, "acceptance", resume=str(run), dry_run=True)
    assert "\x1b" not in str(err.value)


def test_a_resume_without_run_json_says_what_it_validates(tmp_path: Path) -> None:
    from rackops.validate import validate

    said: list[str] = []
    run = _run_dir(tmp_path, None)
    out = validate(INV, "acceptance", resume=str(run), dry_run=True, progress=said.append)
    assert len(out.plan.nodes) == 4
    assert any("no readable run.json" in s and "every node" in s for s in said), said
