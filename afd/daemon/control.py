"""The daemon's control socket: a Unix-socket server for the poll loop, and its client.

Design: single-threaded and poll-style. The daemon is the single writer, so
its handlers must run on the loop thread; rather than a server thread handing
requests across a queue, the loop itself serves the socket while it waits for
the next poll:

    server = ControlServer(socket_path(), handle)
    server.start()
    while running:
        poll_once()
        deadline = time.monotonic() + poll_interval
        while (left := deadline - time.monotonic()) > 0:
            server.serve_pending(left)
    server.close()

`serve_pending(timeout)` waits at most `timeout` for activity, answers every
complete request that arrived, and returns. A loop that multiplexes other
descriptors (a signal wake-up pipe) can select on `fileno()` and call
`serve_pending(0)` when it is readable. All sockets are non-blocking and
output is buffered per connection, so a client that stops reading can never
stall the loop; it is dropped once its backlog grows too large.

Protocol: newline-delimited JSON (UTF-8). A request is one line
`{"cmd": "...", "args": {...}}`; the answer is one line, either
`{"ok": true, "result": ...}` or `{"ok": false, "error": "...", "code": N}`
(`code` is the exit code the CLI should use). A handler that returns
`Stream(topic, result)` answers `{"ok": true, "result": ..., "stream": true}`
and keeps the connection open; every later `publish(topic, item)` sends
`{"event": item}` on it until either side closes.

Only the owner may talk to the daemon: the socket is mode 0600 in a 0700
directory, and each peer's uid is checked with SO_PEERCRED (file modes do not
stop root, and a directory may be looser than we would make it); a connection
from another uid is closed with nothing sent back.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import stat
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from afd.errors import EXIT_DAEMON_DOWN, EXIT_FAIL, EXIT_USAGE, UserError


def _log():
    # Only the server writes to the log; the CLI's client is spared importing logging (~5 ms) before it can print.
    import logging

    return logging.getLogger(__name__)


# sun_path holds 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH_BYTES = 107
MAX_REQUEST_BYTES = 1 << 20
# Deeper JSON than any real request: json's recursive parser (and anything
# walking the value afterwards) would otherwise hit RecursionError.
MAX_REQUEST_DEPTH = 32
# A burst of CLI calls (a status bar, a monitoring script) queues here while
# the loop polls; the kernel caps it at net.core.somaxconn.
LISTEN_BACKLOG = 512
MAX_BACKLOG_BYTES = 4 << 20
IDLE_TIMEOUT = 30.0
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class ControlError(UserError):
    """The daemon answered with an error, or the socket cannot be used; `code` is an exit code."""

    code = EXIT_FAIL


class DaemonTimeout(ControlError):
    """The daemon is there but did not answer in time: unknown, not down."""


class DaemonUnavailable(UserError):
    """No daemon is listening: the socket file is missing or nobody accepts on it."""

    code = EXIT_DAEMON_DOWN


@dataclass(frozen=True, slots=True)
class Stream:
    """A handler's answer that keeps the connection open for `publish(topic, ...)`."""

    topic: str
    result: object = None


Handler = Callable[[str, dict], object]


def socket_path() -> Path:
    """Where the daemon listens: `control.sock` in afd's runtime dir, resolved now."""
    from afd.kit import paths

    return paths.control_socket()


def checked_path(path: Path | str) -> str:
    """`path` as a string bind/connect accept, or ControlError when it exceeds the AF_UNIX limit."""
    text = os.fspath(path)
    size = len(os.fsencode(text))
    if size > MAX_SOCKET_PATH_BYTES:
        raise ControlError(
            f"the control socket path {text} is {size} bytes, over the {MAX_SOCKET_PATH_BYTES}-byte "
            "limit of a Unix socket; set XDG_RUNTIME_DIR (or XDG_STATE_HOME) to a shorter directory",
            EXIT_USAGE,
        )
    return text


