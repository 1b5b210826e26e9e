"""The SSH executor's races with sshd and paramiko, replayed in the order they can happen
(no timing luck needed): output arriving after the exit status, and a session channel
refused while the connection stays up, in either of the forms paramiko reports it."""

from __future__ import annotations

import threading
from pathlib import Path

import paramiko
import pytest

from rackops.validate import ssh as executor
from rackops.validate.executor import Target
from rackops.validate.ssh import Handle, SshExecutor


class LateOutputChannel:
    """A channel whose exit status is ready before the last chunk of stdout and EOF."""

    def __init__(self, chunks: list[bytes], late: bytes) -> None:
        self.chunks, self.late = chunks, late
        self.polls = 0
        self.eof_received = False

    def exit_status_ready(self) -> bool:
        return True

    def recv_exit_status(self) -> int:
        return 0

    def recv_ready(self) -> bool:
        self.polls += 1
        if not self.chunks and self.late and self.polls > 3:  # arrives after the status
            self.chunks.append(self.late)
            self.late = b""
        return bool(self.chunks)

    def recv(self, _n: int) -> bytes:
        data = self.chunks.pop(0)
        if not self.chunks and not self.late:
            self.eof_received = True
        return data

    def recv_stderr_ready(self) -> bool:
        return False

    def close(self) -> None:
        pass


def _handle(channel: LateOutputChannel) -> Handle:
    return Handle(Target("n1", "h"), ("ping",), channel, 0.0, 5)  # type: ignore[arg-type]


STATS = b"3 packets transmitted, 3 received, 0% packet loss, time 405ms\n"


def test_output_after_the_exit_status_is_read_to_eof() -> None:
    result = _handle(LateOutputChannel([b"PING ...\n"], STATS)).wait(5)
    assert result.rc == 0 and result.stdout.endswith(STATS.decode())


def test_without_the_grace_the_output_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """The race the grace exists for: with it off, the statistics line is lost."""
    monkeypatch.setattr(executor, "EOF_GRACE_S", 0.0)
    result = _handle(LateOutputChannel([b"PING ...\n"], STATS)).wait(5)
    assert "packets transmitted" not in result.stdout


class RefusingTransport:
    """sshd refuses the first ``refusals`` channel opens. paramiko reports a refusal as a
    ChannelException, or, to the second of two threads refused at once on one connection
    (the first took the connection's one saved exception), as a bare SSHException: seen in
    the lab under load as PAIR-000 "server did not start: Unable to open channel."."""

    def __init__(
        self,
        refusals: int,
        error: paramiko.SSHException | None = None,
        active: bool = True,
    ) -> None:
        self.refusals, self.opened, self.active = refusals, 0, active
        self.error = error or paramiko.ChannelException(2, "Connect failed")

    def is_active(self) -> bool:
        return self.active

    def open_session(self) -> str:
        self.opened += 1
        if self.opened <= self.refusals:
            raise self.error
        return "channel"


BARE = paramiko.SSHException("Unable to open channel.")


@pytest.mark.parametrize(
    "error", [paramiko.ChannelException(2, "Connect failed"), BARE], ids=["channel", "bare"]
)
def test_a_refused_channel_is_retried(
    monkeypatch: pytest.MonkeyPatch, error: paramiko.SSHException
) -> None:
    monkeypatch.setattr(executor.time, "sleep", lambda _s: None)
    transport = RefusingTransport(refusals=2, error=error)  # refused twice, then accepted
    assert SshExecutor._open_session(transport) == "channel"  # type: ignore[arg-type]
    assert transport.opened == 3


def test_a_channel_refused_every_time_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor.time, "sleep", lambda _s: None)
    transport = RefusingTransport(refusals=executor.CHANNEL_TRIES)
    with pytest.raises(paramiko.ChannelException):
        SshExecutor._open_session(transport)  # type: ignore[arg-type]
    assert transport.opened == executor.CHANNEL_TRIES


def test_a_lost_connection_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor.time, "sleep", lambda _s: None)
    transport = RefusingTransport(refusals=99, error=BARE, active=False)
    with pytest.raises(paramiko.SSHException, match="Unable to open channel"):
        SshExecutor._open_session(transport)  # type: ignore[arg-type]
    assert transport.opened == 1


def test_the_session_slot_is_given_back_when_the_channel_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(executor.time, "sleep", lambda _s: None)
    ex = SshExecutor(max_sessions=1)
    transport = RefusingTransport(refusals=99)

    class Client:
        def get_transport(self) -> RefusingTransport:
            return transport

    monkeypatch.setattr(ex, "_client", lambda _t: Client())
    result = ex.run(Target("n1", "h"), ["true"], 5)
    assert result.error is not None and "could not start" in result.error
    assert ex._sessions["n1"].acquire(blocking=False)  # the one slot is free again
    assert isinstance(ex._sessions["n1"], threading.Semaphore)


def test_ssh_settings_follow_ssh_config_and_the_hosts_ssh_args(tmp_path: Path) -> None:
    """Explicit inventory values first, then ansible_ssh_common_args, then ssh_config."""
    from rackops.validate.executor import Target
    from rackops.validate.ssh import resolve

    cfg = tmp_path / "config"
    cfg.write_text(
        "Host node7\n  HostName 10.9.0.7\n  User ops\n  Port 2222\n"
        "  IdentityFile ~/.ssh/rack\n  ProxyJump bastion.example,admin@inner:2200\n"
        "Host node8\n  HostName 10.9.0.8\n  ProxyCommand nc -x proxy:1080 %h %p\n"
    )
    s = resolve(Target("node7", "node7"), cfg)
    assert (s.host, s.port, s.user) == ("10.9.0.7", 2222, "ops")
    assert s.key_files[0].endswith("/.ssh/rack")
    assert s.jump == ("bastion.example", "admin@inner:2200")
    explicit = resolve(Target("node7", "node7", 22, user="ci", key_file="/k"), cfg)
    assert (explicit.user, explicit.key_files) == ("ci", ("/k",))
    # ansible_ssh_private_key_file: ~ is the controller's home, as Ansible reads it
    tilde = resolve(Target("node7", "node7", key_file="~/.vagrant.d/insecure_private_key"), cfg)
    assert tilde.key_files == (str(Path.home() / ".vagrant.d/insecure_private_key"),)
    args = ("-o", "StrictHostKeyChecking=no", "-o UserKnownHostsFile=/dev/null", "-J", "jh:22")
    s = resolve(Target("node7", "node7", ssh_args=args), cfg)
    assert s.jump == ("jh:22",) and s.strict == "no" and s.known_hosts == "/dev/null"
    s = resolve(Target("node8", "node8"), cfg)
    assert s.proxy_command == "nc -x proxy:1080 10.9.0.8 22" and s.jump == ()
    other = tmp_path / "other"
    other.write_text("Host node7\n  HostName 10.1.1.1\n")
    s = resolve(Target("node7", "node7", ssh_args=("-F", str(other))), cfg)
    assert s.host == "10.1.1.1" and s.jump == ()
