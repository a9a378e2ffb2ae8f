"""Everything afd says to tmux; the only module that runs the `tmux` binary.

Raw `subprocess` calls, not libtmux: libtmux starts one tmux process per
command and cannot issue a chained `a ; b ; c` call, and one chained call
that captures every pane is what keeps a poll of 100 panes near 20 ms
instead of 400 ms.

Nothing here raises for the states a supervisor meets in normal life: no
server running, a server that dies mid-call, a pane that vanished, a call
that timed out. Each answer says present / gone / unknown and carries the
error text; "unknown" (tmux did not answer) is never reported as "gone".
"""

from __future__ import annotations

import enum
import os
import re
import secrets
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from afd.kit.text import decode_capture

_PANE_ID = re.compile(r"%\d+")
# Client-side messages meaning "no server listens on this socket": no
# socket file at all, or one left behind by a dead server (tmux 3.3a's
# kill-server leaves it). Any other connection error (permissions, a
# server that hangs up) is not an answer.
_NOT_RUNNING = re.compile(
    r"^(no server running on |error connecting to .*\((No such file or directory|Connection refused)\))",
    re.M,
)
_CANT_FIND_PANE = re.compile(r"can't find pane:? (%\d+)")
# What tmux says instead of "can't find pane" when the server has no
# sessions left at all: then no pane of it exists.
_NO_SESSIONS = "no current target"


@dataclass(frozen=True, slots=True)
class ServerRef:
    """Which tmux server: `-L name`, `-S path`, or (both None) the user's default."""

    socket_name: str | None = None
    socket_path: str | None = None

    def __post_init__(self) -> None:
        if self.socket_name is not None and self.socket_path is not None:
            raise ValueError("a tmux server is chosen by socket name or socket path, not both")

    def argv(self) -> list[str]:
        # -u: without it a client in a non-UTF-8 locale (a systemd user
        # service often has no LANG) gets every non-ASCII or control byte
        # of a path or name replaced by "_".
        base = ["tmux", "-u"]
        if self.socket_name is not None:
            return [*base, "-L", self.socket_name]
        if self.socket_path is not None:
            return [*base, "-S", self.socket_path]
        return base

    def exchange(self, args: Sequence[str], timeout: float, stdin: bytes | None, client_env: Mapping[str, str] | None) -> Reply:
        """Run one tmux client with `args` (a command, or a chain joined by ";") and return its answer.

        The one place a tmux client runs: a test's simulated server (a subclass) answers here instead.
        """
        try:
            proc = subprocess.run(
                [*self.argv(), *args],
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
                env=client_env,
            )
        except subprocess.TimeoutExpired:
            return Reply(None, b"", f"tmux did not answer within {timeout:g}s")
        except OSError as exc:
            return Reply(None, b"", f"could not run tmux: {exc}")
        return Reply(proc.returncode, proc.stdout, proc.stderr.decode("utf-8", errors="replace"))
    @classmethod
    def chosen(cls, socket_name: str | None = None, socket_path: str | None = None,
               env: Mapping[str, str] | None = None) -> ServerRef:
        """The server a tmux client means, by tmux's own rule: -L or -S, else the one $TMUX names, else the default.

        Inside a pane of `tmux -L x`, a bare `tmux` talks to `x`, so a bare
        `afd run` there watches `x`: the choice is made explicit here, so
        every part of afd (and every status line) names that server.
        """
        if socket_name or socket_path:
            return cls(socket_name=socket_name or None, socket_path=None if socket_name else socket_path)
        inside = (os.environ if env is None else env).get("TMUX", "")
        # $TMUX is "socket_path,server_pid,session": tmux reads the path up to the first comma.
        if inside and not inside.startswith(","):
            return cls(socket_path=inside.split(",", 1)[0])
        return cls()

    def socket(self, env: Mapping[str, str] | None = None) -> str:
        """The path of this server's socket, as tmux computes it (the server may not be running)."""
        if self.socket_path is not None:
            return os.path.abspath(self.socket_path)
        env = os.environ if env is None else env
        # tmux resolves the directory's real path (a /tmp that is a link is followed).
        base = os.path.realpath(env.get("TMUX_TMPDIR") or "/tmp")
        return os.path.join(base, f"tmux-{os.getuid()}", self.socket_name or "default")


class Presence(enum.Enum):
    PRESENT = "present"
    GONE = "gone"
    UNKNOWN = "unknown"  # tmux did not answer; the pane may well still be there


