"""The SSH launcher: argv lists on hosts over the controller's own SSH sessions.

``run`` a command and get a :class:`CommandResult`, or ``start`` one (a perftest server)
and wait for it later. The implementation is paramiko: one connection per host, many
channels over it, bounded concurrency by the caller's thread pool (docs/design.md says why
not pyinfra).

Safety: commands are argv lists, quoted with :func:`shlex.quote` into the one string SSH
carries, and every value taken from the inventory is validated before it gets here (the
pydantic model restricts device and interface names). The remote side runs under
coreutils ``timeout -k 5``, so a hung tool is killed on the target, not just abandoned.
Host keys are verified against known_hosts unless new keys are explicitly accepted.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import paramiko

from rackops.names import SSH_OPTIONS_RUNNING_COMMANDS
from rackops.validate.executor import (
    TIMEOUT_RC,
    CommandResult,
    LauncherInfo,
    Target,
    Unreachable,
    remote_command,
)

# paramiko logs what it does not raise (a refused channel: "Secsh channel 49 open FAILED")
# through logging's last-resort handler, onto the run's terminal; what matters of it reaches
# the run as an error of the step. Nothing of the library's own is printed.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

SSH_INFO = LauncherInfo(
    "ssh",
    "SSH",
    unreachable_fix="check the node is powered, on the network and that its host key and SSH "
    "key are right",
    mpi_fix="check mpirun can reach every node over SSH as the login user, and rackops_mpirun_args",
)

USER_SSH_CONFIG = Path("~/.ssh/config").expanduser()  # as OpenSSH reads it
# sshd may send a command's exit status before the last of its output: after the status,
# keep reading until the channel reports EOF, for at most this long.
EOF_GRACE_S = 5.0
# sshd may refuse a session channel under load (ChannelException "Connect failed") while
# the connection stays good, e.g. until the close of a finished channel reaches it: try
# this many times, backing off 0.5 s, 1 s, 2 s, 4 s. paramiko keeps one refusal per
# connection (Transport.saved_exception): when two threads are refused at once, one of
# them takes the other's ChannelException and the other gets a bare SSHException("Unable
# to open channel.") -- the same refusal, retried alike while the connection is up.
CHANNEL_TRIES = 5


@dataclass(frozen=True)
class SshSettings:
    """Where and how to connect, as OpenSSH would: explicit inventory values first, then
    the host's ssh arguments, then ssh_config (~/.ssh/config, or -F)."""

    host: str
    port: int
    user: str | None
    key_files: tuple[str, ...]
    jump: tuple[str, ...]  # ProxyJump hops, [user@]host[:port], outermost first
    proxy_command: str | None
    strict: str | None  # StrictHostKeyChecking as configured (yes|no|accept-new|...)
    known_hosts: str | None  # UserKnownHostsFile


def _ssh_options(args: Sequence[str]) -> tuple[dict[str, str], str | None]:
    """`-o Key=Value` (and -J, -i, -p, -l) into ssh_config keywords; the -F file."""
    opts: dict[str, str] = {}
    config: str | None = None
    flag = {"-J": "proxyjump", "-i": "identityfile", "-p": "port", "-l": "user"}
    it = iter(args)
    for a in it:
        if a == "-o":
            a = "-o" + next(it, "")
        if a.startswith("-o"):
            key, _, value = a[2:].strip().replace(" ", "=", 1).partition("=")
            if key.strip().lower() not in SSH_OPTIONS_RUNNING_COMMANDS:  # second guard
                opts.setdefault(key.strip().lower(), value.strip())
        elif a == "-F":
            config = next(it, None)
        elif a in flag:
            opts.setdefault(flag[a], next(it, ""))
    return opts, config


def resolve(t: Target, default_config: Path | None = None) -> SshSettings:
    opts, config_file = _ssh_options(t.ssh_args)
    cfg_path = Path(config_file).expanduser() if config_file else default_config
    found: dict[str, Any] = {}
    if cfg_path is not None and cfg_path.is_file():
        found = dict(paramiko.SSHConfig.from_path(str(cfg_path)).lookup(t.host))
    merged = {**found, **opts}
    jump = merged.get("proxyjump")
    keys = merged.get("identityfile") or []
    return SshSettings(
        host=str(merged.get("hostname", t.host)),
        port=t.port if t.port != 22 or "port" not in merged else int(merged["port"]),
        user=t.user or merged.get("user"),
        key_files=(str(Path(t.key_file).expanduser()),)
        if t.key_file
        else tuple([keys] if isinstance(keys, str) else keys),
        jump=tuple(h.strip() for h in jump.split(",")) if jump and jump.lower() != "none" else (),
        proxy_command=merged.get("proxycommand") if not jump else None,
        strict=merged.get("stricthostkeychecking"),
        known_hosts=merged.get("userknownhostsfile"),
    )


