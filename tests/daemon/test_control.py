"""The control socket: protocol, permissions, stale sockets, peer credentials, the client."""

from __future__ import annotations

import json
import os
import queue
import select
import shutil
import socket
import stat
import tempfile
import threading
from pathlib import Path

import pytest

from afd.daemon import control
from afd.daemon.control import ControlError, ControlServer, DaemonTimeout, DaemonUnavailable, Stream
from afd.errors import EXIT_DAEMON_DOWN, EXIT_FAIL, EXIT_USAGE


@pytest.fixture
def short_dir():
    """A private directory under /tmp, short enough for AF_UNIX paths."""
    base = Path(tempfile.mkdtemp(prefix="afdc-", dir="/tmp"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


def handle(cmd: str, args: dict) -> object:
    if cmd == "echo":
        return {"echo": args}
    if cmd == "refuse":
        raise ControlError("no session named 'x'", EXIT_USAGE)
    if cmd == "crash":
        raise RuntimeError("boom")
    if cmd == "events":
        return Stream("events", result={"backlog": [1, 2]})
    if cmd == "unjsonable":
        return {"value": object()}
    raise ControlError(f"unknown command {cmd!r}", EXIT_USAGE)


class ServerThread:
    """Runs a ControlServer's loop on its own thread, the way the daemon's poll loop would.

    Everything touching the server, including `publish`, runs on that thread (`in_loop`).
    """

    def __init__(self, server: ControlServer):
        self.server = server
        self._calls: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.server.serve_pending(0.02)
            while not self._calls.empty():
                fn, done = self._calls.get()
                done.put(fn())
        self.server.close()

    def in_loop(self, fn):
        done: queue.Queue = queue.Queue()
        self._calls.put((fn, done))
        return done.get(timeout=10)

    def start(self) -> None:
        self.server.start()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@pytest.fixture
def running(short_dir):
    """A started server at `<short_dir>/run/afd/control.sock`, served on a thread."""
    runner = ServerThread(ControlServer(short_dir / "run" / "afd" / "control.sock", handle))
    runner.start()
    yield runner
    runner.stop()


def leave_stale_socket(path: Path) -> None:
    """Bind and close: the socket file stays and nobody listens, as after a crash."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))


def raw_exchange(path: Path, *lines: bytes) -> list[dict]:
    """Send raw request lines on one connection and read one answer per line."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        reader = sock.makefile("rb")
        answers = []
        for line in lines:
            sock.sendall(line)
            answers.append(json.loads(reader.readline()))
        return answers


def test_request_round_trip(running):
    assert control.request(running.server.path, "echo", {"n": 1, "s": "é"}) == {"echo": {"n": 1, "s": "é"}}


def test_request_without_args_sends_an_empty_object(running):
    assert control.request(running.server.path, "echo") == {"echo": {}}


def test_error_answer_raises_control_error_with_message_and_code(running):
    with pytest.raises(ControlError) as caught:
        control.request(running.server.path, "refuse")
    assert str(caught.value) == "no session named 'x'"
    assert caught.value.code == EXIT_USAGE


def test_a_crashing_handler_answers_an_internal_error_and_the_server_keeps_serving(running):
    with pytest.raises(ControlError) as caught:
        control.request(running.server.path, "crash")
    assert caught.value.code == EXIT_FAIL
    assert "boom" in str(caught.value)
    assert control.request(running.server.path, "echo", {"after": True}) == {"echo": {"after": True}}


def test_a_result_that_is_not_json_is_an_error_not_a_dead_connection(running):
    with pytest.raises(ControlError, match="not JSON"):
        control.request(running.server.path, "unjsonable")


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b"not json\n", id="not-json"),
        pytest.param(b"\xff\xfe\n", id="not-utf8"),
        pytest.param(b"[1, 2]\n", id="not-an-object"),
        pytest.param(b'{"args": {}}\n', id="no-cmd"),
        pytest.param(b'{"cmd": 7}\n', id="cmd-not-a-string"),
        pytest.param(b'{"cmd": "echo", "args": [1]}\n', id="args-not-an-object"),
    ],
)
def test_a_malformed_request_gets_an_error_and_the_connection_keeps_serving(running, line):
    bad, good = raw_exchange(running.server.path, line, b'{"cmd": "echo", "args": {"ok": 1}}\n')
    assert bad["ok"] is False
    assert bad["code"] == EXIT_USAGE
    assert bad["error"].startswith("malformed request")
    assert good == {"ok": True, "result": {"echo": {"ok": 1}}}


