"""What a name may be, written once.

Names from an inventory or a run directory reach file names (``render -o``), command lines
(ssh, srun, scontrol, kubectl), switch configs (a line per port) and reports. Each kind is
checked against what it can really be, so a name never adds a line, leaves a directory,
becomes an option (``--all``) or a hostlist (``node[01-99]``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

from rackops.errors import ExitCode, RackopsError

# a host name as Ansible, Slurm and DNS all take it: labels of letters, digits, '-' and '_'
# (Ansible and Slurm accept '_'), each starting with a letter or digit, dot-separated
HOST_NAME = r"[A-Za-z0-9][A-Za-z0-9_-]{0,62}(?:\.[A-Za-z0-9][A-Za-z0-9_-]{0,62})*"
HOST_NAME_MAX = 253
_HOST_RE = re.compile(HOST_NAME, re.ASCII)

# switch port names per NOS (what its CLI and config files call a front-panel port)
PORT_SYNTAX: dict[str, tuple[str, str]] = {
    "sonic": (r"Ethernet\d{1,4}", "Ethernet<first lane>, e.g. Ethernet0, Ethernet8"),
    "cumulus": (r"swp\d{1,3}(?:s\d{1,2})?", "swp<n> or a breakout swp<n>s<m>, e.g. swp1, swp1s0"),
    "eos": (r"Ethernet\d{1,3}(?:/\d{1,3}){0,2}", "Ethernet<slot/port/lane>, e.g. Ethernet1/1"),
    "mlnx-os": (
        r"(?:Eth|eth|ethernet |IB|ib)?\d{1,3}/\d{1,3}(?:/\d{1,3})?",
        "<slot>/<port>[/<split>] or ibdiagnet's <port>/<split> label, e.g. 1/1, IB1/1, 1/3/2",
    ),
}


def is_host_name(name: object) -> bool:
    return (
        isinstance(name, str)
        and len(name) <= HOST_NAME_MAX
        and _HOST_RE.fullmatch(name) is not None
    )


def host_name_problem(name: object) -> str | None:
    """Why ``name`` is not a host name, or None."""
    if is_host_name(name):
        return None
    return (
        f"{name!r} is not a host name (letters, digits, '-', '_' and dots, starting with a "
        f"letter or digit, at most {HOST_NAME_MAX} characters)"
    )


def address_problem(value: object) -> str | None:
    """Why ``value`` is neither an IP address nor a host name, or None."""
    if isinstance(value, str):
        try:
            ipaddress.ip_address(value)
            return None
        except ValueError:
            if is_host_name(value):
                return None
    return f"{value!r} is neither an IP address nor a host name"


def port_problem(os_name: str, port: str) -> str | None:
    """Why ``port`` is not a port name of ``os_name``, or None."""
    syntax = PORT_SYNTAX.get(os_name)
    if syntax is None or re.fullmatch(syntax[0], port, re.ASCII):
        return None
    return f"port {port!r} is not a {os_name} port name ({syntax[1]})"


def safe_file_stem(name: str) -> bool:
    """A name that can be a file name in a directory: no separator, not '.', '..', not an
    option, no control character."""
    return is_host_name(name) and not name.startswith("-")


# a Slurm partition or reservation: letters, digits, '_', '-', '.'; a partition list is
# comma-separated (salloc --partition=a,b)
SLURM_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"


def slurm_names_problem(value: str, what: str, many: bool = False) -> str | None:
    """Why ``value`` is not a Slurm partition (list) or reservation name, or None."""
    parts = value.split(",") if many else [value]
    if all(re.fullmatch(SLURM_NAME, p, re.ASCII) for p in parts):
        return None
    return f"{what} {value!r} is not a Slurm {what.lstrip('-')} name (letters, digits, _ - .)"


# ssh options an inventory may set for its hosts: where and how to connect, never a command
# (ProxyCommand, LocalCommand, KnownHostsCommand, Match exec) and never another config file
# (-F, Include), whose ProxyCommand or Match exec would run one
SSH_OPTIONS_RUNNING_COMMANDS = frozenset(
    {
        "proxycommand",
        "localcommand",
        "permitlocalcommand",
        "knownhostscommand",
        "match",
        "include",
        "remotecommand",
        "proxyusefdpass",
    }
)


def ssh_args_problem(args: Sequence[str]) -> str | None:
    """Why these ssh arguments (ansible_ssh_common_args/extra_args) could run a command on the
    machine running rackops, or None."""
    it = iter(args)
    for a in it:
        if a == "-F":
            return "-F names an ssh config file, whose ProxyCommand or Match exec runs commands"
        if a == "-o":
            a = "-o" + next(it, "")
        if a.startswith("-o"):
            key = a[2:].strip().replace(" ", "=", 1).partition("=")[0].strip().lower()
            if key in SSH_OPTIONS_RUNNING_COMMANDS:
                return f"-o {key} runs a command (or reads a config that can)"
    return None


def natural_key(name: object) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders node9 before node10 and mlx5_2 before mlx5_10 (any value: a
    report's fields are untrusted, so a non-string sorts by its text)."""
    return tuple(
        (0, int(part)) if part.isdecimal() else (1, part)
        for part in re.split(r"(\d+)", str(name))
        if part
    )


# a node name on a command line: a host name (rackops.names: a letter or digit first, so
# never an option; no '[', ',' or space, so never a hostlist)
NODE_RE = re.compile(HOST_NAME)


class UnsafeName(RackopsError):
    """A node name that is not a name: never put on a command line."""

    exit_code = ExitCode.UNREADABLE


def short_repr(value: object, limit: int = 60) -> str:
    """A value as an error message quotes it: its repr, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def node_arg(node: object) -> str:
    """The node name, checked to be a name before it becomes an argument."""
    if not isinstance(node, str) or not NODE_RE.fullmatch(node):
        raise UnsafeName(
            f"node {short_repr(node)} is not a node name (a letter or digit, then letters, digits, "
            "'.', '_', '-'; no hostlist, no option): refused on a command line"
        )
    return node