class Outcome(enum.Enum):
    """What became of an action sent to tmux."""

    DONE = "done"
    FAILED = "failed"  # tmux answered and refused; nothing changed
    GONE = "gone"  # the target pane or the whole server does not exist
    UNKNOWN = "unknown"  # no answer (timeout, server died mid-call): it may or may not have happened


@dataclass(frozen=True, slots=True)
class PaneInfo:
    pane_id: str
    pane_pid: int
    current_command: str
    # None when the listing did not ask (list_panes(details=False)): tmux
    # reads /proc for the path of every pane, and only adoption needs them.
    start_command: str | None
    cwd: str | None
    dead: bool
    width: int
    height: int
    cursor_x: int
    cursor_y: int
    history_size: int
    window_activity: int
    in_mode: bool
    session_name: str
    window_index: int
    pane_index: int

    @property
    def location(self) -> str:
        return f"{self.session_name}:{self.window_index}.{self.pane_index}"

    @property
    def fingerprint(self) -> tuple[int, int, int, int]:
        # One-second grain (window_activity): equal fingerprints may hide a
        # change, so this only saves captures, it never decides anything.
        return (self.window_activity, self.cursor_x, self.cursor_y, self.history_size)


@dataclass(frozen=True, slots=True)
class Inventory:
    """One `list-panes -a` of one server.

    `server_running` is meaningful only when `answered`; a server that did
    not answer is neither running nor stopped as far as afd knows. Unless
    `answered`, `panes` may be partial and a pane missing from it proves
    nothing.
    """

    server_running: bool
    answered: bool
    socket_path: str | None
    server_pid: int | None
    panes: tuple[PaneInfo, ...]
    error: str | None = None

    def pane(self, pane_id: str, server_pid: int | None = None) -> PaneInfo | None:
        """The pane with this id, if this listing has it; `server_pid` given: only on that same server.

        A pane id is unique on one server only: after a tmux restart `%3` is
        another pane, so a session's record passes the server it was seen on.
        """
        if not self.answered or (server_pid is not None and self.server_pid != server_pid):
            return None
        return next((p for p in self.panes if p.pane_id == pane_id), None)


@dataclass(frozen=True, slots=True)
class ServerInfo:
    running: bool
    answered: bool
    socket_path: str | None
    pid: int | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class CaptureResult:
    presence: Presence
    text: str | None  # the visible screen, one row per line (`capture-pane -p -J`)
    error: str | None = None
    server_pid: int | None = None  # the server that answered, to catch a restart between list and capture


@dataclass(frozen=True, slots=True)
class ActionResult:
    outcome: Outcome
    value: str | None = None  # e.g. the new pane id of new_session
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.DONE


@dataclass(frozen=True, slots=True)
class Reply:
    """What one tmux client call answered."""

    rc: int | None  # None: no answer (timeout, tmux missing)
    stdout: bytes
    stderr: str

    @property
    def not_running(self) -> bool:
        return self.rc not in (0, None) and _NOT_RUNNING.search(self.stderr) is not None

    def error(self) -> str:
        return self.stderr.strip() or f"tmux exited with status {self.rc}"


# tmux sends a client's whole argument list to the server in one message:
# the arguments, each with its NUL, must fit in 16364 bytes (measured on
# tmux 3.3a: 16384-byte imsg less its 16-byte header and the 4-byte argc).
# Above that it says "command too long" or "failed to send command".
_COMMAND_BYTES = 16364
_TOO_LONG = ("command too long", "failed to send command")


class _Chained(list):
    """An argument list `_chain` already escaped and joined: `_run` passes it as is."""


def _literal(arg: str) -> str:
    # tmux reads an argument ending in ";" as the end of a command (its
    # text before the ";" stays an argument) and the next one as a new
    # command, so a prompt "fix it;" followed by "run-shell" would run it.
    # A trailing "\;" is tmux's escape: it arrives as a literal ";".
    return arg[:-1] + "\\;" if arg.endswith(";") else arg


def format_literal(text: str) -> str:
    """`text` for an argument tmux expands as a format (`-c`, `-s`): `#(cmd)` would run cmd."""
    return text.replace("#", "##")


def _packed_size(args: Sequence[str]) -> int:
    return sum(len(a.encode("utf-8", errors="surrogateescape")) + 1 for a in args)


# tmux client processes started so far; the tests and the benchmark price a poll by it.
spawns = 0