def test_several_requests_on_one_connection_are_answered_in_order(running):
    answers = raw_exchange(
        running.server.path,
        b'{"cmd": "echo", "args": {"i": 1}}\n{"cmd": "echo", "args": {"i": 2}}\n',
        b"",
    )
    assert answers == [{"ok": True, "result": {"echo": {"i": 1}}}, {"ok": True, "result": {"echo": {"i": 2}}}]


def test_a_silent_client_does_not_block_others(running):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as idle:
        idle.connect(str(running.server.path))
        idle.sendall(b'{"cmd": "ec')  # half a request, then nothing
        assert control.request(running.server.path, "echo", {"x": 1}) == {"echo": {"x": 1}}


def test_socket_is_0600_and_the_directories_it_creates_are_0700(running, short_dir):
    path = running.server.path
    assert stat.S_ISSOCK(path.lstat().st_mode)
    assert stat.S_IMODE(path.lstat().st_mode) == 0o600
    assert stat.S_IMODE((short_dir / "run" / "afd").stat().st_mode) == 0o700
    assert stat.S_IMODE((short_dir / "run").stat().st_mode) == 0o700


def test_close_removes_the_socket_file(short_dir):
    server = ControlServer(short_dir / "c.sock", handle)
    server.start()
    assert server.path.exists()
    server.close()
    assert not server.path.exists()


def test_close_leaves_a_socket_file_that_another_server_now_owns(short_dir):
    path = short_dir / "c.sock"
    old = ControlServer(path, handle)
    old.start()
    os.unlink(path)  # e.g. removed by hand, then a new daemon started
    with ControlServer(path, handle) as new:
        old.close()
        assert path.exists()
        assert new.path == path


def test_a_stale_socket_file_is_replaced(short_dir):
    path = short_dir / "c.sock"
    leave_stale_socket(path)  # the file stays, nobody listens: what a crashed daemon leaves
    assert path.exists()
    runner = ServerThread(ControlServer(path, handle))
    runner.start()
    try:
        assert control.request(path, "echo", {"fresh": True}) == {"echo": {"fresh": True}}
    finally:
        runner.stop()


def test_a_second_server_on_a_live_socket_refuses_and_leaves_the_first_serving(running):
    path = running.server.path
    inode = path.stat().st_ino
    with pytest.raises(ControlError, match="already listening"):
        ControlServer(path, handle).start()
    assert path.stat().st_ino == inode
    assert control.request(path, "echo", {"still": "here"}) == {"echo": {"still": "here"}}


def test_a_regular_file_at_the_socket_path_is_refused_and_kept(short_dir):
    path = short_dir / "c.sock"
    path.write_text("not mine to delete")
    with pytest.raises(ControlError, match="not a socket"):
        ControlServer(path, handle).start()
    assert path.read_text() == "not mine to delete"


def long_path(base: Path, size: int) -> Path:
    name = "s" * (size - len(os.fsencode(str(base))) - 1)
    return base / name


@pytest.mark.parametrize(
    ("size", "fits"),
    [pytest.param(107, True, id="107-bytes-fits"), pytest.param(108, False, id="108-bytes-refused")],
)
def test_socket_path_limit_is_the_af_unix_limit(short_dir, size, fits):
    path = long_path(short_dir, size)
    assert len(os.fsencode(str(path))) == size
    server = ControlServer(path, handle)
    if fits:
        server.start()
        assert path.exists()
        server.close()
    else:
        with pytest.raises(ControlError, match="over the 107-byte limit"):
            server.start()
        assert not path.exists()


def test_client_refuses_a_path_over_the_limit_with_a_clear_message(short_dir):
    with pytest.raises(ControlError, match="limit of a Unix socket"):
        control.request(long_path(short_dir, 200), "echo")


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda path: None, id="no-file"),
        pytest.param(leave_stale_socket, id="stale-socket"),
    ],
)
def test_request_with_no_daemon_raises_daemon_unavailable(short_dir, make):
    path = short_dir / "c.sock"
    make(path)
    with pytest.raises(DaemonUnavailable) as caught:
        control.request(path, "echo")
    assert caught.value.code == EXIT_DAEMON_DOWN
    assert str(path) in str(caught.value)


