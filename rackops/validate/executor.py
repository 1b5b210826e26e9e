"""Run argv lists on hosts over SSH with a timeout that kills the remote process.

One small interface (:class:`Executor`): ``run`` a command and get a
:class:`CommandResult`, or ``start`` one (a perftest server) and wait for it later.
The implementation is paramiko: one connection per host, many channels over it, bounded
concurrency by the caller's thread pool (docs/design.md says why not pyinfra).

Safety: commands are argv lists, quoted with :func:`shlex.quote` into the one string SSH
carries, and every value taken from the inventory is validated before it gets here (the
pydantic model restricts device and interface names). The remote side runs under
coreutils ``timeout -k 5``, so a hung tool is killed on the target, not just abandoned.
Host keys are verified against known_hosts unless new keys are explicitly accepted.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

TIMEOUT_RC = 124  # coreutils timeout
# sshd may send a command's exit status before the last of its output: after the status,
# keep reading until the channel reports EOF, for at most this long.
EOF_GRACE_S = 5.0
# sshd may refuse a session channel under load (ChannelException "Connect failed") while
# the connection stays good: try this many times, backing off 0.5 s, 1 s, ...
CHANNEL_TRIES = 3


@dataclass(frozen=True)
class Target:
    name: str
    host: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    become: bool = False


@dataclass
class CommandResult:
    host: str
    argv: tuple[str, ...]
    rc: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    error: str | None = None  # could not connect / could not start

    @property
    def ran(self) -> bool:
        return self.error is None


class Unreachable(Exception):
    pass


def remote_command(argv: Sequence[str], timeout: float, become: bool) -> str:
    cmd = ["timeout", "-k", "5", f"{max(1, int(timeout))}", *argv]
    if become:
        cmd = ["sudo", "-n", *cmd]
    return " ".join(shlex.quote(a) for a in cmd)


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
    def __init__(
        self,
        *,
        accept_new_host_keys: bool = False,
        connect_timeout: float = 10,
        known_hosts: Path | None = None,
        max_sessions: int = 8,
    ) -> None:
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
            client = paramiko.SSHClient()
            if self.known_hosts is not None:
                client.load_host_keys(str(self.known_hosts))
            else:
                client.load_system_host_keys()
            client.set_missing_host_key_policy(
                paramiko.AutoAddPolicy() if self.accept_new else paramiko.RejectPolicy()
            )
            try:
                client.connect(
                    t.host,
                    port=t.port,
                    username=t.user,
                    key_filename=t.key_file,
                    timeout=self.connect_timeout,
                    banner_timeout=self.connect_timeout,
                    auth_timeout=self.connect_timeout,
                    allow_agent=False,
                    look_for_keys=t.key_file is None,
                )
            except (TimeoutError, OSError, paramiko.SSHException) as exc:
                reason = str(exc) or type(exc).__name__
                if isinstance(exc, paramiko.SSHException) and "not found in known_hosts" in reason:
                    reason += " (verify the key, or pass --accept-new-host-keys)"
                self._failed[t.name] = f"cannot connect to {t.host}:{t.port}: {reason}"
                raise Unreachable(self._failed[t.name]) from exc
            self._clients[t.name] = client
            return client

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
            except paramiko.ChannelException:
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

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
