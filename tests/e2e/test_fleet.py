"""The fleet end to end: two afd instances (separate XDG dirs, separate tmux servers) and a real OpenSSH server on a
loopback port between them, with afd's own key and the forced command `afd remote` in its authorized_keys."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_harness import afd, run_daemon, session_for, status, wait_session, write_config  # noqa: F401 (a fixture)
from harness import start_fake, wait_for
from ssh_harness import peer_host  # noqa: F401 (a fixture)

pytestmark = pytest.mark.tmux

SHARED = """
poll_interval = "200ms"

[fleet]
pull_interval = "1s"
timeout = "5s"

[accounts.claude-work]
agent = "claude"
env = { CLAUDE_CONFIG_DIR = "~/.claude-work" }
share = true
"""


def _json(done: subprocess.CompletedProcess) -> object:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def joined(xdg_dirs, peer, *, config: str = SHARED, program: str | None = None) -> str:
    """A's afd asks B: B's config and daemon, A's host added and its key authorized on B. Returns A's public key."""
    peer.write_config(config)
    peer.start_daemon()
    added = afd("hosts", "add", "b", peer.dest, "--port", str(peer.sshd.port), "--json")
    assert added.returncode == 0, added.stderr
    line = _json(afd("hosts", "authorize", "--json"))["line"]  # type: ignore[index]
    public = line.split(",restrict ", 1)[1]
    peer.sshd.authorize(public, peer.remote_command(program))
    return public


def host(name: str = "b") -> dict:
    return next(h for h in _json(afd("hosts", "list", "--json")) if h["name"] == name)  # type: ignore[union-attr]


def ssh_as_a(xdg_dirs, peer, *words: str, tool: str = "ssh") -> subprocess.CompletedProcess:
    """`ssh` (or scp, sftp) with A's afd key to B, as any program on A could run it."""
    key = xdg_dirs["XDG_STATE_HOME"] / "afd" / "ssh" / "id_ed25519"
    opts = ["-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", f"IdentityFile={key}", "-o",
            "StrictHostKeyChecking=no", "-o", f"UserKnownHostsFile={xdg_dirs['HOME'] / 'kh'}"]
    port = ["-P" if tool in ("scp", "sftp") else "-p", str(peer.sshd.port)]
    return subprocess.run([tool, *opts, *port, *words], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


def test_hosts_add_authorize_check_list_remove(run_daemon, tmux_server, xdg_dirs, peer_host):
    write_config(xdg_dirs, SHARED)
    down = afd("hosts", "add", "b", peer_host.dest, "--port", str(peer_host.sshd.port))
    assert down.returncode == 3 and "the daemon is not running" in down.stderr

    run_daemon()
    hostile = afd("hosts", "add", "evil", "-oProxyCommand=touch /tmp/pwned")
    assert hostile.returncode == 2 and "starts with '-'" in hostile.stderr
    assert afd("hosts", "list", "--json").stdout.strip() == "[]"

    joined(xdg_dirs, peer_host)
    line = afd("hosts", "authorize").stdout.strip()
    assert line.startswith('command="/') and '/afd remote",restrict ssh-ed25519 ' in line
    key = xdg_dirs["XDG_STATE_HOME"] / "afd" / "ssh" / "id_ed25519"
    assert key.stat().st_mode & 0o777 == 0o600

    checked = _json(afd("hosts", "check", "--json"))
    assert checked[0]["contact"] == "answered", checked  # type: ignore[index]
    assert checked[0]["version"] and checked[0]["skewed"] is False  # type: ignore[index]

    listed = wait_for(lambda: (lambda h: h if h["contact"] == "answered" else None)(host()), timeout=30,
                      message="the daemon's pull of b")
    assert listed["stale"] is False and listed["host_key"] and listed["host_key"].startswith("ED25519 SHA256:")
    assert listed["dest"] == peer_host.dest and listed["port"] == peer_host.sshd.port
    # Its connection is multiplexed, on a socket in afd's runtime dir.
    assert list((xdg_dirs["XDG_RUNTIME_DIR"] / "afd" / "ssh").glob("c-*"))

    twice = afd("hosts", "add", "b", peer_host.dest)
    assert twice.returncode == 1 and "exists already" in twice.stderr
    removed = afd("hosts", "remove", "b")
    assert removed.returncode == 0, removed.stderr
    assert afd("hosts", "list", "--json").stdout.strip() == "[]"
    gone = afd("hosts", "remove", "b")
    assert gone.returncode == 2 and "no host named" in gone.stderr


def test_the_forced_command_answers_its_read_set_and_refuses_a_shell_scp_and_the_rest(
        run_daemon, tmux_server, xdg_dirs, peer_host):
    write_config(xdg_dirs, SHARED)
    run_daemon()
    joined(xdg_dirs, peer_host)
    dest = peer_host.dest

    version = ssh_as_a(xdg_dirs, peer_host, dest, "version")
    assert version.returncode == 0, version.stderr
    told = json.loads(version.stdout)
    assert told["schema"] == 1 and told["afd"] and "status" not in told

    answered = ssh_as_a(xdg_dirs, peer_host, dest, "status", "limits", "usage")
    assert answered.returncode == 0, answered.stderr
    assert {"status", "limits"} <= set(json.loads(answered.stdout))

    shell = ssh_as_a(xdg_dirs, peer_host, dest)
    assert shell.returncode == 2 and "refused" in shell.stderr and shell.stdout == ""
    for words in (["id"], ["cat", "/etc/passwd"], ["status;", "id"], ["status", "&&", "id"], ["sh", "-c", "id"],
                  ["version", "--help"]):
        done = ssh_as_a(xdg_dirs, peer_host, dest, *words)
        assert done.returncode == 2 and "refused" in done.stderr and done.stdout == "", words

    source = xdg_dirs["HOME"] / "payload"
    source.write_text("x")
    target = peer_host.base / "copied"
    scp = ssh_as_a(xdg_dirs, peer_host, str(source), f"{dest}:{target}", tool="scp")
    assert scp.returncode != 0 and not target.exists()
    sftp = ssh_as_a(xdg_dirs, peer_host, dest, tool="sftp")
    assert sftp.returncode != 0
    forward = ssh_as_a(xdg_dirs, peer_host, "-W", f"127.0.0.1:{peer_host.sshd.port}", dest)
    assert forward.returncode != 0 and "prohibited" in forward.stderr  # `restrict`: no forwarding either


def _sessions_started(peer) -> int:
    """The ssh sessions B's sshd ran for the forced command: one per ask."""
    return peer.sshd.log.read_text(errors="replace").count("Starting session: forced-command")


def test_a_wall_on_b_reaches_a_within_two_pulls_and_a_refuses_a_handoff_into_it(
        run_daemon, tmux_server, xdg_dirs, peer_host, worktree):
    write_config(xdg_dirs, SHARED)
    run_daemon()
    joined(xdg_dirs, peer_host)
    wait_for(lambda: host()["contact"] == "answered", timeout=30, message="b answering")
    mine = start_fake(tmux_server, "codex", cwd=worktree("feature"), prompt="Fix the login test")
    name = session_for(mine.pane)["name"]

    work_dir = Path(peer_host.env["HOME"]) / ".claude-work"
    start_fake(peer_host.tmux, "claude", cwd=peer_host.tmux.scratch, prompt="x", scenario={"limit_now": True},
               env={"CLAUDE_CONFIG_DIR": str(work_dir)})

    def b_limited() -> bool:
        told = json.loads(peer_host.afd("status", "--json").stdout)
        return any(a["name"] == "claude-work" and a["state"] == "limited" for a in told["accounts"])

    wait_for(b_limited, timeout=30, message="B's wall on claude-work")
    asked_before = _sessions_started(peer_host)

    def here() -> dict | None:
        return next((a for a in status()["accounts"] if a["name"] == "claude-work" and a["state"] == "limited"), None)

    fact = wait_for(here, timeout=30, message="B's wall in A's limit map")
    assert fact["source_host"] == "b" and fact["reset_at"]
    # At most one pull was under way when B saw its wall, and the next one brought it.
    assert _sessions_started(peer_host) - asked_before <= 2

    refused = afd("handoff", name, "--to", "claude-work")
    assert refused.returncode == 1, refused.stderr
    assert "claude-work is at its usage limit until" in refused.stderr and "seen on b" in refused.stderr

    # `afd fleet --json`: both hosts' sessions, side by side, this host first.
    fleet = _json(afd("fleet", "--json"))["hosts"]  # type: ignore[index]
    assert [h["name"] for h in fleet][1:] == ["b"] and fleet[0]["here"] is True
    assert [s["name"] for s in fleet[0]["sessions"]] == [name]
    b_sessions = json.loads(peer_host.afd("status", "--json").stdout)["sessions"]
    assert [s["name"] for s in fleet[1]["sessions"]] == [s["name"] for s in b_sessions]
    assert fleet[1]["sessions"][0]["account"] == "claude-work" and fleet[1]["sessions"][0]["state"] == "limited"
    assert fleet[1]["version"] and fleet[1]["last_contact"] and fleet[1]["stale"] is False
    shown = afd("fleet").stdout
    assert "claude-work · limited until" in shown and "seen on b" in shown
    assert "seen on b" in afd("status", "--wide").stdout

    # The live view with the fleet's panel: b's block, its session, above this host's tables.
    env = {k: str(v) for k, v in xdg_dirs.items()} | {"TZ": "UTC", "TERM": "tmux-256color", "LANG": "C.UTF-8",
                                                      "PYTHONPATH": os.pathsep.join(sys.path)}
    command = f"{shlex.quote(sys.executable)} -m afd status --watch --fleet; echo watch-exit=$?; sleep 600"
    pane = tmux_server.new_pane(f"bash --noprofile --norc -c {shlex.quote(command)}", cwd=tmux_server.scratch,
                                env=env, width=160, height=50)
    b_session = fleet[1]["sessions"][0]["name"]
    frame = wait_for(lambda: (f := tmux_server.capture(pane)) and "recent events" in f and f, timeout=30,
                     message="a whole frame of the live view")
    assert f"b ({peer_host.dest}) · afd" in frame and f"{b_session} · claude · claude-work · limited" in frame, frame
    tmux_server.send_keys(pane, "C-c")
    assert "watch-exit=0" in wait_for(lambda: (f := tmux_server.capture(pane)) and "watch-exit=" in f and f, timeout=30,
                                      message="the exit")
    once = afd("status", "--fleet")
    assert once.returncode == 2 and "afd fleet" in once.stderr

    # B's own map is B's: nothing A heard is told back (facts are not passed on), and A's own table is untouched.
    from afd.record.store import Store, default_path

    with Store(default_path()) as store:
        assert "claude-work" not in store.load_limits()


class _Silent:
    """A listener on B's port that accepts and never says a word: a hung host."""

    def __init__(self, port: int):
        import socket
        import threading

        self.sock = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self.held: list = []
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.stop = True
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_a_peer_gone_or_hung_is_stale_and_a_polls_on(run_daemon, tmux_server, xdg_dirs, peer_host, worktree):
    write_config(xdg_dirs, SHARED)
    run_daemon()
    joined(xdg_dirs, peer_host)
    walled = start_fake(peer_host.tmux, "claude", cwd=peer_host.tmux.scratch, prompt="x", scenario={"limit_now": True},
                        env={"CLAUDE_CONFIG_DIR": str(Path(peer_host.env["HOME"]) / ".claude-work")})
    del walled
    wait_for(lambda: any(f["account"] == "claude-work" for f in host()["limits"]), timeout=30,
             message="b's wall told to A")

    peer_host.sshd.stop()
    gone = wait_for(lambda: (lambda h: h if h["contact"] == "unreachable" else None)(host()), timeout=30,
                    message="b unreachable")
    assert gone["stale"] is True and gone["stale_since"] and gone["error"]
    # Its facts are kept, as it last told them, and shown stale; a wall with a stated reset still counts.
    assert [f["account"] for f in gone["limits"]] == ["claude-work"]
    fleet = _json(afd("fleet", "--json"))
    b = next(h for h in fleet["hosts"] if h["name"] == "b")  # type: ignore[index]
    assert b["stale"] is True and b["last_contact"] and b["contact"] == "unreachable"

    # Hung, not gone: it accepts and never answers. Each ask costs the worker its timeout; the poll goes on.
    silent = _Silent(peer_host.sshd.port)
    try:
        asked = host()["asked_at"]
        wait_for(lambda: host()["asked_at"] != asked, timeout=30, message="an ask of the hung host ending")
        late = start_fake(tmux_server, "claude", cwd=worktree("feature"), prompt="x", scenario={"limit_now": True})
        name = session_for(late.pane)["name"]
        wait_session(name, lambda s: s["state"] == "limited", "A's own wall seen while b hangs")
        hung = host()
        assert hung["contact"] == "unreachable" and hung["error"] and hung["stale"] is True
    finally:
        silent.close()

    peer_host.sshd.start()
    wait_for(lambda: host()["contact"] == "answered" and not host()["stale"], timeout=60, message="b answering again")


HOSTILE_PEER = r'''
import json, os, sys
mode = open(sys.argv[1]).read().strip()
if mode == "good":
    os.execv(sys.executable, [sys.executable, "-m", "afd", "remote"])
if mode == "big":
    sys.stdout.write('{"schema": 1, "afd": "0.2.0", "pad": "' + "A" * 10_000_000 + '"}')
elif mode == "malformed":
    sys.stdout.write('{"schema": 1, "afd": "0.2.0", "host": "b", "limits": [{"account": ')
elif mode == "escapes":
    sys.stdout.write(json.dumps({
        "schema": 1, "afd": "0.2.0\u001b]0;pwned\u0007", "host": "b\u001b[2J", "time": "2026-01-01T00:00:00Z",
        "daemon": {"running": True}, "status": {"sessions": []},
        "limits": [{"account": "claude-work", "agent": "claude", "state": "available", "reset_at": None,
                    "observed_at": None, "session": "x\u001b[31m", "banner": None}]}))
elif mode == "stderr":
    sys.stderr.write("\x1b]0;pwned\x07\x1b[2J")
    sys.exit(1)
'''


def test_a_hostile_peer_answer_changes_nothing_but_a_logged_error(run_daemon, tmux_server, xdg_dirs, peer_host):
    write_config(xdg_dirs, SHARED)
    daemon = run_daemon()
    script, mode = peer_host.base / "peer.py", peer_host.base / "mode"
    script.write_text(HOSTILE_PEER)
    mode.write_text("good")
    joined(xdg_dirs, peer_host, program=f"{sys.executable} {script} {mode}")
    start_fake(peer_host.tmux, "claude", cwd=peer_host.tmux.scratch, prompt="x", scenario={"limit_now": True},
               env={"CLAUDE_CONFIG_DIR": str(Path(peer_host.env["HOME"]) / ".claude-work")})

    def told() -> dict | None:
        return next((a for a in status()["accounts"] if a["name"] == "claude-work" and a["source_host"] == "b"), None)

    before = wait_for(told, timeout=30, message="b's wall in A's map")
    before_host = host()

    def refused(contact: str, said: str) -> dict | None:
        h = host()
        return h if h["contact"] == contact and said in (h["error"] or "") else None

    for kind, contact, said in (("big", "invalid", "KiB"), ("malformed", "invalid", "not JSON"),
                                ("escapes", "invalid", "control characters"), ("stderr", "refused", "pwned")):
        mode.write_text(kind)
        after = wait_for(lambda c=contact, w=said: refused(c, w), timeout=30, message=f"the {kind} answer refused")
        assert after["limits"] == before_host["limits"] and after["version"] == before_host["version"]
        assert after["answered_at"] == before_host["answered_at"] and "\x1b" not in after["error"]
        assert told() == before  # the limit map as it was: claude-work still limited, seen on b
        assert f"host b: {contact}: " in daemon.log()
    log = daemon.log()
    assert "\x1b" not in log and "\\x1b]0;pwned" in log  # the stderr's escape shown as text, never sent
    fleet = afd("fleet")
    assert "\x1b" not in fleet.stdout and "\\x1b]0;pwned" in fleet.stdout


def _ran(fake, command: str) -> dict:
    from harness import read_log

    before = len([e for e in read_log(fake.log) if e["event"] == "command"])
    fake.type(f"run: {command}")
    return wait_for(lambda: (c := [e for e in read_log(fake.log) if e["event"] == "command"])[before:] and c[before],
                    timeout=60, message=f"{command!r} run in {fake.pane}")


def test_an_agent_may_neither_add_a_host_nor_hand_out_afds_key(run_daemon, tmux_server, xdg_dirs, worktree):
    write_config(xdg_dirs, SHARED)
    run_daemon()
    fake = start_fake(tmux_server, "claude", cwd=worktree("feature"), prompt="Fix the login test",
                      scenario={"run_commands": True})
    fake.wait_ready()
    name = session_for(fake.pane)["name"]
    afd_cmd = f"{shlex.quote(sys.executable)} -m afd"
    for command in (f"{afd_cmd} hosts add ws me@ws", f"env -u TMUX_PANE {afd_cmd} hosts authorize"):
        ran = _ran(fake, command)
        assert ran["rc"] == 1 and f"refused: this runs inside session {name}'s pane ({fake.pane})" in ran["stderr"], ran
    assert afd("hosts", "list", "--json").stdout.strip() == "[]"
    assert not (xdg_dirs["XDG_STATE_HOME"] / "afd" / "ssh" / "id_ed25519").exists()


def test_a_changed_host_key_is_an_error_not_a_new_first_contact(run_daemon, tmux_server, xdg_dirs, peer_host):
    write_config(xdg_dirs, SHARED)
    run_daemon()
    joined(xdg_dirs, peer_host)
    first = _json(afd("hosts", "check", "--json"))[0]  # type: ignore[index]
    assert first["contact"] == "answered"
    peer_host.sshd.stop()
    peer_host.sshd.host_key.unlink()
    Path(str(peer_host.sshd.host_key) + ".pub").unlink()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(peer_host.sshd.host_key)], check=True)
    peer_host.sshd.start()
    checked = afd("hosts", "check", "--json")
    assert checked.returncode == 1
    again = json.loads(checked.stdout)[0]
    assert again["contact"] == "host-key-changed" and "ssh-keygen -R" in again["error"], again
    listed = wait_for(lambda: (lambda h: h if h["contact"] == "host-key-changed" else None)(host()), timeout=30,
                      message="the daemon's pull refused too")
    assert listed["stale"] is True