def peer_allowed(ucred_uid: int, own_uid: int) -> bool:
    """Whether a peer running as `ucred_uid` may use the daemon of `own_uid`: only the same user."""
    return ucred_uid == own_uid


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a connected Unix socket, from the kernel."""
    _pid, uid, _gid = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    return uid


def peer_pid(sock: socket.socket) -> int | None:
    """The pid of the process that connected, from the kernel (not from anything the client says)."""
    pid, _uid, _gid = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    return pid or None


def _line(message: object) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def _error(message: str, code: int) -> dict:
    return {"ok": False, "error": message, "code": code}


def _depth(value: object) -> int:
    """How deeply `value` nests lists and objects (walked without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in item)
    return deepest


def _make_private_dirs(directory: Path) -> None:
    """Create the missing parts of `directory` as 0700, and make sure `directory` itself is the user's, 0700.

    Existing parents are left as they are; the socket's own directory is
    afd's, so one that others can write (a 0777 left by some earlier tool)
    is tightened, and one another user owns is refused.
    """
    target = directory
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for part in reversed(missing):
        try:
            part.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(part, 0o700)  # mkdir's mode is filtered by the umask
    info = os.lstat(target)
    if not stat.S_ISDIR(info.st_mode):
        raise ControlError(f"{target} is not a directory; move it away and start afd again")
    if info.st_uid != os.getuid():
        raise ControlError(f"{target} belongs to uid {info.st_uid}, not to you; remove it and start afd again")
    if stat.S_IMODE(info.st_mode) & 0o077:
        _log().warning("control socket: %s was mode %o; tightened to 700", target, stat.S_IMODE(info.st_mode))
        os.chmod(target, 0o700)


