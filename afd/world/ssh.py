"""Asking another host's afd over OpenSSH: the system's `ssh` client, afd's own key, one connection per host.

Every ask is `ssh [options] -- DEST WORDS…`, where the other side's
`authorized_keys` runs `afd remote` for afd's key whatever is asked (a
forced command, `afd hosts authorize`), and WORDS are the requests
(afd.judge.peer_answer.REQUESTS). The options are fixed here, whatever the
user's `~/.ssh/config` says of them:

* afd's own key, `IdentitiesOnly` (a forced command on the user's everyday
  key would take their ordinary ssh to that host away);
* `BatchMode` (never a password or passphrase prompt), `ConnectTimeout`;
* one multiplexed connection per host (`ControlMaster auto`,
  `ControlPersist`), its socket in afd's runtime dir: a pull every minute
  opens one session on it, not a connection, so a big host's session cap is
  not hit;
* host keys: a new one is accepted at first contact (`accept-new`) into
  afd's own known_hosts, its fingerprint reported; a changed one is an
  error. The user's own known_hosts is read, never written;
* no agent or X11 forwarding, no tty, no local command.

The answer is read up to a cap and the client killed past it or past the
timeout: a hung or dead host costs a timeout, nothing more. A dead master
connection is replaced by ssh itself; a hung one is told to exit after a
timeout, so the next ask starts afresh. Nothing here touches the store.
"""

from __future__ import annotations

import enum
import hashlib
import os
import re
import selectors
import shlex
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from afd.display.text import neutral
from afd.errors import EXIT_USAGE, UserError

# sun_path holds 108 bytes; ssh adds a 17-character suffix to the path while it binds.
_MAX_CONTROL_PATH = 107 - 17
_ADDED = re.compile(r"Permanently added '([^']+)' \(([^)]+)\) to the list of known hosts")
_DEST = re.compile(r"[^\s\x00-\x1f\x7f]+")


class Outcome(enum.StrEnum):
    ANSWERED = "answered"  # the other side's command ended with status 0
    UNREACHABLE = "unreachable"  # no connection, or no answer in time
    REFUSED = "refused"  # connected, but the key or the command was refused
    TOO_BIG = "too-big"  # it answered more than the cap
    HOST_KEY_CHANGED = "host-key-changed"


@dataclass(frozen=True, slots=True)
class Reply:
    """How one ask went: its outcome, what came back, and the instants around it (for the clocks' skew)."""

    outcome: Outcome
    stdout: bytes
    error: str | None  # one line, when it did not answer
    sent_at: datetime
    received_at: datetime
    new_host_key: str | None = None  # "ED25519 SHA256:…" when its host key was accepted on this ask


class DestError(UserError):
    code = EXIT_USAGE


def check_dest(dest: str, port: int | None) -> None:
    """Refuse what `ssh` would take for an option (`-oProxyCommand=…`), and what is not one word."""
    if not dest or dest.startswith("-"):
        raise DestError(f"{dest!r} starts with '-', which ssh reads as an option; give the host as an alias of "
                        "~/.ssh/config or user@host, and its port with --port")
    if not _DEST.fullmatch(dest):
        raise DestError(f"{dest!r} is not one word of printable characters; give an alias of ~/.ssh/config or user@host")
    if port is not None and not 1 <= port <= 65535:
        raise DestError(f"port {port} is not between 1 and 65535")


