"""An inventory is untrusted input: reading it (lint, render, validate --dry-run) runs
nothing it brings, every name in it is a name, and every size is bounded.

Each test is an attack; the inventory is a copy of the example with the attack added."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Rack

from rackops.cli import main

# --- 1. reading a design runs nothing -----------------------------------------------------


def _through_site_mtu(r: Rack, template: str) -> None:
    """rackops_host_qos.mtu reads site_mtu, which holds ``template``."""
    with (r.path / "group_vars/gpu_nodes/tuning.yml").open("a") as fh:
        fh.write('rackops_host_qos: {mtu: "{{ site_mtu }}"}\n')
        fh.write(f"site_mtu: {template!r}\n".replace("\\n", "\n  "))


def _lint(r: Rack, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    rc = main(["lint", "-i", str(r.path), *extra])
    cap = capsys.readouterr()
    return rc, cap.out + cap.err


HEADER = (
    "#jinja2:variable_start_string:'[[', variable_end_string:']]'\n"
    "[[ lookup('pipe', 'touch MARK; echo 9000') ]]"
)


@pytest.mark.parametrize(
    "template, why",
    [
        (HEADER, "#jinja2: header"),
        ("{% include 'evil.j2' %}", "include"),
        ("{% import 'evil.j2' as m %}{{ m.mtu() }}", "include, import"),
        ("{% extends 'evil.j2' %}", "include, import or extends"),
        ("{{ '/etc/*' | fileglob | length }}", "fileglob"),
        ("{{ ''.__class__.__mro__[1].__subclasses__() | length }}", "sandbox"),
        ("{{ 'x' * 10000000000 }}", "too large"),
        ("{{ 'x' | center(10000000000) }}", "too large"),
        ("{{ '{:>9999999999}'.format(1) }}", "huge"),
    ],
    ids=[
        "jinja2-header",
        "include",
        "import",
        "extends",
        "fileglob",
        "escape",
        "repeat",
        "center",
        "format",
    ],
)
def test_a_template_that_reaches_past_its_values_is_refused_and_nothing_runs(
    template: str,
    why: str,
    roce: Rack,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mark = tmp_path / "ran"
    evil = "{% macro mtu() %}{{ lookup('pipe', 'touch MARK; echo 9000') }}{% endmacro %}"
    evil += "{{ lookup('pipe', 'touch MARK; echo 9000') }}"
    # where a loader might look: the vars directories and the working directory (a stray
    # file in the inventory's own directory is refused as a source Ansible cannot parse)
    for where in (
        roce.path / "group_vars",
        roce.path / "group_vars/gpu_nodes",
        tmp_path,
    ):
        (where / "evil.j2").write_text(evil.replace("MARK", str(mark)))
    monkeypatch.chdir(tmp_path)
    _through_site_mtu(roce, template.replace("MARK", str(mark)))
    rc, out = _lint(roce, capsys)
    assert not mark.exists(), "reading the inventory ran its template"
    assert rc == 2, out
    lines = [x for x in out.splitlines() if "INV006" in x and "rackops_host_qos" in x]
    assert lines and why in lines[0], out
    assert "tuning.yml:" in lines[0]


def _executable(r: Rack, mark: Path) -> str:
    script = r.path / "more_hosts.sh"
    script.write_text(f"#!/bin/sh\ntouch {mark}\necho '{{}}'\n")
    script.chmod(0o755)
    return "more_hosts.sh"


def _constructed(r: Rack, mark: Path) -> str:
    (r.path / "extra.yml").write_text(
        "plugin: ansible.builtin.constructed\nstrict: false\n"
        f"compose:\n  pwn: lookup('pipe', 'touch {mark}')\n"
    )
    return "extra.yml"


def _generator(r: Rack, mark: Path) -> str:
    (r.path / "gen.yaml").write_text(
        "plugin: generator\nhosts:\n"
        f"  name: \"x{{{{ lookup('pipe', 'touch {mark}') }}}}\"\nlayers: {{a: [1]}}\n"
    )
    return "gen.yaml"


def _vars_plugin(r: Rack, mark: Path) -> str:
    d = r.path / "vars_plugins"
    d.mkdir()
    (d / "pwn.py").write_text(
        f"import pathlib\npathlib.Path({str(mark)!r}).touch()\n"
        "from ansible.plugins.vars import BaseVarsPlugin\n"
        "class VarsModule(BaseVarsPlugin):\n"
        "    REQUIRES_ENABLED = False\n"
        "    def get_vars(self, loader, path, entities, cache=True):\n"
        "        return {}\n"
    )
    return "vars_plugins/pwn.py"


@pytest.mark.parametrize(
    "plant",
    [_executable, _constructed, _generator, _vars_plugin],
    ids=["script", "constructed", "generator", "vars-plugin"],
)
def test_an_inventory_plugin_or_script_is_refused_and_nothing_runs(
    plant: object, roce: Rack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mark = tmp_path / "ran"
    name = plant(roce, mark)  # type: ignore[operator]
    rc, out = _lint(roce, capsys)
    assert not mark.exists(), "reading the inventory ran its plugin or script"
    assert rc == 2, out
    assert any("INV006" in x and name in x for x in out.splitlines()), out


def test_every_command_that_reads_a_design_runs_nothing(
    roce: Rack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mark = tmp_path / "ran"
    _executable(roce, mark)
    _through_site_mtu(roce, HEADER.replace("MARK", str(mark)))
    for argv in (
        ["render", "-i", str(roce.path), "-o", str(tmp_path / "out")],
        ["validate", "-i", str(roce.path), "--dry-run"],
    ):
        rc = main(argv)
        out = capsys.readouterr()
        assert rc != 0 and "INV006" in out.out + out.err, (argv, out)
        assert not mark.exists(), argv


def test_ansible_tags_vault_and_unsafe_are_read_not_syntax_errors(
    roce: Rack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ansible.parsing.vault import VaultLib, VaultSecret

    secret = VaultLib([("default", VaultSecret(b"not-a-real-password"))])
    blob = secret.encrypt("hunter2").decode()
    mark = tmp_path / "ran"
    with (roce.path / "group_vars/all/site.yml").open("w") as fh:
        fh.write("bmc_password: !vault |\n")
        fh.write("".join(f"  {line}\n" for line in blob.splitlines()))
        fh.write(f"motd: !unsafe \"{{{{ lookup('pipe', 'touch {mark}') }}}}\"\n")
    rc, out = _lint(roce, capsys)
    assert "INV000" not in out, out
    assert rc == 0, out
    assert not mark.exists()


def test_unsafe_text_is_not_templated(
    roce: Rack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mark = tmp_path / "ran"
    with (roce.path / "group_vars/gpu_nodes/tuning.yml").open("a") as fh:
        fh.write(
            f"rackops_host_qos: {{mtu: !unsafe \"{{{{ lookup('pipe', 'touch {mark}') }}}}\"}}\n"
        )
    rc, out = _lint(roce, capsys)
    assert not mark.exists()
    assert rc == 2 and "INV001" in out  # the text itself is not an MTU


def test_a_template_error_names_the_file_and_key(
    roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    _through_site_mtu(roce, "{{ no_such_variable }}")
    rc, out = _lint(roce, capsys)
    assert rc == 2
    line = next(x for x in out.splitlines() if "rackops_host_qos" in x)
    assert "INV001" in line and "no_such_variable" in line and "tuning.yml:" in line, out


def test_a_template_that_loops_is_stopped(roce: Rack, capsys: pytest.CaptureFixture[str]) -> None:
    _through_site_mtu(
        roce, "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}9000"
    )
    rc, out = _lint(roce, capsys)
    assert rc == 2 and any("INV006" in x and "longer than" in x for x in out.splitlines()), out


# --- 2. a name is a name -----------------------------------------------------------------

BAD_NAMES = {
    "newline": "node05\ninterface Ethernet9\n   shutdown",
    "dotdot": "../../escape",
    "slash": "racks/node05",
    "option": "--all",
    "hostlist": "node[01-99]",
    "comma": "node05,node06",
    "space": "node 05",
    "semicolon": "node05;reboot",
}


@pytest.mark.parametrize("bad", sorted(BAD_NAMES))
def test_a_node_name_that_is_not_a_host_name_is_refused_at_its_line(
    bad: str, roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (roce.path / "hosts.yml").read_text()
    name = BAD_NAMES[bad]
    quoted = '"' + name.replace("\n", "\\n") + '"'
    text = text.replace(
        "node04: {ansible_host: 192.0.2.24}", f"{quoted}: {{ansible_host: 192.0.2.24}}"
    )
    (roce.path / "hosts.yml").write_text(text)
    (roce.path / "host_vars/node04.yml").rename(roce.path / "host_vars/x.yml")
    rc, out = _lint(roce, capsys)
    assert rc == 2, out
    assert any(
        "INV001" in x and "hosts.yml:" in x and "host name" in x for x in out.splitlines()
    ), out


@pytest.mark.parametrize("bad", ["newline", "dotdot", "option", "hostlist", "space"])
def test_a_switch_name_that_is_not_a_host_name_is_refused(
    bad: str, roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    name = BAD_NAMES[bad]
    quoted = '"' + name.replace("\n", "\\n") + '"'
    text = (roce.path / "hosts.yml").read_text()
    text = text.replace("leaf-r7:", f"{quoted}:", 1)
    (roce.path / "hosts.yml").write_text(text)
    rc, out = _lint(roce, capsys)
    assert rc == 2, out
    assert any("INV001" in x and "host name" in x for x in out.splitlines()), out


@pytest.mark.parametrize(
    "address", ["-oProxyCommand=touch /tmp/x", "a b", "host\nname", "[::1]", "x;y"]
)
def test_an_ansible_host_that_is_not_an_address_is_refused(
    address: str, roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    roce.hostvar("node02", "ansible_host", address)
    rc, out = _lint(roce, capsys)
    assert rc == 2, out
    assert any("INV001" in x and "ansible_host" in x for x in out.splitlines()), out


@pytest.mark.parametrize(
    "switch, port",
    [
        ("leaf-r0", "Ethernet1/1"),
        ("leaf-r3", "Ethernet0"),
        ("leaf-r6", "swp1"),
        ("leaf-r0", "Eth..0"),
    ],
)
def test_a_port_name_in_another_nos_syntax_is_refused(
    switch: str, port: str, roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    ports = {"leaf-r0": "Ethernet24", "leaf-r3": "swp4", "leaf-r6": "Ethernet4/1"}
    text = (roce.path / "hosts.yml").read_text()
    assert ports[switch] in text
    roce.hostvar(
        switch,
        "rackops_switch_ports",
        [p for p in _ports(roce, switch) if p != ports[switch]] + [port],
    )
    rc, out = _lint(roce, capsys)
    assert rc == 2, out
    assert any("INV001" in x and switch in x and port in x for x in out.splitlines()), out


def _ports(r: Rack, switch: str) -> list[str]:
    from rackops.inventory.loader import load_inventory

    cluster = load_inventory(r.path).raise_for_errors()
    sw = next(s for s in cluster.switches if s.name == switch)
    return list(sw.ports)


def test_the_renderer_refuses_a_file_name_that_leaves_its_directory(tmp_path: Path) -> None:
    from rackops.render import RenderError, output_file

    out = tmp_path / "out"
    assert output_file(out, "leaf-r0", ".json") == out / "leaf-r0.json"
    for bad in ("../x", "a/b", "..", "x\ny", "-x", ""):
        with pytest.raises(RenderError):
            output_file(out, bad, ".json")


def test_a_rendered_line_cannot_hold_a_newline() -> None:
    from rackops.render import RenderError, one_line

    assert one_line("Ethernet1/1") == "Ethernet1/1"
    for bad in ("a\nshutdown", "a\rb", "a\x00b"):
        with pytest.raises(RenderError):
            one_line(bad)


# --- 4. bounded work -----------------------------------------------------------------------

BOMB = """a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
rackops_host_qos: {mtu: "{{ h | length }}"}
"""


def _lint_limited(
    inv: Path, mem_gib: float = 2.0, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`rackops lint` in a child with an address-space limit: a blow-up fails there, not here."""
    limit = int(mem_gib * 2**30)

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "rackops", "lint", "-i", str(inv)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=cap,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )


def test_a_yaml_alias_bomb_is_refused_by_its_size(roce: Rack) -> None:
    (roce.path / "group_vars/gpu_nodes/bomb.yml").write_text(BOMB)
    proc = _lint_limited(roce.path)
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 64, proc.stdout + proc.stderr  # an unreadable inventory
    out = proc.stdout + proc.stderr
    assert any("INV000" in x and "bomb.yml" in x and "alias" in x for x in out.splitlines()), out


def test_an_oversized_inventory_file_is_refused(
    roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    (roce.path / "group_vars/all/huge.yml").write_text("pad: '" + "x" * (9 * 2**20) + "'\n")
    rc, out = _lint(roce, capsys)
    assert rc == 64 and any(
        "INV000" in x and "huge.yml" in x and "MiB" in x for x in out.splitlines()
    ), out


def test_a_special_file_in_the_inventory_is_refused(
    roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    (roce.path / "group_vars/all/zero.yml").symlink_to("/dev/zero")
    rc, out = _lint(roce, capsys)
    assert rc == 64 and any("INV000" in x and "zero.yml" in x for x in out.splitlines()), out


@pytest.mark.parametrize(
    "flag", ["--partition=--all", "--partition=gpu;reboot", "--reservation=a,b", "--partition=a b"]
)
def test_a_slurm_partition_or_reservation_that_is_not_a_name_is_refused(
    flag: str, roce: Rack, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["validate", "-i", str(roce.path), "--launcher", "slurm", "--dry-run", flag])
    err = capsys.readouterr().err
    assert rc == 64 and "is not a Slurm" in err, err


@pytest.mark.parametrize(
    "args",
    [
        '-o "ProxyCommand touch MARK"',
        "-oProxyCommand=touch\\ MARK",
        "-o LocalCommand=touch\\ MARK -o PermitLocalCommand=yes",
        "-o KnownHostsCommand=/bin/touch\\ MARK",
        "-F evil_ssh_config",
        '-o "Match exec touch MARK"',
    ],
    ids=["proxycommand", "proxycommand-glued", "localcommand", "knownhostscommand", "F", "match"],
)
def test_ssh_arguments_that_run_a_command_are_refused(
    args: str, roce: Rack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mark = tmp_path / "ran"
    (roce.path.parent / "evil_ssh_config").write_text(f'Match exec "touch {mark}"\n')
    roce.hostvar("node01", "ansible_ssh_common_args", args.replace("MARK", str(mark)))
    rc, out = _lint(roce, capsys)
    assert rc == 2 and not mark.exists(), out
    assert any("INV006" in x and "ansible_ssh_common_args" in x for x in out.splitlines()), out
    rc = main(["validate", "-i", str(roce.path), "--dry-run"])
    assert rc != 0 and not mark.exists()


def test_the_ssh_executor_never_takes_a_proxy_command_from_the_hosts_arguments() -> None:
    from rackops.validate.executor import Target
    from rackops.validate.ssh import resolve

    s = resolve(Target("n1", "n1", ssh_args=("-o", "ProxyCommand=touch /tmp/x")), None)
    assert s.proxy_command is None


@pytest.mark.parametrize(
    "rel, text",
    [
        (
            "more.yml",
            "all:\n  children:\n    gpu_nodes:\n      hosts:\n        extra[0:99999999]: {}\n",
        ),
        ("more.ini", "[gpu_nodes]\nextra[0:99999999]\n"),
        ("more2.ini", "[gpu_nodes]\nx[0:9999][a:z]\n"),
    ],
    ids=["yaml-range", "ini-range", "ini-two-ranges"],
)
def test_a_host_range_that_names_too_many_hosts_is_refused_before_it_is_expanded(
    rel: str, text: str, roce: Rack
) -> None:
    (roce.path / rel).write_text(text)
    proc = _lint_limited(roce.path, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 64 and "Traceback" not in out, out[-2000:]
    assert any("INV000" in x and "hosts" in x and "20000" in x for x in out.splitlines()), out


def test_a_symlink_out_of_the_inventory_is_refused_and_not_shown(
    roce: Rack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "outside" / "config.json"
    secret.parent.mkdir()
    secret.write_text('{"auths": {"registry": {"auth": "c2VjcmV0LXRva2Vu"}}}\n')
    (roce.path / "group_vars/all/site.json").symlink_to(secret)
    _through_site_mtu(roce, "{{ auths }}")
    rc, out = _lint(roce, capsys)
    assert rc == 2 and "c2VjcmV0LXRva2Vu" not in out, out
    assert any("INV006" in x and "site.json" in x for x in out.splitlines()), out


def test_a_symlinked_directory_is_scanned_like_the_rest(roce: Rack, tmp_path: Path) -> None:
    inside = roce.path / "shared"
    inside.mkdir()
    (inside / "bomb.yml").write_text(BOMB)
    (roce.path / "group_vars/all/sub").symlink_to(inside, target_is_directory=True)
    proc = _lint_limited(roce.path, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 64 and "bomb.yml" in out and "alias" in out, out[-2000:]


# --- issue 41: host ranges counted as Ansible expands them; unreferenced values cost nothing


@pytest.mark.parametrize(
    "pattern, hosts",
    [
        ("x[a:Z][a:Z][0:7]", 21_632),  # a..z then A..Z: 52 letters, not a negative span
        ("x[a:Z][a:Z][a:Z]", 140_608),
        ("x[:9999][0:2]", 30_000),  # an empty start is 0
        ("x[ab:yz][0:999]", 25_000),  # Ansible finds a multi-letter bound as a substring
    ],
    ids=["letters-past-z", "three-letter-ranges", "empty-start", "substring-bounds"],
)
def test_a_host_range_is_counted_as_ansible_expands_it(
    pattern: str, hosts: int, roce: Rack
) -> None:
    (roce.path / "more.yml").write_text(
        f"all:\n  children:\n    gpu_nodes:\n      hosts:\n        {pattern}: {{}}\n"
    )
    proc = _lint_limited(roce.path, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 64 and "Traceback" not in out, out[-2000:]
    assert any("INV000" in x and f"{hosts + 14} hosts" in x for x in out.splitlines()), (
        out
    )  # the example's 4 nodes and 10 switches beside them


@pytest.mark.parametrize(
    "pattern, count",
    [
        ("node[01:16]", 16),
        ("node[1:16:5]", 4),
        ("leaf-[a:d]", 4),
        ("x[a:Z]", 52),
        ("x[Z:a]", 0),  # Ansible refuses begin > end: it names no host
        ("x[a:z:0]", 0),  # step 0: Ansible's error, no host
        ("x[0:9]-y[a:c]:2222", 30),  # a port after the ranges
        ("plain", 1),
        ("x[01:100]", 0),  # zero-padded bounds of unequal width: Ansible refuses it
        ("x[0:" + "9" * 4000 + "][0:" + "9" * 4000 + "]", 10**12),  # said as "at least"
    ],
)
def test_host_range_counts(pattern: str, count: int) -> None:
    from rackops.inventory.files import range_count

    assert range_count(pattern) == count


def test_an_unreferenced_alias_bomb_costs_nothing_per_host(roce: Rack) -> None:
    """10^6 values in ~330 bytes (under the expanded-size bound), referenced by no template:
    lint walked it once per templated host (minutes, a GiB)."""
    levels = ["l0: &l0 [1,1,1,1,1,1,1,1,1,1]"] + [
        f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 6)
    ]
    (roce.path / "group_vars/all/unused.yml").write_text("\n".join(levels) + "\n")
    _through_site_mtu(roce, "{{ 9000 }}")
    proc = _lint_limited(roce.path, mem_gib=1.0, timeout=20)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-2000:]