def _clear_stale(path: str) -> None:
    """Remove a socket file nobody listens on; refuse when a daemon does, or when we cannot tell."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ControlError(f"{path} exists and is not a socket; move it away and start afd again")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    probe.settimeout(2.0)
    try:
        probe.connect(path)
    except ConnectionRefusedError:
        os.unlink(path)  # left behind by a daemon that died
        return
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ControlError(f"cannot tell whether a daemon is listening on {path} ({exc}); not replacing it") from exc
    finally:
        probe.close()
    raise ControlError(f"another afd daemon is already listening on {path}")


@dataclass(eq=False, slots=True)
class _Connection:
    sock: socket.socket
    last_active: float
    inbuf: bytearray = field(default_factory=bytearray)
    outbuf: bytearray = field(default_factory=bytearray)
    topic: str | None = None
    closing: bool = False
    closed: bool = False
    pid: int | None = None  # the peer's pid at connect time (SO_PEERCRED)


class ControlServer:
    """The daemon's end of the control socket; see the module docstring for the design."""

    def __init__(self, path: Path | str, handler: Handler, *, idle_timeout: float = IDLE_TIMEOUT):
        self.path = Path(path)
        self._handler = handler
        self._idle_timeout = idle_timeout
        self._listener: socket.socket | None = None
        self._selector: selectors.BaseSelector | None = None
        self._connections: dict[int, _Connection] = {}
        self._identity: tuple[int, int] | None = None
        # The pid of the client whose request the handler is answering now (None outside a request):
        # requests that act for "the session I run in" check it against the process tree.
        self.peer_pid: int | None = None

    def __enter__(self) -> ControlServer:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def start(self) -> None:
        """Bind and listen; ControlError when the path is too long or a live daemon already has it."""
        path = checked_path(self.path)
        try:
            _make_private_dirs(self.path.parent)
            _clear_stale(path)
        except ControlError:
            raise
        except OSError as exc:
            raise ControlError(f"cannot prepare {self.path.parent} for the control socket: {exc.strerror or exc}") from None
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            listener.bind(path)
            # Nobody can connect before listen(), so tightening the mode here is race-free
            # (a umask change would be process-wide).
            os.chmod(path, 0o600)
            info = os.stat(path)
            listener.listen(LISTEN_BACKLOG)
            listener.setblocking(False)
        except OSError as exc:
            listener.close()
            raise ControlError(f"cannot listen on {path}: {exc.strerror or exc}") from exc
        self._identity = (info.st_dev, info.st_ino)
        self._listener = listener
        self._selector = selectors.DefaultSelector()
        self._selector.register(listener, selectors.EVENT_READ)

    def fileno(self) -> int:
        """A descriptor that is readable whenever serve_pending has work."""
        if not isinstance(self._selector, selectors.DefaultSelector):
            raise ValueError("the control server is not started")
        return self._selector.fileno()  # DefaultSelector (epoll, kqueue, poll) has a descriptor; the base type does not say so

    def serve_pending(self, timeout: float | None = 0) -> int:
        """Wait up to `timeout` seconds for activity, handle it, and return how many requests were answered."""
        if self._selector is None:
            raise ValueError("the control server is not started")
        answered = 0
        for key, mask in self._selector.select(timeout):
            if key.fileobj is self._listener:
                self._accept()
                continue
            conn = key.data
            if conn.closed:
                continue  # closed by an earlier event in this round
            try:
                if mask & selectors.EVENT_WRITE:
                    self._flush(conn)
                if mask & selectors.EVENT_READ and not conn.closed:
                    answered += self._read(conn)
            except Exception:
                # Whatever one client sent, the daemon serves the others and keeps polling.
                _log().exception("control socket: dropped a connection after an unexpected error")
                self._close(conn)
        self._drop_idle()
        return answered

    def publish(self, topic: str, item: object) -> int:
        """Send `item` to every connection streaming `topic`; returns how many it was queued for."""
        data = _line({"event": item})
        sent = 0
        for conn in list(self._connections.values()):
            if conn.topic == topic and not conn.closed and not conn.closing:
                self._send(conn, data)
                sent += 1
        return sent

    def close(self) -> None:
        """Close every connection and the listener, and remove the socket file if it is still ours."""
        for conn in list(self._connections.values()):
            self._close(conn)
        if self._selector is not None:
            self._selector.close()
            self._selector = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
            try:
                info = os.stat(self.path)
                # A newer daemon may have replaced a socket it found stale; leave its file alone.
                if (info.st_dev, info.st_ino) == self._identity:
                    os.unlink(self.path)
            except FileNotFoundError:
                pass

    def _accept(self) -> None:
        assert self._listener is not None and self._selector is not None  # accepting: the server is started
        while True:
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and friends: keep serving those already connected
                _log().warning("control socket: cannot accept a connection: %s", exc)
                return
            try:
                uid = peer_uid(sock)
            except OSError as exc:
                _log().warning("control socket: cannot read the peer's credentials, dropping it: %s", exc)
                sock.close()
                continue
            if not peer_allowed(uid, os.getuid()):
                _log().warning("control socket: dropped a connection from uid %d", uid)
                sock.close()
                continue
            sock.setblocking(False)
            conn = _Connection(sock=sock, last_active=time.monotonic(), pid=peer_pid(sock))
            self._connections[sock.fileno()] = conn
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _read(self, conn: _Connection) -> int:
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError:
            self._close(conn)
            return 0
        if not data:
            conn.closing = True
            self._flush(conn)
            return 0
        conn.last_active = time.monotonic()
        if conn.topic is not None or conn.closing:
            return 0  # a streaming connection has nothing more to ask
        conn.inbuf += data
        answered = 0
        while not conn.closed and conn.topic is None and b"\n" in conn.inbuf:
            line, _, rest = bytes(conn.inbuf).partition(b"\n")
            conn.inbuf[:] = rest
            if line.strip():
                self._send(conn, self._answer(conn, line))
                answered += 1
        if len(conn.inbuf) > MAX_REQUEST_BYTES and not conn.closed:
            self._send(conn, _line(_error(f"request longer than {MAX_REQUEST_BYTES} bytes", EXIT_USAGE)))
            conn.inbuf.clear()
            conn.closing = True
            self._flush(conn)
            answered += 1
        return answered

    def _answer(self, conn: _Connection, line: bytes) -> bytes:
        try:
            return self._answer_checked(conn, line)
        except Exception as exc:
            _log().exception("control socket: unexpected error while answering a request")
            return _line(_error(f"internal error in the daemon: {type(exc).__name__}", EXIT_FAIL))

    def _answer_checked(self, conn: _Connection, line: bytes) -> bytes:
        try:
            request = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return _line(_error(f"malformed request: not JSON ({exc})", EXIT_USAGE))
        except RecursionError:
            return _line(_error(f"malformed request: nested deeper than {MAX_REQUEST_DEPTH} levels", EXIT_USAGE))
        if _depth(request) > MAX_REQUEST_DEPTH:
            return _line(_error(f"malformed request: nested deeper than {MAX_REQUEST_DEPTH} levels", EXIT_USAGE))
        if not isinstance(request, dict) or not isinstance(request.get("cmd"), str) or not request["cmd"]:
            return _line(_error('malformed request: expected {"cmd": "...", "args": {...}}', EXIT_USAGE))
        cmd = request["cmd"]
        args = request.get("args")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return _line(_error("malformed request: args must be an object", EXIT_USAGE))
        self.peer_pid = conn.pid
        try:
            result = self._handler(cmd, args)
        except UserError as exc:
            return _line(_error(str(exc), exc.code))
        except Exception as exc:
            _log().exception("control socket: handler failed on %r", cmd)
            return _line(_error(f"internal error in the daemon while handling {cmd!r}: {exc}", EXIT_FAIL))
        finally:
            self.peer_pid = None
        if isinstance(result, Stream):
            response = {"ok": True, "result": result.result, "stream": True}
        else:
            response = {"ok": True, "result": result}
        try:
            data = _line(response)
        except (TypeError, ValueError) as exc:
            _log().error("control socket: the answer to %r is not JSON: %s", cmd, exc)
            return _line(_error(f"internal error in the daemon: the answer to {cmd!r} is not JSON", EXIT_FAIL))
        if isinstance(result, Stream):
            conn.topic = result.topic
        return data

    def _send(self, conn: _Connection, data: bytes) -> None:
        conn.outbuf += data
        if len(conn.outbuf) > MAX_BACKLOG_BYTES:
            _log().warning("control socket: dropped a client that stopped reading")
            self._close(conn)
            return
        self._flush(conn)

    def _flush(self, conn: _Connection) -> None:
        while conn.outbuf:
            try:
                sent = conn.sock.send(conn.outbuf)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self._close(conn)
                return
            del conn.outbuf[:sent]
        if conn.closing and not conn.outbuf:
            self._close(conn)
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.outbuf else 0)
        assert self._selector is not None  # a connection is served only while the server is started
        if self._selector.get_key(conn.sock).events != events:
            self._selector.modify(conn.sock, events, conn)

    def _drop_idle(self) -> None:
        # A client that connects and never finishes a request must not hold a descriptor forever.
        cutoff = time.monotonic() - self._idle_timeout
        for conn in list(self._connections.values()):
            if conn.topic is None and conn.last_active < cutoff:
                self._close(conn)

    def _close(self, conn: _Connection) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._connections.pop(conn.sock.fileno(), None)
        if self._selector is not None:
            try:
                self._selector.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
        conn.sock.close()