def test_a_daemon_that_accepts_but_never_answers_is_a_timeout_not_down(short_dir):
    server = ControlServer(short_dir / "c.sock", handle)
    server.start()  # listening, never served
    try:
        with pytest.raises(DaemonTimeout):
            control.request(server.path, "echo", timeout=0.2)
    finally:
        server.close()


@pytest.mark.parametrize(
    ("peer", "own", "allowed"),
    [
        pytest.param(1000, 1000, True, id="same-user"),
        pytest.param(1001, 1000, False, id="other-user"),
        pytest.param(0, 1000, False, id="root-to-a-user-daemon"),
        pytest.param(1000, 0, False, id="user-to-root-daemon"),
        pytest.param(0, 0, True, id="root-to-root"),
    ],
)
def test_peer_allowed_only_for_the_same_uid(peer, own, allowed):
    assert control.peer_allowed(peer, own) is allowed


def test_peer_uid_reads_so_peercred_from_the_kernel():
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        assert control.peer_uid(left) == os.getuid()
        assert control.peer_uid(right) == os.getuid()


def test_streaming_request_sends_the_first_answer_then_published_items(running):
    with control.subscribe(running.server.path, "events") as sub:
        assert sub.result == {"backlog": [1, 2]}
        assert running.in_loop(lambda: running.server.publish("events", {"kind": "limited"})) == 1
        assert running.in_loop(lambda: running.server.publish("other-topic", {"kind": "x"})) == 0
        assert running.in_loop(lambda: running.server.publish("events", {"kind": "resumed"})) == 1
        items = iter(sub)
        assert next(items) == {"kind": "limited"}
        assert next(items) == {"kind": "resumed"}
    # Once the subscriber hangs up, nothing is published to it.
    assert running.in_loop(lambda: (running.server.serve_pending(0.05), running.server.publish("events", 1))[1]) == 0


def test_a_stream_ends_when_the_server_closes(running):
    sub = control.subscribe(running.server.path, "events")
    running.in_loop(lambda: running.server.publish("events", "last"))
    running.stop()
    assert list(sub) == ["last"]
    sub.close()


def test_the_loop_can_select_on_fileno_and_serve_without_blocking(short_dir):
    with ControlServer(short_dir / "c.sock", handle) as server:
        assert server.serve_pending(0) == 0
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(10)
            client.connect(str(server.path))
            client.sendall(b'{"cmd": "echo", "args": {"sel": 1}}\n')
            answered = 0
            while answered == 0:
                readable, _, _ = select.select([server.fileno()], [], [], 10)
                assert readable, "the selector never became readable"
                answered += server.serve_pending(0)
            assert json.loads(client.makefile("rb").readline()) == {"ok": True, "result": {"echo": {"sel": 1}}}


# --- no request ends the daemon ---------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b"[" * 100_000 + b"\n", id="deep-list-not-even-closed"),
        pytest.param(b'{"cmd": "echo", "args": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5000 + b"}\n", id="deep-args"),
        pytest.param(b'{"cmd": "echo", "args": {"a": ' + b"[" * 40 + b"]" * 40 + b"}}\n", id="just-over-the-bound"),
    ],
)
def test_a_deeply_nested_request_gets_one_line_error_and_the_server_serves_on(running, line):
    [answer] = raw_exchange(running.server.path, line)
    assert answer["ok"] is False and answer["code"] == EXIT_USAGE
    assert "nested deeper" in answer["error"] and "\n" not in answer["error"]
    assert control.request(running.server.path, "echo", {"n": 1}) == {"echo": {"n": 1}}


def test_a_request_at_the_depth_bound_is_answered(running):
    nested: object = 1
    for _ in range(control.MAX_REQUEST_DEPTH - 2):
        nested = [nested]
    assert control.request(running.server.path, "echo", {"a": nested}) == {"echo": {"a": nested}}