def _run(
    server: ServerRef, args: Sequence[str], timeout: float, stdin: bytes | None = None, client_env: Mapping[str, str] | None = None
) -> Reply:
    global spawns
    spawns += 1
    args = args if isinstance(args, _Chained) else [_literal(a) for a in args]
    return server.exchange(args, timeout, stdin, client_env)


def _chain(commands: Sequence[Sequence[str]]) -> _Chained:
    args = _Chained()
    for command in commands:
        if args:
            args.append(";")
        args.extend(_literal(a) for a in command)
    return args


def _too_long(reply: Reply) -> bool:
    return reply.rc not in (0, None) and any(text in reply.stderr for text in _TOO_LONG)


def _batches(groups: Sequence[Sequence[Sequence[str]]], budget: int = _COMMAND_BYTES) -> list[list[int]]:
    """Indexes of `groups` (each a few commands kept together) packed into chains that fit in `budget` bytes."""
    batches: list[list[int]] = []
    size = budget + 1
    for i, group in enumerate(groups):
        cost = _packed_size(_chain(group)) + 2  # and the ";" that joins it to the one before
        if size + cost > budget:
            batches.append([])
            size = 0
        batches[-1].append(i)
        size += cost
    return batches


def _check_pane_id(pane_id: str) -> None:
    if not _PANE_ID.fullmatch(pane_id):
        raise ValueError(f"not a tmux pane id: {pane_id!r} (expected %N)")