def _connect(path: Path | str, timeout: float) -> socket.socket:
    text = checked_path(path)
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            sock.connect(text)
            break
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            raise DaemonUnavailable(f"afd is not running (nothing listens on {text})") from exc
        except BlockingIOError as exc:
            # EAGAIN: the listen queue is full while the daemon polls; it empties within a poll.
            sock.close()
            if time.monotonic() + pause >= deadline:
                raise DaemonTimeout(f"the daemon at {text} did not accept a connection within {timeout:g}s") from exc
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
        except TimeoutError as exc:
            sock.close()
            raise DaemonTimeout(f"the daemon at {text} did not accept a connection within {timeout:g}s") from exc
        except OSError as exc:
            sock.close()
            raise ControlError(f"cannot connect to the daemon at {text}: {exc.strerror or exc}") from exc
    try:
        uid = peer_uid(sock)
    except OSError as exc:
        sock.close()
        raise ControlError(f"cannot tell who listens on {text}: {exc.strerror or exc}") from exc
    if not peer_allowed(uid, os.getuid()):
        # Requests carry prompts and paths: never hand them to another user's process.
        sock.close()
        raise ControlError(f"the control socket {text} is served by uid {uid}, not by you; not talking to it")
    sock.settimeout(max(deadline - time.monotonic(), 0.001))
    return sock