def test_an_unexpected_error_while_answering_is_one_line_and_serving_goes_on(running, monkeypatch):
    def explode(value):
        raise MemoryError("made up")

    monkeypatch.setattr(control, "_depth", explode)
    [answer] = raw_exchange(running.server.path, b'{"cmd": "echo"}\n')
    assert answer["ok"] is False and answer["code"] == EXIT_FAIL and "\n" not in answer["error"]
    monkeypatch.undo()
    assert control.request(running.server.path, "echo") == {"echo": {}}


# --- bursts of clients -----------------------------------------------------------


@pytest.mark.parametrize("backlog", [pytest.param(None, id="default-backlog"), pytest.param(1, id="backlog-of-one")])
def test_sixty_clients_at_once_against_a_busy_server_all_get_answers(short_dir, monkeypatch, backlog):
    if backlog is not None:
        monkeypatch.setattr(control, "LISTEN_BACKLOG", backlog)
    server = ControlServer(short_dir / "run" / "afd" / "control.sock", handle)
    server.start()
    runner = ServerThread(server)
    results: list[object] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        try:
            answer = control.request(server.path, "echo", {"i": i}, timeout=30)
        except Exception as exc:  # collected, so the assertion names what failed
            answer = repr(exc)
        with lock:
            results.append(answer)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(60)]
    try:
        # The server does not accept yet, like a daemon in the middle of a poll.
        for t in threads:
            t.start()
        threading.Event().wait(0.3)
        runner._thread.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        runner.stop()
    assert sorted(results, key=str) == sorted(({"echo": {"i": i}} for i in range(60)), key=str)


# --- who may talk to whom ----------------------------------------------------------

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="changing to another uid needs root")


def _as_nobody(work) -> bytes:
    """Run `work()` in a forked child that dropped to uid/gid 65534; returns what it wrote back."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 0
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(write_end, work())
        except BaseException as exc:
            os.write(write_end, f"child failed: {exc!r}".encode())
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return b"".join(chunks)


@needs_root
def test_a_connection_from_another_uid_is_refused_with_nothing_sent(running):
    # Open the path up, as a careless runtime dir might: only SO_PEERCRED stands in the way.
    for folder in (running.server.path.parent, *running.server.path.parents[:3]):
        os.chmod(folder, 0o711)
    os.chmod(running.server.path, 0o777)

    def connect_and_ask() -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(str(running.server.path))
            try:
                sock.sendall(b'{"cmd": "echo", "args": {"from": "nobody"}}\n')
                return b"answer:" + sock.recv(4096)
            except (BrokenPipeError, ConnectionResetError):
                return b"closed"

    got = _as_nobody(connect_and_ask)
    assert got in (b"answer:", b"closed"), got
    assert control.request(running.server.path, "echo") == {"echo": {}}


@needs_root
def test_the_client_will_not_talk_to_a_daemon_of_another_uid(short_dir):
    os.chmod(short_dir, 0o711)
    theirs = short_dir / "n"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, NOBODY, NOBODY)
    path = theirs / "control.sock"
    ready_r, ready_w = os.pipe()

    def serve_as_nobody() -> bytes:
        try:
            server = ControlServer(path, handle)
            server.start()
        finally:
            os.write(ready_w, b"1")
        for _ in range(100):
            if server.serve_pending(0.05):
                return b"answered"
        return b"no request came"

    done = queue.Queue()
    threading.Thread(target=lambda: done.put(_as_nobody(serve_as_nobody)), daemon=True).start()
    assert select.select([ready_r], [], [], 30)[0], "the child never started its server"
    assert os.read(ready_r, 1) == b"1"
    assert path.exists(), done.get(timeout=30)
    with pytest.raises(ControlError) as caught:
        control.request(path, "echo", {"secret": "prompt"})
    assert f"uid {NOBODY}" in str(caught.value)
    assert done.get(timeout=30) == b"no request came"


@needs_root
def test_a_runtime_dir_others_can_write_is_tightened_and_one_of_another_uid_is_refused(short_dir):
    loose = short_dir / "loose"
    loose.mkdir()
    os.chmod(loose, 0o777)
    with ControlServer(loose / "control.sock", handle):
        assert stat.S_IMODE(os.stat(loose).st_mode) == 0o700
    theirs = short_dir / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(ControlError, match=f"belongs to uid {NOBODY}"):
        ControlServer(theirs / "control.sock", handle).start()