def _hop(spec: str) -> tuple[str | None, str, int]:
    user, _, rest = spec.rpartition("@")
    host, _, port = rest.partition(":")
    return user or None, host, int(port) if port else 22


@dataclass
class Handle:
    """A started command (a perftest server); read its output while it runs."""

    target: Target
    argv: tuple[str, ...]
    channel: paramiko.Channel
    started: float
    timeout: float
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    release: threading.Semaphore | None = None

    def _pump(self) -> None:
        while self.channel.recv_ready():
            self.out += self.channel.recv(65536)
        while self.channel.recv_stderr_ready():
            self.err += self.channel.recv_stderr(65536)

    def exited(self) -> bool:
        return bool(self.channel.exit_status_ready())

    def wait_for(self, marker: bytes, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._pump()
            if marker in self.out or marker in self.err:
                return True
            if self.channel.exit_status_ready():
                self._pump()
                return marker in self.out
            time.sleep(0.02)
        return False

    def _drain(self, grace: float) -> None:
        """Read what is still in flight after the exit status, up to EOF on both streams."""
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            self._pump()
            if self.channel.eof_received and not (
                self.channel.recv_ready() or self.channel.recv_stderr_ready()
            ):
                return
            time.sleep(0.01)

    def wait(self, timeout: float) -> CommandResult:
        deadline = time.monotonic() + timeout
        while not self.channel.exit_status_ready() and time.monotonic() < deadline:
            self._pump()
            time.sleep(0.02)
        self._pump()
        done = self.channel.exit_status_ready()
        if done:
            self._drain(EOF_GRACE_S)
        rc = self.channel.recv_exit_status() if done else None
        if not done:
            self.channel.close()
        if self.release is not None:
            self.release.release()
            self.release = None
        return CommandResult(
            self.target.name,
            self.argv,
            rc,
            self.out.decode(errors="replace"),
            self.err.decode(errors="replace"),
            time.monotonic() - self.started,
            timed_out=not done or rc == TIMEOUT_RC,
        )


class SshExecutor:
    batch = 1  # the runner's thread pool fans out, one node per call
    info = SSH_INFO

    def __init__(
        self,
        *,
        accept_new_host_keys: bool = False,
        mpirun_args: Sequence[str] = (),
        connect_timeout: float = 10,
        known_hosts: Path | None = None,
        max_sessions: int = 9,  # 8 rails' perftests at once, and the GPU sampler
        ssh_config: Path | None = USER_SSH_CONFIG,
    ) -> None:
        self.ssh_config = ssh_config
        self.mpirun_args = tuple(mpirun_args)
        self._jumps: dict[str, paramiko.SSHClient] = {}
        self.accept_new = accept_new_host_keys
        self.connect_timeout = connect_timeout
        self.known_hosts = known_hosts
        self._clients: dict[str, paramiko.SSHClient] = {}
        self._failed: dict[str, str] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._global = threading.Lock()
        # sshd refuses channels beyond MaxSessions (default 10) on one connection
        self.max_sessions = max_sessions
        self._sessions: dict[str, threading.Semaphore] = {}

    def _client(self, t: Target) -> paramiko.SSHClient:
        with self._global:
            lock = self._locks.setdefault(t.name, threading.Lock())
        with lock:
            if t.name in self._failed:
                raise Unreachable(self._failed[t.name])
            client = self._clients.get(t.name)
            transport = client.get_transport() if client is not None else None
            if client is not None and transport is not None and transport.is_active():
                return client
            s = resolve(t, self.ssh_config)
            try:
                client = self._open(s, self._sock(s))
            except (TimeoutError, OSError, paramiko.SSHException) as exc:
                reason = str(exc) or type(exc).__name__
                if isinstance(exc, paramiko.SSHException) and "not found in known_hosts" in reason:
                    reason += " (verify the key, or pass --accept-new-host-keys)"
                via = f" via {' -> '.join(s.jump)}" if s.jump else ""
                self._failed[t.name] = f"cannot connect to {s.host}:{s.port}{via}: {reason}"
                raise Unreachable(self._failed[t.name]) from exc
            self._clients[t.name] = client
            return client

    def _open(self, s: SshSettings, sock: Any) -> paramiko.SSHClient:
        """A connected client for one hop or the host itself (host key checked)."""
        client = self._new_client(s)
        client.connect(
            s.host,
            port=s.port,
            username=s.user,
            key_filename=s.key_files[0] if s.key_files else None,
            timeout=self.connect_timeout,
            banner_timeout=self.connect_timeout,
            auth_timeout=self.connect_timeout,
            allow_agent=False,
            look_for_keys=not s.key_files,
            sock=sock,
        )
        return client

    def _new_client(self, s: SshSettings) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        known = self.known_hosts or (Path(s.known_hosts).expanduser() if s.known_hosts else None)
        if s.known_hosts == "/dev/null":
            pass  # the host's own ssh settings keep no known hosts
        elif known is not None:
            if known.is_file():
                client.load_host_keys(str(known))
        else:
            client.load_system_host_keys()
        # --accept-new-host-keys, or the host's own StrictHostKeyChecking no|accept-new
        accept = self.accept_new or (s.strict or "").lower() in ("no", "accept-new", "off")
        client.set_missing_host_key_policy(
            paramiko.AutoAddPolicy() if accept else paramiko.RejectPolicy()
        )
        return client

    def _sock(self, s: SshSettings) -> Any:
        """A channel through the ProxyJump hops (each a full SSH connection with its own
        host-key check), or a ProxyCommand; None to connect directly."""
        if s.proxy_command:
            cmd = s.proxy_command.replace("%h", s.host).replace("%p", str(s.port))
            return paramiko.ProxyCommand(cmd)
        sock: Any = None
        hops = list(s.jump)
        for i, spec in enumerate(hops):
            user, host, port = _hop(spec)
            key = f"{spec}|{'|'.join(hops[:i])}"
            with self._global:
                jump = self._jumps.get(key)
            transport = jump.get_transport() if jump is not None else None
            if jump is None or transport is None or not transport.is_active():
                jump = self._open(resolve(Target(host, host, port, user), self.ssh_config), sock)
                with self._global:
                    self._jumps[key] = jump
                transport = jump.get_transport()
            assert transport is not None
            nxt = _hop(hops[i + 1])[1:] if i + 1 < len(hops) else (s.host, s.port)
            sock = transport.open_channel("direct-tcpip", nxt, ("127.0.0.1", 0))
        return sock

    def start(
        self, t: Target, argv: Sequence[str], timeout: float, become: bool | None = None
    ) -> Handle:
        client = self._client(t)
        transport = client.get_transport()
        assert transport is not None
        with self._global:
            slots = self._sessions.setdefault(t.name, threading.Semaphore(self.max_sessions))
        slots.acquire()
        try:
            channel = self._open_session(transport)
        except BaseException:
            slots.release()
            raise
        channel.exec_command(remote_command(argv, timeout, t.become if become is None else become))
        return Handle(t, tuple(argv), channel, time.monotonic(), timeout, release=slots)

    @staticmethod
    def _open_session(transport: paramiko.Transport) -> paramiko.Channel:
        for attempt in range(CHANNEL_TRIES):
            try:
                return transport.open_session()
            except paramiko.SSHException:  # ChannelException, or the bare form above
                if attempt == CHANNEL_TRIES - 1 or not transport.is_active():
                    raise
                time.sleep(0.5 * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def run(
        self, t: Target, argv: Sequence[str], timeout: float, become: bool | None = None
    ) -> CommandResult:
        started = time.monotonic()
        try:
            handle = self.start(t, argv, timeout, become)
        except Unreachable as exc:
            return CommandResult(t.name, tuple(argv), None, "", "", 0.0, error=str(exc))
        except (paramiko.SSHException, OSError) as exc:
            return CommandResult(
                t.name,
                tuple(argv),
                None,
                "",
                "",
                time.monotonic() - started,
                error=f"could not start: {exc}",
            )
        return handle.wait(timeout + 10)  # the remote `timeout` fires first

    def run_cli(self, t: Target, command: str, timeout: float) -> CommandResult:
        """One command line of a switch's own CLI (``show pfc counters``, ``... | json``),
        sent as it is: a NOS has no shell to quote for and no ``timeout``; the channel is
        closed at the timeout instead."""
        started = time.monotonic()
        try:
            client = self._client(t)
            transport = client.get_transport()
            assert transport is not None
            channel = self._open_session(transport)
            channel.exec_command(command)
        except Unreachable as exc:
            return CommandResult(t.name, (command,), None, "", "", 0.0, error=str(exc))
        except (paramiko.SSHException, OSError) as exc:
            return CommandResult(
                t.name,
                (command,),
                None,
                "",
                "",
                time.monotonic() - started,
                error=f"could not start: {exc}",
            )
        return Handle(t, (command,), channel, started, timeout).wait(timeout)

    def run_many(
        self, jobs: Sequence[tuple[Target, Sequence[str]]], timeout: float
    ) -> list[CommandResult]:
        return [self.run(t, argv, timeout) for t, argv in jobs]

    def multi_node(
        self,
        targets: Sequence[Target],
        ranks_per_node: int,
        argv: Sequence[str],
        env: Mapping[str, str],
        timeout: float,
    ) -> CommandResult:
        """mpirun on the first node, reaching the others over SSH as the login user (mpirun
        refuses root, and ranks need no root)."""
        cmd = [
            "mpirun",
            "--host",
            ",".join(f"{t.name}:{ranks_per_node}" for t in targets),
            "-np",
            str(ranks_per_node * len(targets)),
            *self.mpirun_args,
        ]
        for key, value in env.items():
            cmd += ["-x", f"{key}={value}"]
        return self.run(targets[0], [*cmd, *argv], timeout, become=False)

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