@dataclass(frozen=True, slots=True)
class Transport:
    """How afd runs `ssh`: its key, its known_hosts, where the connections' sockets live, how long it waits."""

    key: Path
    known_hosts: Path
    control_dir: Path
    timeout: float = 10.0  # seconds for one ask, connection included
    persist: float = 180.0  # seconds an idle connection is kept
    max_bytes: int = 1 << 20
    ssh: str = "ssh"

    def control_path(self, dest: str, port: int | None) -> Path:
        """The socket of the host's connection: short (a hash), so it fits a Unix socket's path."""
        digest = hashlib.sha256(f"{dest}\0{port or ''}\0{self.key}".encode()).hexdigest()[:16]
        path = self.control_dir / f"c-{digest}"
        if len(os.fsencode(str(path))) > _MAX_CONTROL_PATH:
            raise UserError(f"the ssh control path {path} is too long for a Unix socket; set XDG_RUNTIME_DIR to a "
                            "shorter directory")
        return path

    def options(self, dest: str, port: int | None) -> list[str]:
        user_known = os.path.expanduser("~/.ssh/known_hosts")
        # ssh writes a key it accepts to the first file, and reads both: the user's own file stays as it was.
        known = f'"{self.known_hosts}" "{user_known}"'
        alive = max(1, int(self.timeout // 3) or 1)
        opts = {
            "BatchMode": "yes", "ConnectTimeout": str(max(1, int(self.timeout))), "IdentitiesOnly": "yes",
            "IdentityFile": f'"{self.key}"', "IdentityAgent": "none", "PasswordAuthentication": "no",
            "KbdInteractiveAuthentication": "no", "StrictHostKeyChecking": "accept-new", "UserKnownHostsFile": known,
            "UpdateHostKeys": "no", "ControlMaster": "auto", "ControlPath": f'"{self.control_path(dest, port)}"',
            "ControlPersist": f"{int(self.persist)}s", "ServerAliveInterval": str(alive), "ServerAliveCountMax": "3",
            "ForwardAgent": "no", "ForwardX11": "no", "ClearAllForwardings": "yes", "PermitLocalCommand": "no",
            "RequestTTY": "no", "LogLevel": "INFO",
        }
        argv = []
        for name, value in opts.items():
            argv += ["-o", f"{name}={value}"]
        if port is not None:
            argv += ["-p", str(port)]
        return argv

    def argv(self, dest: str, port: int | None, words: tuple[str, ...]) -> list[str]:
        check_dest(dest, port)
        return [self.ssh, "-T", *self.options(dest, port), "--", dest, *words]

    def ask(self, dest: str, port: int | None, words: tuple[str, ...]) -> Reply:
        """Run one ask and read its answer, never longer than `timeout`, never more than `max_bytes`."""
        self.control_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        argv = self.argv(dest, port, words)
        sent = _now()
        with tempfile.TemporaryFile() as err:
            try:
                # stderr to a file: a master connection that ssh leaves running keeps what it inherited open.
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                        start_new_session=True)
            except OSError as exc:
                return Reply(Outcome.UNREACHABLE, b"", f"cannot run {self.ssh}: {exc.strerror or exc}", sent, _now())
            out, cut, late = _read(proc, self.max_bytes, time.monotonic() + self.timeout)
            received = _now()
            err.seek(0)
            errors = err.read(64 * 1024).decode("utf-8", "replace")
        added = _ADDED.search(errors)
        new_key = self.fingerprint(added.group(1)) if added else None
        if late:
            self.stop(dest, port)  # its connection may be the one that hangs: the next ask opens a new one
            return Reply(Outcome.UNREACHABLE, b"", f"no answer within {self.timeout:g} s", sent, received, new_key)
        if cut:
            return Reply(Outcome.TOO_BIG, b"", f"it answered more than {self.max_bytes // 1024} KiB; nothing was read",
                         sent, received, new_key)
        code = proc.returncode
        if code == 0:
            return Reply(Outcome.ANSWERED, out, None, sent, received, new_key)
        said = _last_line(errors)
        if code == 255:
            if "IDENTIFICATION HAS CHANGED" in errors or "Host key verification failed" in errors:
                return Reply(Outcome.HOST_KEY_CHANGED, b"", "its host key is not the one accepted before: if the host was "
                             f"reinstalled, remove the old key with `ssh-keygen -R HOST -f {self.known_hosts}`",
                             sent, received, new_key)
            if "Permission denied" in errors:
                return Reply(Outcome.REFUSED, b"", "it refused afd's key: add the line `afd hosts authorize` prints to "
                             "its ~/.ssh/authorized_keys", sent, received, new_key)
            return Reply(Outcome.UNREACHABLE, b"", said or "ssh could not connect", sent, received, new_key)
        if code == 127:
            said = "it ran no `afd remote`: authorize afd's key with the forced command `afd hosts authorize` prints"
        return Reply(Outcome.REFUSED, b"", f"{said or 'its command failed'} (exit {code})", sent, received, new_key)

    def fingerprint(self, known_name: str) -> str | None:
        """The fingerprint of the key afd's known_hosts holds for `known_name` (`[127.0.0.1]:2222`)."""
        try:
            done = subprocess.run(["ssh-keygen", "-l", "-F", known_name, "-f", str(self.known_hosts)],
                                  capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        for line in done.stdout.splitlines():
            if line and not line.startswith("#"):
                parts = line.split()
                return " ".join(parts[1:3]) if len(parts) >= 3 else line.strip()
        return None

    def stop(self, dest: str, port: int | None) -> None:
        """Ask the host's master connection to exit (after a hung ask; when afd stops or the host is removed)."""
        try:
            path = self.control_path(dest, port)
        except UserError:
            return
        if not path.exists():
            return
        try:
            subprocess.run([self.ssh, "-O", "exit", "-o", f'ControlPath="{path}"', *(["-p", str(port)] if port else []),
                            "--", dest], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("Warning: Permanently added")]
    # The other side's stderr comes through here: a hostile host's escape sequences must not reach the store.
    return neutral(lines[-1])[:300] if lines else ""


def _read(proc: subprocess.Popen, cap: int, deadline: float) -> tuple[bytes, bool, bool]:
    """What the process writes to stdout, until it ends: (bytes, over the cap, past the deadline). Kills it past either."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    chunks: list[bytes] = []
    size = 0
    cut = late = False
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                late = True
                break
            if sel.select(min(left, 0.2)):
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                size += len(chunk)
                if size > cap:
                    cut = True
                    break
                chunks.append(chunk)
            elif proc.poll() is not None:
                break  # ended, and the pipe still open: a master connection holds it
    if cut or late:
        _kill(proc)
    else:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            late = True
            _kill(proc)
    proc.stdout.close()
    return b"".join(chunks), cut, late


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, 9)
    except OSError:
        proc.kill()
    proc.wait()


# --- afd's key ------------------------------------------------------------------


def ensure_key(path: Path) -> str:
    """afd's own ed25519 key at `path` (0600, made once), and its public line."""
    pub = path.with_name(path.name + ".pub")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path.parent, 0o700)
        comment = f"afd@{socket.gethostname()}"
        try:
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                           check=True, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise UserError("ssh-keygen is not installed; install OpenSSH's client (Debian: openssh-client)") from None
        except subprocess.CalledProcessError as exc:
            raise UserError(f"ssh-keygen could not make afd's key at {path}: {exc.stderr.strip()}") from None
    os.chmod(path, 0o600)
    return pub.read_text().strip()


def authorized_line(public_key: str, command: list[str]) -> str:
    """The `authorized_keys` line for the other host: afd's key, good only for `afd remote`, nothing else."""
    text = shlex.join(command).replace("\\", "\\\\").replace('"', '\\"')
    return f'command="{text}",restrict {public_key}'
