"""A second host for the fleet's tests: a real OpenSSH server on a loopback port with its own host key, and another
afd (its own XDG dirs, its own tmux server) behind the forced command in its `authorized_keys`.

The test's own afd (the `xdg_dirs` environment) plays host A; `peer_host` plays host B. The forced command carries
B's XDG dirs, so `afd remote` answers from B's store whoever logs in.
"""

from __future__ import annotations

import getpass
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness import TmuxServer, wait_for

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.settimeout(2)
            return s.recv(4).startswith(b"SSH-")
    except OSError:
        return False


class Sshd:
    """`sshd -D` on 127.0.0.1:port, with its own host key and one authorized_keys file."""

    def __init__(self, base: Path):
        self.base = base
        self.port = _free_port()
        self.host_key = base / "host_ed25519"
        self.authorized_keys = base / "authorized_keys"
        self.log = base / "sshd.log"
        self.proc: subprocess.Popen | None = None
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.host_key)], check=True)
        self.authorized_keys.write_text("")
        self.authorized_keys.chmod(0o600)
        self.config = base / "sshd_config"
        self.config.write_text("\n".join([
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {self.host_key}", f"PidFile {base / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.authorized_keys}", "StrictModes no", "UsePAM no", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "PubkeyAuthentication yes", "PermitRootLogin prohibit-password",
            "Subsystem sftp internal-sftp", "LogLevel VERBOSE", "",
        ]))

    def start(self) -> None:
        if not os.path.exists(SSHD):
            pytest.fail("openssh-server is not installed (no sshd); scripts/test installs it")
        if os.getuid() == 0:
            Path("/run/sshd").mkdir(exist_ok=True)  # its privilege separation directory, when run as root
        self.proc = subprocess.Popen([SSHD, "-D", "-f", str(self.config), "-E", str(self.log)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: _answers(self.port) or self.proc.poll() is not None, timeout=15, message="sshd listening")
        assert self.proc.poll() is None, self.log.read_text(errors="replace")

    def stop(self) -> None:
        """sshd and every session it started (the connections afd keeps open die with it)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        # Its per-connection children outlive a stopped listener: end them too, as a host going down would.
        for pid in _children_of_port(self.port):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass

    def authorize(self, public_key: str, command: str) -> None:
        self.authorized_keys.write_text(f'command="{command}",restrict {public_key}\n')


def _children_of_port(port: int) -> list[int]:
    """The sshd processes holding a connection to `port` (its per-connection children), by their sockets."""
    inodes = set()
    for table in ("/proc/net/tcp",):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            local = parts[1]
            if int(local.split(":")[1], 16) == port:
                inodes.add(parts[9])
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if "sshd" not in (entry / "comm").read_text():
                continue
            for fd in (entry / "fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    pids.append(int(entry.name))
                    break
        except OSError:
            continue
    return pids


class Peer:
    """Host B: its sshd, its XDG environment, its tmux server; `afd(...)` runs a command as B."""

    def __init__(self, base: Path, sshd: Sshd, env: dict[str, str], tmux: TmuxServer):
        self.base, self.sshd, self.env, self.tmux = base, sshd, env, tmux
        self.daemon: subprocess.Popen | None = None

    @property
    def dest(self) -> str:
        return f"{getpass.getuser()}@127.0.0.1"  # an sshd not run as root logs in only the user running it

    def afd(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "afd", *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env)

    def write_config(self, text: str) -> None:
        path = Path(self.env["XDG_CONFIG_HOME"]) / "afd" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def start_daemon(self) -> None:
        err = self.base / "daemon-b.log"
        self.daemon = subprocess.Popen([sys.executable, "-m", "afd", "run", "-L", self.tmux.name],
                                       stdout=subprocess.DEVNULL, stderr=err.open("wb"), env=self.env)
        wait_for(lambda: self.afd("status", "--json").returncode == 0, timeout=20, message="B's daemon answering")

    def stop_daemon(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()

    def remote_command(self, program: str | None = None) -> str:
        """The forced command for A's key: `afd remote` with B's XDG dirs (or `program`, a stand-in)."""
        keep = ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR")
        env = " ".join(f"{k}={shlex.quote(self.env[k])}" for k in keep)
        run = program or f"{shlex.quote(sys.executable)} -m afd remote"
        return f"env {env} PYTHONPATH={shlex.quote(os.environ.get('PYTHONPATH', ''))} {run}"


@pytest.fixture
def peer_host(xdg_dirs):
    """Host B: a real sshd on loopback and B's afd environment; its daemon is started by the test."""
    base = Path(f"/tmp/afd-b-{secrets.token_hex(4)}")
    env = {**os.environ}
    env.pop("TMUX", None)
    for key, sub in (("HOME", "home"), ("XDG_CONFIG_HOME", "cfg"), ("XDG_STATE_HOME", "st"), ("XDG_DATA_HOME", "data"),
                     ("XDG_RUNTIME_DIR", "run")):
        path = base / sub
        path.mkdir(parents=True, mode=0o700)
        env[key] = str(path)
    scratch = base / "t"
    scratch.mkdir()
    prefix = os.environ.get("AFD_TEST_SOCKET_PREFIX", "afd-test-")
    tmux = TmuxServer(name=f"{prefix}b{secrets.token_hex(5)}", env=env, scratch=scratch)
    tmux.run("-f", "/dev/null", "start-server", ";", "set-option", "-g", "exit-empty", "off", check=False)
    sshd = Sshd(base)
    sshd.start()
    peer = Peer(base, sshd, env, tmux)
    try:
        yield peer
    finally:
        peer.stop_daemon()
        sshd.stop()
        tmux.kill()
        shutil.rmtree(base, ignore_errors=True)
