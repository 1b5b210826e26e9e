"""A node on the distribution's inbox RDMA stack (``rackops_nvidia_stack: false``, the VM
lab's Soft-RoCE nodes): no check of an NVIDIA-only program runs there, the host's DCQCN
sysfs (mlx5's, set by roce_host_qos) is not asked for, and the rest is judged as anywhere.
Also the suite's iteration-count perftest (``-n``), for hosts whose clock perftest cannot
calibrate against a duration."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from pydantic import ValidationError
from test_checks import LAB_INV, fixture

from rackops import tools
from rackops.checks.tuning import check_host_tuning
from rackops.inventory import load_inventory
from rackops.suites import PerftestBwParams, load_suite
from rackops.tools.base import NodeCheck
from rackops.tools.perftest import bw_options
from rackops.validate.stages.nodes import NodeStage


def _inbox(tmp_path: Path) -> Path:
    inv = tmp_path / "inv"
    shutil.copytree(LAB_INV, inv)
    lab = inv / "group_vars" / "gpu_nodes" / "lab.yml"
    data = yaml.safe_load(lab.read_text())
    data["rackops_nvidia_stack"] = False
    lab.write_text(yaml.safe_dump(data))
    return inv


def test_the_inventory_says_which_nodes_have_no_nvidia_stack(tmp_path: Path) -> None:
    assert load_inventory(LAB_INV).raise_for_errors().node("node01").nvidia_stack
    cluster = load_inventory(_inbox(tmp_path)).raise_for_errors()
    assert not cluster.node("node01").nvidia_stack


def test_nvidia_only_programs_are_not_run_on_an_inbox_node(tmp_path: Path) -> None:
    suite = load_suite("vm")
    checks: list[NodeCheck] = tools.node_checks(suite, load_inventory(LAB_INV).raise_for_errors())
    names = {c.tool for c in checks}
    assert {"mlnx_qos", "show_gids", "ofed_info", "ibstat", "host-tuning"} <= names
    for cluster, skipped in (
        (load_inventory(LAB_INV).raise_for_errors(), set()),
        (
            load_inventory(_inbox(tmp_path)).raise_for_errors(),
            {"mlnx_qos", "show_gids", "ofed_info"},
        ),
    ):
        stage = SimpleNamespace(cluster=cluster)
        ran = {c.tool for c in NodeStage._expand(stage, "node01", checks)}  # type: ignore[arg-type]
        assert ran == names - skipped


def test_no_dcqcn_sysfs_is_asked_of_an_inbox_node(tmp_path: Path) -> None:
    parsed = fixture("host-tuning", "inbox-driver-no-ecn-missing-netdev")
    mlx5 = load_inventory(LAB_INV).raise_for_errors()
    inbox = load_inventory(_inbox(tmp_path)).raise_for_errors()
    codes = {f.code for f in check_host_tuning(parsed, mlx5.node("node01"), mlx5)}  # type: ignore[arg-type]
    assert "HOST-ECN-000" in codes
    codes = {f.code for f in check_host_tuning(parsed, inbox.node("node01"), inbox)}  # type: ignore[arg-type]
    assert "HOST-ECN-000" not in codes
    assert "HOST-NETDEV" in codes  # the rest is judged as on any node


def test_a_bandwidth_test_runs_for_a_duration_or_a_count_never_both() -> None:
    base = {"message_size_bytes": 65536, "qps": 1, "timeout_s": 60}
    by_time = PerftestBwParams.model_validate({**base, "duration_s": 5})
    by_count = PerftestBwParams.model_validate({**base, "iterations": 2000})
    assert bw_options(by_time, 1)[:4] == ["-s", "65536", "-D", "5"]
    assert bw_options(by_count, 1)[:4] == ["-s", "65536", "-n", "2000"]
    assert by_count.expected_s > 2
    for bad in ({**base}, {**base, "duration_s": 5, "iterations": 10}):
        with pytest.raises(ValidationError, match="exactly one of duration_s"):
            PerftestBwParams.model_validate(bad)
