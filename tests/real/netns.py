"""A loopback-only network namespace with its own /etc/hosts, for one test.

A holder process (`unshare --net --mount`) keeps the namespaces alive; other
processes join them with `nsenter`. A tmux server started that way serves
panes inside the namespace, and is still reachable from outside through its
socket file, so afd and the test talk to it as to any other server. The
private /etc/hosts sends Claude Code's own hosts (which ignore
ANTHROPIC_BASE_URL) to the mock on 127.0.0.1.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

# The hosts Claude Code calls whatever ANTHROPIC_BASE_URL says (start-up
# checks, OAuth profile); everything else has no route and fails at once.
MOCKED_HOSTS = ("api.anthropic.com", "platform.claude.com", "console.anthropic.com", "claude.ai",
                # GitHub Copilot CLI signed in with a token: its account and its model API.
                "api.github.com", "api.githubcopilot.com")


def can_create() -> str | None:
    """Why a namespace cannot be made here, or None when it can."""
    if os.geteuid() != 0:
        return "the real-agent tier needs root for its network namespace"
    for tool in ("unshare", "nsenter", "ip", "openssl"):
        if not any((Path(d) / tool).exists() for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/sbin", "/sbin"]):
            return f"the real-agent tier needs `{tool}`"
    return None


@dataclass
class Namespace:
    holder: subprocess.Popen

    @property
    def pid(self) -> int:
        return self.holder.pid

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run inside the namespace."""
        return ["nsenter", f"--target={self.pid}", "--net", "--mount", "--", *argv]

    def close(self) -> None:
        if self.holder.poll() is None:
            self.holder.send_signal(signal.SIGKILL)
        self.holder.wait(timeout=10)


def open_namespace(scratch: Path) -> Namespace:
    hosts = scratch / "hosts"
    hosts.write_text("127.0.0.1 localhost " + " ".join(MOCKED_HOSTS) + "\n::1 localhost\n", encoding="utf-8")
    script = 'ip link set lo up && mount --bind "$1" /etc/hosts && echo ready && exec sleep 86400'
    env = {**os.environ, "PATH": os.environ.get("PATH", "") + ":/usr/sbin:/sbin"}
    holder = subprocess.Popen(
        ["unshare", "--net", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", str(hosts)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = holder.stdout.readline().strip()
    if line != "ready":
        holder.kill()
        raise RuntimeError(f"could not make a network namespace: {holder.stderr.read().strip()}")
    return Namespace(holder)


def make_ca(directory: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA and a certificate for the mocked hosts: (ca.pem, cert.pem, key.pem)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    cert, key, csr = directory / "cert.pem", directory / "key.pem", directory / "cert.csr"
    ext = directory / "ext.cnf"
    names = ",".join(f"DNS:{h}" for h in (*MOCKED_HOSTS, "localhost")) + ",IP:127.0.0.1"
    ext.write_text(f"subjectAltName={names}\nbasicConstraints=CA:FALSE\n", encoding="utf-8")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=afd test CA",
            "-keyout", str(ca_key), "-out", str(ca))
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=api.anthropic.com", "-keyout", str(key), "-out", str(csr))
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
            "-days", "2", "-extfile", str(ext), "-out", str(cert))
    return ca, cert, key
