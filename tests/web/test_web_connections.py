"""Idle connections to the dashboard, against a running daemon at the usual open-files limit: each is closed,
the control socket keeps answering, and a wall that appears meanwhile is found."""

from __future__ import annotations

import json
import resource
import selectors
import socket
import threading

import pytest
from web_harness import Client, afd, free_port, web_config

from afd.web.gate import MAX_CONNECTIONS, RESERVE
from daemon_harness import run_daemon, session_for, wait_state, write_config  # noqa: F401 (run_daemon is a fixture)
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux

IDLE = 1100  # more than the 1,024 descriptors a process gets by default


class Flood:
    """IDLE connections that send nothing, kept at that number: one closed by the server is opened again."""

    def __init__(self, port: int, count: int = IDLE):
        self.port = port
        self.count = count
        self.sel = selectors.DefaultSelector()
        self.closed_by_server = 0
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> None:
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", self.port))
        self.sel.register(s, selectors.EVENT_READ)

    def _closed(self, s: socket.socket) -> bool:
        """Read what the server said; True once it has closed the connection."""
        try:
            while True:
                data = s.recv(4096)
                if not data:
                    return True
        except BlockingIOError:
            return False
        except OSError:  # reset or refused: closed all the same
            return True

    def _run(self) -> None:
        for _ in range(self.count):
            self._open()
        while not self.stopping.is_set():
            for key, _ in self.sel.select(0.2):
                if self._closed(key.fileobj):
                    self.sel.unregister(key.fileobj)
                    key.fileobj.close()
                    with self.lock:
                        self.closed_by_server += 1
                    self._open()

    def start(self) -> Flood:
        self.thread.start()
        return self

    def __enter__(self) -> Flood:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        self.close()

    def stop(self) -> None:
        """Stop opening new ones; the ones open now are left for `wait_all_closed`."""
        self.stopping.set()
        self.thread.join(10)

    def wait_all_closed(self) -> None:
        def drained() -> bool:
            for key, _ in self.sel.select(0.2):
                if self._closed(key.fileobj):
                    self.sel.unregister(key.fileobj)
                    key.fileobj.close()
            return not self.sel.get_map()

        wait_for(drained, timeout=90, message="the server closing every idle connection")

    def close(self) -> None:
        for key in list(self.sel.get_map().values()):
            self.sel.unregister(key.fileobj)
            key.fileobj.close()
        self.sel.close()


def held_connections(pid: int, port: int) -> int:
    """The connections to the dashboard's port the daemon holds open."""
    import psutil

    return sum(1 for c in psutil.Process(pid).net_connections(kind="tcp") if c.laddr and c.laddr.port == port and c.raddr)


def open_files(pid: int) -> int:
    import os

    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture
def enough_descriptors():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4 * IDLE
    if hard != resource.RLIM_INFINITY and hard < 2 * IDLE:
        pytest.fail(f"this test holds {IDLE} connections and needs a hard open-files limit of at least {2 * IDLE} (it is {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard) if hard != resource.RLIM_INFINITY else wanted, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_idle_connections_are_closed_and_neither_the_control_socket_nor_a_wall_waits_for_them(
        enough_descriptors, run_daemon, tmux_server, xdg_dirs):
    port = free_port()
    write_config(xdg_dirs, web_config(port))
    # Soft and hard at 1,024: raising the soft limit gains nothing, so the bound and the reserve must hold.
    daemon = run_daemon("-v", nofile=1024)
    before = open_files(daemon.proc.pid)
    flood = Flood(port).start()
    held = []
    try:
        def first_wave_closed() -> bool:
            held.append(open_files(daemon.proc.pid))
            return flood.closed_by_server >= MAX_CONNECTIONS

        # The ones it took, it closes when their time to ask is up; the rest wait in the kernel's queue.
        wait_for(first_wave_closed, timeout=90, message="the server closing the idle connections it took")
        # With the connections kept at 1,100 all along: the control socket answers…
        for _ in range(3):
            done = afd("status", "--json")
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["daemon"]["running"] is True
        # …and a wall that appears now is found.
        fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True})
        fake.wait_ready()
        name = session_for(fake.pane)["name"]
        assert wait_state(name, "limited")["agent"] == "claude"
        assert afd("status").returncode == 0
        held.append(open_files(daemon.proc.pid))
    finally:
        flood.stop()
    # However many came, the daemon's file table kept room for everything else…
    assert max(held) < 1024 - 128, (before, held)
    flood.close()
    # …and it holds none of them once they stop coming.
    wait_for(lambda: held_connections(daemon.proc.pid, port) == 0, timeout=120, message="the daemon holding no idle connection")
    # A wave the listen queue takes whole: every one of them answered and closed by the server.
    wave = Flood(port, count=100).start()
    wave.stop()
    try:
        wave.wait_all_closed()
    finally:
        wave.close()
    # The dashboard serves as before.
    client = Client(port)
    client.log_in()
    assert name in client.get("/api/status").text
    assert daemon.proc.poll() is None
    log = daemon.log()
    assert "Too many open files" not in log and "Traceback" not in log, log[-3000:]
    assert "as many as the dashboard serves at once; new ones wait" in log


def test_near_its_open_files_limit_the_dashboard_gives_way_to_the_rest_of_afd(run_daemon, tmux_server, xdg_dirs):
    port = free_port()
    write_config(xdg_dirs, web_config(port))
    limit = RESERVE + 40  # room for the daemon's own descriptors and a few connections, no more
    daemon = run_daemon(nofile=limit)
    with Flood(port, count=200).start() as flood:
        wait_for(lambda: "within 256 of its limit" in daemon.log(), timeout=60, message="a connection turned away")
        assert afd("status").returncode == 0
        fake = start_fake(tmux_server, "claude", cwd=tmux_server.scratch, scenario={"limit_now": True})
        fake.wait_ready()
        assert wait_state(session_for(fake.pane)["name"], "limited")["agent"] == "claude"
        assert open_files(daemon.proc.pid) < limit - RESERVE // 2  # the reserve stays free
        assert flood.closed_by_server > 0
    assert "Too many open files" not in daemon.log()


def test_a_request_whose_head_or_body_never_ends_is_closed(run_daemon, xdg_dirs):
    port = free_port()
    write_config(xdg_dirs, web_config(port))
    run_daemon()
    session = Client(port)
    session.log_in()
    said = {}
    for what, sent in (
        ("nothing", b""),
        ("half a head", b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port),
        ("blank lines", b"\r\n\r\n\r\n"),
        ("half a body", (b"POST /api/sessions/x/resume HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nx-afd: 1\r\n"
                         b"Authorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{" % (port, session.session.encode()))),
    ):
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            s.sendall(sent)
            reply = b""
            while chunk := s.recv(4096):  # until the server closes it
                reply += chunk
        said[what] = reply.split(b"\r\n", 1)[0]
    assert said == {"nothing": b"HTTP/1.1 408 Request Timeout", "half a head": b"HTTP/1.1 408 Request Timeout",
                    "blank lines": b"HTTP/1.1 408 Request Timeout", "half a body": b"HTTP/1.1 408 Request Timeout"}