def _read_answer(reader, path: Path | str, timeout: float) -> dict:
    try:
        line = reader.readline()
    except TimeoutError as exc:
        raise DaemonTimeout(f"the daemon at {os.fspath(path)} did not answer within {timeout:g}s") from exc
    except OSError as exc:
        raise ControlError(f"lost the connection to the daemon at {os.fspath(path)}: {exc}") from exc
    if not line:
        raise ControlError(f"the daemon at {os.fspath(path)} closed the connection without answering")
    try:
        answer = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ControlError(f"the daemon at {os.fspath(path)} sent an answer that is not JSON") from exc
    if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
        raise ControlError(f"the daemon at {os.fspath(path)} sent an answer afd does not understand")
    if not answer["ok"]:
        code = answer.get("code")
        raise ControlError(str(answer.get("error") or "the daemon refused the request"),
                           code if isinstance(code, int) else EXIT_FAIL)
    return answer


def request(path: Path | str, cmd: str, args: dict | None = None, timeout: float = 5.0) -> Any:
    """Send one request and return the daemon's result.

    Raises DaemonUnavailable when no daemon listens, DaemonTimeout when it does not answer
    in time, and ControlError(message, code) when it answers with an error.
    """
    with _connect(path, timeout) as sock, sock.makefile("rb") as reader:
        sock.sendall(_line({"cmd": cmd, "args": args or {}}))
        return _read_answer(reader, path, timeout).get("result")


class Subscription:
    """A streaming request: `result` is the first answer; iterating yields each published item."""

    def __init__(self, path: Path | str, cmd: str, args: dict | None = None, timeout: float = 5.0):
        self._sock = _connect(path, timeout)
        self._reader = self._sock.makefile("rb")
        try:
            self._sock.sendall(_line({"cmd": cmd, "args": args or {}}))
            answer = _read_answer(self._reader, path, timeout)
        except BaseException:
            self.close()
            raise
        self.result: Any = answer.get("result")  # the JSON the command answered
        self._path = os.fspath(path)
        if not answer.get("stream"):
            self.close()  # the daemon answered once and has nothing to stream
        else:
            self._sock.settimeout(None)  # events come when they happen

    def __iter__(self) -> Iterator[Any]:  # Any: each item is the JSON the daemon published
        while not self._reader.closed:
            try:
                line = self._reader.readline()
            except (OSError, ValueError):
                return
            if not line:
                return  # the daemon stopped
            try:
                message = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ControlError(f"the daemon at {self._path} sent an event that is not JSON") from exc
            if isinstance(message, dict) and "event" in message:
                yield message["event"]

    def settimeout(self, seconds: float | None) -> None:
        """Bound the wait for the next item; iteration ends when it runs out."""
        self._sock.settimeout(seconds)

    def close(self) -> None:
        self._reader.close()
        self._sock.close()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def subscribe(path: Path | str, cmd: str, args: dict | None = None, timeout: float = 5.0) -> Subscription:
    """Send a streaming request (e.g. for `afd events --follow`); errors as for `request`."""
    return Subscription(path, cmd, args, timeout)