def version(timeout: float = 3.0) -> tuple[str | None, str | None]:
    """`tmux -V` (e.g. "tmux 3.3a"), or None and why not: a hung or missing binary is an answer too."""
    try:
        proc = subprocess.run(["tmux", "-V"], stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, f"tmux -V did not answer within {timeout:g}s"
    except OSError as exc:
        return None, f"could not run tmux: {exc.strerror or exc}"
    text = proc.stdout.decode("utf-8", errors="replace").strip()
    if proc.returncode != 0 or not text:
        return None, proc.stderr.decode("utf-8", errors="replace").strip() or f"tmux -V exited with status {proc.returncode}"
    return text, None


# --- inventory -----------------------------------------------------------

_PANE_FIELDS = (
    "pane_id",
    "pane_pid",
    "pane_current_command",
    "pane_start_command",
    "pane_current_path",
    "pane_dead",
    "pane_width",
    "pane_height",
    "cursor_x",
    "cursor_y",
    "history_size",
    "window_activity",
    "pane_in_mode",
    "session_name",
    "window_index",
    "pane_index",
)
# Asked for only when wanted: `pane_current_path` costs tmux a /proc read per pane.
_DETAIL_FIELDS = frozenset({"pane_start_command", "pane_current_path"})


def _separators() -> tuple[str, str]:
    # Paths, commands and session names may hold tabs, newlines and any
    # other byte, and tmux prints them raw (with -u), so no fixed character
    # can separate fields. A nonce fresh for each call cannot be guessed by
    # whatever runs in a pane.
    nonce = secrets.token_hex(8)
    return f"\x1f{nonce}\x1f", f"\x1e{nonce}\x1e"


def _fields(details: bool) -> tuple[str, ...]:
    return _PANE_FIELDS if details else tuple(n for n in _PANE_FIELDS if n not in _DETAIL_FIELDS)


def _parse_pane(fields: list[str], names: tuple[str, ...] = _PANE_FIELDS) -> PaneInfo:
    f = dict(zip(names, fields, strict=True))
    return PaneInfo(
        pane_id=f["pane_id"],
        pane_pid=int(f["pane_pid"] or 0),
        current_command=f["pane_current_command"],
        start_command=f.get("pane_start_command"),
        cwd=f.get("pane_current_path"),
        dead=f["pane_dead"] == "1",
        width=int(f["pane_width"]),
        height=int(f["pane_height"]),
        cursor_x=int(f["cursor_x"]),
        cursor_y=int(f["cursor_y"]),
        history_size=int(f["history_size"]),
        window_activity=int(f["window_activity"] or 0),
        in_mode=f["pane_in_mode"] == "1",
        session_name=f["session_name"],
        window_index=int(f["window_index"]),
        pane_index=int(f["pane_index"]),
    )


# The last listing's panes by their fields: a pane listed unchanged is not parsed again.
_listed: dict[tuple, PaneInfo] = {}


def list_panes(server: ServerRef, timeout: float = 5.0, *, details: bool = True) -> Inventory:
    """Every pane of the server with the fields a poll needs, in one tmux call.

    No server running is a normal state: `server_running=False`, no error.
    With `details=False`, each pane's `start_command` and `cwd` are None
    (not asked for; `pane_details` fetches them for the one pane that needs them).
    """
    sep, end = _separators()
    names = _fields(details)
    head = f"#{{socket_path}}{sep}#{{pid}}{end}"
    row = sep.join(f"#{{{name}}}" for name in names) + end
    reply = _run(server, _chain([["display-message", "-p", head], ["list-panes", "-a", "-F", row]]), timeout)
    if reply.rc is None:
        return Inventory(False, False, None, None, (), reply.error())
    if reply.not_running:
        return Inventory(False, True, None, None, ())
    # tmux ends every printed line with a newline of its own.
    records = reply.stdout.decode("utf-8", errors="replace").split(end + "\n")
    tail = records.pop()  # after the last terminator: empty unless the output was cut short
    if not records:
        return Inventory(False, False, None, None, (), reply.error())
    socket_path, _, pid = records[0].partition(sep)
    server_pid = int(pid) if pid.isdigit() else None
    if reply.rc != 0 and not (len(records) == 1 and _NO_SESSIONS in reply.stderr):
        # "no current target" is how list-panes -a says "no sessions";
        # anything else means the list may be incomplete.
        return Inventory(True, False, socket_path, server_pid, (), reply.error())
    global _listed
    panes, errors, parsed = [], [], {}
    for record in records[1:]:
        fields = record.split(sep)
        key = (names, *fields)
        try:
            pane = _listed.get(key) or _parse_pane(fields, names)
        except ValueError:
            errors.append(f"unreadable list-panes record: {record[:80]!r}")
        else:
            panes.append(pane)
            parsed[key] = pane
    _listed = parsed
    if tail:
        errors.append("tmux output ended mid-record")
    # A pane missing from a damaged list must not read as "gone": such a
    # list is not an answer.
    return Inventory(True, not errors, socket_path, server_pid, tuple(panes), "; ".join(errors) or None)


def pane_details(server: ServerRef, pane: PaneInfo, timeout: float = 5.0) -> PaneInfo | None:
    """`pane` with its start command and working directory filled in; None when tmux cannot say (the pane is gone)."""
    _check_pane_id(pane.pane_id)
    sep, end = _separators()
    form = f"#{{pane_id}}{sep}#{{pane_start_command}}{sep}#{{pane_current_path}}{end}"
    reply = _run(server, ["display-message", "-p", "-t", pane.pane_id, form], timeout)
    text = reply.stdout.decode("utf-8", errors="replace")
    if reply.rc != 0 or end + "\n" not in text:
        return None
    pane_id, start_command, cwd = (text.split(end)[0].split(sep) + ["", "", ""])[:3]
    if pane_id != pane.pane_id:
        return None  # display-message expands a missing target to "": no such pane
    return replace(pane, start_command=start_command, cwd=cwd)


def server_info(server: ServerRef, timeout: float = 5.0) -> ServerInfo:
    """The server's socket path and pid, which identify it across restarts (pane ids restart at %0)."""
    sep, end = _separators()
    reply = _run(server, ["display-message", "-p", f"#{{socket_path}}{sep}#{{pid}}{end}"], timeout)
    if reply.not_running:
        return ServerInfo(False, True, None, None)
    text = reply.stdout.decode("utf-8", errors="replace")
    if reply.rc != 0 or end + "\n" not in text:
        return ServerInfo(False, False, None, None, reply.error())
    socket_path, _, pid = text.split(end)[0].partition(sep)
    return ServerInfo(True, True, socket_path, int(pid) if pid.isdigit() else None)


def pane_exists(server: ServerRef, pane_id: str, server_pid: int | None = None, timeout: float = 5.0) -> Presence:
    """Whether `pane_id` exists; with `server_pid`, only on that same server (not a restarted one)."""
    _check_pane_id(pane_id)
    # display-message tolerates a missing target and expands #{pane_id}
    # to "", so an empty answer is tmux saying "no such pane".
    reply = _run(server, ["display-message", "-p", "-t", pane_id, "#{pid} #{pane_id}"], timeout)
    if reply.not_running:
        return Presence.GONE
    if reply.rc is None:
        return Presence.UNKNOWN
    if reply.rc != 0:
        gone = _CANT_FIND_PANE.search(reply.stderr) or _NO_SESSIONS in reply.stderr
        return Presence.GONE if gone else Presence.UNKNOWN
    pid, _, found = reply.stdout.decode("utf-8", errors="replace").strip().partition(" ")
    if server_pid is not None and pid != str(server_pid):
        return Presence.GONE
    return Presence.PRESENT if found == pane_id else Presence.GONE


# --- capture -------------------------------------------------------------

_MAX_CAPTURE_ROUNDS = 3


def _capture_round(
    server: ServerRef, pane_ids: Sequence[str], timeout: float
) -> tuple[Reply, dict[str, tuple[bytes, int | None]]]:
    """As few chained calls as tmux's command size allows; the first failed reply (else the last) and the complete captures."""
    groups = [_capture_commands(pane_id, "") for pane_id in pane_ids]
    queue = [[pane_ids[i] for i in batch] for batch in _batches(groups)]
    replies: list[Reply] = []
    complete: dict[str, tuple[bytes, int | None]] = {}
    while queue:
        batch = queue.pop(0)
        reply, done = _capture_chain(server, batch, timeout)
        if _too_long(reply) and len(batch) > 1:
            # Another tmux build may allow less than measured: split until it fits.
            half = len(batch) // 2
            queue[:0] = [batch[:half], batch[half:]]
            continue
        replies.append(reply)
        complete.update(done)
    failed = [r for r in replies if r.rc != 0]
    return (failed or replies or [Reply(0, b"", "")])[0], complete


def _capture_commands(pane_id: str, marker: str) -> list[list[str]]:
    # The marker is printed through a format: display-message runs its
    # text through strftime first, which would mangle a literal "%12".
    # (Sized with a placeholder marker of the same length as the real one.)
    marker = marker or "@@afd-" + "0" * 16 + "-00000"
    return [
        ["display-message", "-p", "-t", pane_id, f"{marker} #{{pid}} #{{pane_id}}"],
        ["capture-pane", "-p", "-J", "-t", pane_id],
    ]


def _capture_chain(
    server: ServerRef, pane_ids: Sequence[str], timeout: float
) -> tuple[Reply, dict[str, tuple[bytes, int | None]]]:
    """One chained call; returns the reply and the panes whose capture is complete."""
    nonce = secrets.token_hex(8)
    commands: list[list[str]] = []
    for i, pane_id in enumerate(pane_ids):
        commands.extend(_capture_commands(pane_id, f"@@afd-{nonce}-{i}"))
    reply = _run(server, _chain(commands), timeout)
    marker = re.compile(rb"^@@afd-" + nonce.encode() + rb"-(\d+) (\d*) ([^\n]*)\n", re.M)
    found = list(marker.finditer(reply.stdout))
    complete: dict[str, tuple[bytes, int | None]] = {}
    for k, m in enumerate(found):
        i = int(m.group(1))
        if i >= len(pane_ids) or m.group(3).decode(errors="replace") != pane_ids[i]:
            continue  # a missing target prints the marker with an empty pane id
        if k + 1 < len(found):
            body = reply.stdout[m.end() : found[k + 1].start()]
        elif reply.rc == 0:
            body = reply.stdout[m.end() :]
        else:
            continue  # the chain broke after this marker: this capture may be cut short
        pid = int(m.group(2)) if m.group(2) else None
        complete[pane_ids[i]] = (body.removesuffix(b"\n"), pid)
    return reply, complete


def capture_panes(server: ServerRef, pane_ids: Sequence[str], timeout: float = 5.0) -> dict[str, CaptureResult]:
    """The visible screen of each pane, all in one chained tmux call.

    tmux stops a chain at the first pane that no longer exists; that pane is
    GONE and the rest are captured again, a bounded number of times.
    """
    for pane_id in pane_ids:
        _check_pane_id(pane_id)
    results: dict[str, CaptureResult] = {}
    pending = list(dict.fromkeys(pane_ids))
    error = "capture gave up after retries"
    for _ in range(_MAX_CAPTURE_ROUNDS):
        if not pending:
            break
        reply, complete = _capture_round(server, pending, timeout)
        for pane_id, (body, pid) in complete.items():
            results[pane_id] = CaptureResult(Presence.PRESENT, decode_capture(body), None, pid)
        pending = [p for p in pending if p not in complete]
        if not pending:
            break
        if reply.not_running or _NO_SESSIONS in reply.stderr:
            why = "no tmux server running" if reply.not_running else "the tmux server has no sessions"
            for pane_id in pending:
                results[pane_id] = CaptureResult(Presence.GONE, None, why)
            pending = []
            break
        missing = _CANT_FIND_PANE.search(reply.stderr)
        if reply.rc is None or missing is None:
            error = reply.error() if reply.rc != 0 else "tmux printed no capture for this pane"
            break
        gone = {missing.group(1)}
        # One vanished pane often means more (a whole window or session was
        # closed): one cheap listing finds them all instead of a round each.
        inventory = list_panes(server, timeout)
        if inventory.answered and inventory.server_running:
            live = {p.pane_id for p in inventory.panes}
            gone |= {p for p in pending if p not in live}
        for pane_id in gone & set(pending):
            results[pane_id] = CaptureResult(Presence.GONE, None, f"can't find pane: {pane_id}")
        pending = [p for p in pending if p not in gone]
    for pane_id in pending:
        results[pane_id] = CaptureResult(Presence.UNKNOWN, None, error)
    return {p: results[p] for p in dict.fromkeys(pane_ids)}


# --- actions -------------------------------------------------------------


def _action(reply: Reply, value: str | None = None) -> ActionResult:
    if reply.rc == 0:
        return ActionResult(Outcome.DONE, value)
    if reply.rc is None:
        return ActionResult(Outcome.UNKNOWN, None, reply.error())
    if reply.not_running or _CANT_FIND_PANE.search(reply.stderr) or _NO_SESSIONS in reply.stderr:
        return ActionResult(Outcome.GONE, None, reply.error())
    if "server exited" in reply.stderr or "lost server" in reply.stderr:
        return ActionResult(Outcome.UNKNOWN, None, reply.error())
    return ActionResult(Outcome.FAILED, None, reply.error())


def _env_args(env: Mapping[str, str] | None) -> list[str]:
    return [arg for key, value in (env or {}).items() for arg in ("-e", f"{key}={value}")]


def _command_args(argv: Sequence[str]) -> list[str]:
    # tmux runs a lone argument through `sh -c`, several with execvp: a
    # one-word command with a space or `$` in it must not become shell code.
    if len(argv) == 1:
        return ["--", f"exec {shlex.quote(argv[0])}"]
    return ["--", *argv] if argv else []


def new_session(
    server: ServerRef,
    name: str,
    cwd: str,
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout: float = 5.0,
) -> ActionResult:
    """A detached session running `argv` (exec'd directly, no shell); `value` is its pane id."""
    sep, end = _separators()
    args = ["new-session", "-d", "-s", format_literal(name), "-c", format_literal(cwd), "-P", "-F", f"{sep}#{{pane_id}}{end}"]
    args += [*_env_args(env), *_command_args(argv)]
    reply = _run(server, args, timeout)
    result = _action(reply)
    if not result.ok:
        # Starting a session also starts a missing server: "not running"
        # here can only mean the server died while answering.
        if reply.not_running:
            return ActionResult(Outcome.UNKNOWN, None, reply.error())
        return result
    text = reply.stdout.decode("utf-8", errors="replace")
    pane_id = text.split(sep, 1)[-1].split(end, 1)[0]
    return ActionResult(Outcome.DONE, pane_id if _PANE_ID.fullmatch(pane_id) else None)


def send_text(server: ServerRef, pane_id: str, text: str, enter: bool = True, timeout: float = 5.0) -> ActionResult:
    """Paste `text` into the pane as one bracketed paste, then (optionally) press Enter.

    A paste, unlike typed keys, reaches a TUI composer as one block: a
    newline inside a brief does not submit it half-written. Some TUIs
    ignore an Enter that arrives in the same instant as a paste; a caller
    that needs a gap sends `enter=False` and then `send_keys(..., "Enter")`.
    """
    _check_pane_id(pane_id)
    buffer = f"afd-{secrets.token_hex(6)}"
    commands = [["load-buffer", "-b", buffer, "-"], ["paste-buffer", "-p", "-d", "-b", buffer, "-t", pane_id]]
    if enter:
        commands.append(["send-keys", "-t", pane_id, "Enter"])
    result = _action(_run(server, _chain(commands), timeout, stdin=text.encode("utf-8")))
    if result.outcome is Outcome.GONE:
        _run(server, ["delete-buffer", "-b", buffer], timeout)  # paste never ran, so -d did not free it
    return result


def send_keys(server: ServerRef, pane_id: str, *keys: str, timeout: float = 5.0) -> ActionResult:
    """tmux key names (`Enter`, `C-c`, `Escape`) sent to the pane."""
    _check_pane_id(pane_id)
    return _action(_run(server, ["send-keys", "-t", pane_id, *keys], timeout))


def respawn_pane(
    server: ServerRef,
    pane_id: str,
    cwd: str,
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    kill: bool = False,
    timeout: float = 5.0,
) -> ActionResult:
    """Start `argv` in the pane, keeping its id; without `kill`, only a dead pane (remain-on-exit) is respawned."""
    _check_pane_id(pane_id)
    args = ["respawn-pane", *(["-k"] if kill else []), "-t", pane_id, "-c", format_literal(cwd), *_env_args(env)]
    args += _command_args(argv)
    return _action(_run(server, args, timeout))


def kill_pane(server: ServerRef, pane_id: str, timeout: float = 5.0) -> ActionResult:
    _check_pane_id(pane_id)
    return _action(_run(server, ["kill-pane", "-t", pane_id], timeout))


def set_pane_option(server: ServerRef, pane_id: str, name: str, value: str, timeout: float = 5.0) -> ActionResult:
    """A pane-scoped option, e.g. `remain-on-exit on` so a swap keeps the pane when the agent exits."""
    _check_pane_id(pane_id)
    return _action(_run(server, ["set-option", "-p", "-t", pane_id, name, value], timeout))


def client_activity(server: ServerRef, pane_id: str, timeout: float = 5.0) -> tuple[Presence, float | None]:
    """When a client attached to the pane's session last pressed a key (epoch seconds), if any is attached.

    UNKNOWN when tmux did not answer: the caller must then assume someone may be typing.
    """
    _check_pane_id(pane_id)
    reply = _run(server, ["list-clients", "-t", pane_id, "-F", "#{client_activity}"], timeout)
    if reply.not_running:
        return Presence.GONE, None
    if reply.rc != 0:
        gone = reply.rc is not None and (_CANT_FIND_PANE.search(reply.stderr) or "can't find" in reply.stderr)
        return (Presence.GONE if gone else Presence.UNKNOWN), None
    stamps = [int(w) for w in reply.stdout.decode("utf-8", "replace").split() if w.isdigit()]
    return Presence.PRESENT, (float(max(stamps)) if stamps else None)
# --- for a swap in place ---------------------------------------------------------


def pane_option(server: ServerRef, pane_id: str, name: str, timeout: float = 5.0) -> tuple[Outcome, str | None]:
    """A pane's own value of an option (None when the pane does not set it and inherits)."""
    _check_pane_id(pane_id)
    reply = _run(server, ["show-options", "-p", "-q", "-v", "-t", pane_id, name], timeout)
    result = _action(reply)
    if not result.ok:
        return result.outcome, None
    value = reply.stdout.decode("utf-8", errors="replace").strip()
    return Outcome.DONE, value or None


def restore_pane_option(server: ServerRef, pane_id: str, name: str, value: str | None, timeout: float = 5.0) -> ActionResult:
    """Put a pane option back as `pane_option` found it: its own value, or unset (inherited)."""
    _check_pane_id(pane_id)
    if value is None:
        return _action(_run(server, ["set-option", "-p", "-u", "-t", pane_id, name], timeout))
    return set_pane_option(server, pane_id, name, value, timeout)


def respawn_pane_from(
    server: ServerRef,
    pane_id: str,
    cwd: str,
    argv: Sequence[str],
    client_path: str | None,
    kill: bool = False,
    timeout: float = 5.0,
) -> ActionResult:
    """`respawn_pane`, with the new process's PATH taken from `client_path`.

    tmux hands a spawned pane the PATH of the client that asked (an `-e
    PATH=` loses to it), so the client runs with the PATH the pane's own
    shell had: the command then runs in the environment it was checked in.
    Each argument arrives literally, as for `respawn_pane`.
    """
    _check_pane_id(pane_id)
    args = ["respawn-pane", *(["-k"] if kill else []), "-t", pane_id, "-c", format_literal(cwd), *_command_args(argv)]
    env = {**os.environ, "PATH": client_path} if client_path else None
    return _action(_run(server, args, timeout, client_env=env))
