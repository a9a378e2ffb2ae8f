"""`afd run`: the long-lived shell around the supervisor.

Owns the process-level things: the state lock, the store, signals, the
control socket, config reload, and systemd's notify protocol. Each loop turn
polls once, then serves control requests until the next poll is due.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from afd import __version__
from afd.config.settings import Config, ConfigError, default_config_path
from afd.daemon import control, notify
from afd.daemon.fleet import Fleet
from afd.daemon.limits import raise_open_files
from afd.daemon.status import event_json
from afd.daemon.supervisor import PollSummary, Supervisor
from afd.display.text import neutral
from afd.errors import EXIT_CONFIG, EXIT_FAIL, AfdError
from afd.model import Event
from afd.notifiers.worker import NoticeWorker
from afd.pluginset import PluginSet, load_config_and_plugins
from afd.record.store import StateLock, Store, StoreError
from afd.record.store import default_path as default_db_path
from afd.world import tmux

log = logging.getLogger("afd.daemon")


@dataclass(frozen=True, slots=True)
class Tempo:
    """How often the loop turns besides `poll_interval`: a setting of the loop, not of any action.

    Exactly once does not depend on it: the planner plans from the store as it stands after the
    engine's turn, whatever the tempo (DESIGN "Acting on a limit").
    """

    # Seconds between turns while an action waits on processes or a screen (a swap, a worker's result).
    acting_interval: float = 0.25
    # After a step's effect (a paste, an Enter, a respawn) the loop turns at `acting_interval` for this
    # long: what the effect did shows within a turn or two, and the next step (the Enter after a paste)
    # follows in a fraction of a second rather than a poll interval later. 0 turns quick turns off.
    quick_after_step: float = 3.0

    def next_turn_in(self, poll_interval: float, supervisor: Supervisor) -> float:
        """Seconds from the start of this turn to the next one."""
        quick = supervisor.busy() or supervisor.engine.stepped_within(self.quick_after_step)
        return min(poll_interval, self.acting_interval) if quick else poll_interval


def turn(supervisor: Supervisor) -> PollSummary:
    """One turn of the loop on its own: a poll (the engine's turn and the plans after it, the handoffs policy
    asks for among them). `afd run` turns it every `Tempo.next_turn_in`; a test may drive it with a simulated clock."""
    return supervisor.poll(handoffs=True)

# journald reads a "<N>" prefix on each stderr line as the syslog priority.
_PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3, logging.CRITICAL: 2}


class JournaldFormatter(logging.Formatter):
    """One event per line; under journald (JOURNAL_STREAM set) with its priority prefix."""

    def __init__(self, fmt: str, prefix: bool):
        super().__init__(fmt)
        self.prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        # A message may quote a pane, a plugin's error or an endpoint's reply: neutral, so a terminal running
        # `afd run` (or journalctl showing its lines) is never driven by it.
        text = neutral(super().format(record).replace("\n", " ⏎ "))
        return f"<{_PRIORITY.get(record.levelno, 6)}>{text}" if self.prefix else text


def setup_logging(verbose: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JournaldFormatter("%(name)s: %(message)s", prefix=bool(os.environ.get("JOURNAL_STREAM"))))
    root = logging.getLogger("afd")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False


class StartupError(AfdError):
    """The daemon cannot start; `code` is its exit status (EXIT_CONFIG tells systemd not to restart it)."""


def load_checked(path: Path | None) -> tuple[Config, PluginSet]:
    return load_config_and_plugins(path, lenient_patterns=True)


def server_ref(config: Config, socket_name: str | None, socket_path: str | None) -> tmux.ServerRef:
    """The server to watch: -L/-S on the command line, else [tmux] in the config, else tmux's own rule ($TMUX)."""
    if socket_name or socket_path:
        return tmux.ServerRef(socket_name=socket_name, socket_path=socket_path)
    return tmux.ServerRef.chosen(config.tmux_socket_name, config.tmux_socket_path)


@dataclass
class Daemon:
    config_path: Path | None
    socket_name: str | None = None
    socket_path: str | None = None
    store_path: Path | None = None
    started_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    _stop: bool = False
    _reload: bool = False
    _wake_r: socket.socket | None = None
    _wake_w: socket.socket | None = None
    _poll_error: str | None = None  # the failure the last poll ended in, said once with its traceback
    _poll_error_repeats: int = 0
    web: Any = None  # the dashboard's server (afd/web), once an extension started it
    # Command groups beyond the daemon's own, each made for its request handler (`afd run` adds the dashboard's).
    extensions: Sequence[Callable[[Any], Any]] = ()
    tempo: Tempo = Tempo()
    _config_stamp: tuple[int, int, int] | None = None  # the config file as last read: mtime, size, inode

    # --- start ----------------------------------------------------------------

    def start(self) -> None:
        soft, hard = raise_open_files()
        log.debug("open files: soft limit %d, hard limit %d", soft, hard)
        self._config_stamp = _file_stamp(self._config_file())
        try:
            self.config, self.plugins = load_checked(self.config_path)
        except ConfigError as exc:
            raise StartupError("\n".join(str(p) for p in exc.problems) + "\nafd: not started: the config is invalid", EXIT_CONFIG) from None
        except Exception as exc:  # a config that cannot be read at all is still a config error, not a crash
            raise StartupError(f"cannot read the config ({type(exc).__name__}: {exc})\nafd: not started", EXIT_CONFIG) from None
        for warning in self.config.warnings:
            log.warning("%s; the built-in pattern stays in force", warning)
        for failure in self.plugins.failures:
            log.error("plugin %s (%s) was skipped: %s", failure.name, failure.origin, failure.error)

        db = self.store_path or default_db_path()
        self.lock = StateLock.for_store(db)
        try:
            self.lock.acquire()
        except StoreError as exc:
            raise StartupError(str(exc), EXIT_FAIL) from None
        try:
            self.store = Store(db)
        except StoreError as exc:
            self.lock.release()
            # A newer schema or a foreign database stays that way: StoreRefused carries
            # EXIT_CONFIG, which stops systemd's restart loop.
            raise StartupError(str(exc), exc.code) from None
        self.server = server_ref(self.config, self.socket_name, self.socket_path)
        self.supervisor = Supervisor(self.config, self.plugins, self.store, self.server, emit=self._publish)
        self.notices = NoticeWorker(self.plugins, wake=self.wake)
        self.supervisor.announce = self.notices.submit
        self.control: control.ControlServer | None = None
        if self.store.opened_fresh_after_corruption:
            self.supervisor.event(
                "store.corrupt",
                f"the state database was corrupt and was moved aside to {self.store.opened_fresh_after_corruption}; starting with empty state",
            )
        if self.store.backup_path:
            self.supervisor.event("store.migrated", f"the state database was upgraded; a backup is at {self.store.backup_path}")
        self.store.set_meta("daemon_pid", str(os.getpid()))
        self.store.set_meta("started_at", self.started_at.strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.store.set_meta("version", __version__)
        self._store_agent_names()
        # Actions an earlier run left pending are carried on (or rolled back) by the engine from the
        # first poll on, through the same steps that run them (afd/act/runner.py).
        self.supervisor.settled = self._settled
        self.fleet = Fleet(self)
        self.fleet.start()
        self.supervisor.event("daemon.started", f"afd {__version__} started (pid {os.getpid()})")

    def _store_agent_names(self) -> None:
        # `afd status` with the daemon down lists these agents without loading every plugin itself.
        self.store.set_meta("agents", json.dumps(sorted(self.plugins.agents)))
        # And the accounts its config names, so status lists them even before one is seen.
        self.store.set_meta("accounts", json.dumps([[a.name, a.agent] for a in self.config.accounts.values()]))
        # And how long an exact usage figure stays fresh, so `afd usage` says the same with the daemon down.
        self.store.set_meta("usage_stale_after", repr(self.config.usage_stale_after))

    def start_control(self) -> None:
        from afd.daemon.requests import RequestHandler

        self.handler = RequestHandler(self, self.extensions)
        server = control.ControlServer(control.socket_path(), self.handler.handle)
        try:
            server.start()
        except control.ControlError as exc:
            raise StartupError(str(exc), EXIT_FAIL) from None
        # Only a started server is kept: close() must not serve one that never listened.
        self.control = server
        self._serve_web_if_enabled()

    def _serve_web_if_enabled(self) -> None:
        if self.control is not None:
            self.handler.started()  # what the extensions serve (the dashboard) when the config asks for it

    def _publish(self, event: Event, event_id: int) -> None:
        if self.control is not None:
            self.control.publish("events", event_json(event, event_id))

    # --- signals and reload ---------------------------------------------

    def install_signals(self) -> None:
        self._wake_r, self._wake_w = socket.socketpair()
        for s in (self._wake_r, self._wake_w):
            s.setblocking(False)
        signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)
        self.supervisor.workers.wake = self.wake  # a finished worker step is advanced at once
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGHUP, self._on_reload)

    def _on_stop(self, signum, frame) -> None:
        self._stop = True

    def _on_reload(self, signum, frame) -> None:
        self._reload = True

    def wake(self) -> None:
        if self._wake_w is not None:
            try:
                self._wake_w.send(b"\0")
            except OSError:
                pass

    def watch_config(self) -> None:
        """Reload when the config file changes; the directory is watched, as editors replace the file."""
        path = self._config_file()
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            log.warning("cannot watch %s for config changes: %s", path.parent, exc)
            return
        self._watch_stop = threading.Event()
        threading.Thread(target=self._watch, args=(path,), name="afd-config-watch", daemon=True).start()

    def _watch(self, path: Path) -> None:
        import watchfiles

        folder = path.parent.absolute()
        stop = self._watch_stop
        while not stop.is_set():
            if not folder.is_dir():
                stop.wait(1.0)  # deleted: watch again once it is back
                continue
            # Not recursive: `--config ~/afd.toml` must not watch the whole home tree. The
            # parent is watched too, so the folder's own deletion or replacement is seen.
            paths = [folder, folder.parent] if folder.parent != folder else [folder]
            restart = False
            try:
                # Each timeout also yields: a write made before the watcher was in place (the
                # daemon answers before this thread has started it) is seen by its stamp.
                for changes in watchfiles.watch(*paths, recursive=False, stop_event=stop, debounce=200, rust_timeout=1000,
                                                yield_on_timeout=True):
                    if not changes:
                        if _file_stamp(path) != self._config_stamp:
                            self._reload = True
                            self.wake()
                        continue
                    names = {Path(p) for _, p in changes}
                    restart = folder in names and not folder.is_dir() or any(
                        change is watchfiles.Change.added and Path(p) == folder for change, p in changes
                    )
                    if restart or path.absolute() in names:
                        self._reload = True
                        self.wake()
                    if restart:
                        break
            except FileNotFoundError:
                restart = True  # deleted between the check and the watch
            except Exception as exc:  # the daemon works on without live reload
                log.warning("config watch stopped: %s", exc)
                return
            if not restart:
                return

    def _config_file(self) -> Path:
        return Path(self.config_path or default_config_path())

    def reload(self) -> None:
        self._reload = False
        self._config_stamp = _file_stamp(self._config_file())
        notify.reloading()
        try:
            config, plugins = load_checked(self.config_path)
        except ConfigError as exc:
            for problem in exc.problems:
                log.error("%s", problem)
            self.supervisor.event(
                "config.invalid",
                f"the config has {len(exc.problems)} problem{'s' if len(exc.problems) != 1 else ''} "
                f"({exc.problems[0]}); the last good config stays in force",
            )
        except Exception as exc:  # whatever the file holds, a reload never ends the daemon
            log.exception("config reload failed")
            self.supervisor.event(
                "config.invalid", f"the config cannot be read ({type(exc).__name__}: {exc}); the last good config stays in force"
            )
        else:
            for warning in config.warnings:
                log.warning("%s; the built-in pattern stays in force", warning)
            config = self._keep_server(config)
            self.config, self.plugins = config, plugins
            self.supervisor.config, self.supervisor.plugins = config, plugins
            self.notices.use(plugins)
            self.server = server_ref(config, self.socket_name, self.socket_path)
            self.supervisor.server = self.server
            self._store_agent_names()
            self.fleet.configure()
            self.supervisor.event("config.reloaded", f"config reloaded from {config.path or 'the built-in defaults'}")
            self._serve_web_if_enabled()  # a running dashboard keeps its port and logins until afd restarts
        notify.ready()

    # --- the loop -------------------------------------------------------

    def _keep_server(self, config: Config) -> Config:
        """The reloaded config with the tmux server of the one in force: switching servers needs a restart.

        Sessions are bound to the server they were seen on; switching live
        would freeze the old server's sessions or mark them gone.
        """
        old = (self.config.tmux_socket_name, self.config.tmux_socket_path)
        new = (config.tmux_socket_name, config.tmux_socket_path)
        if new == old or self.socket_name or self.socket_path:
            return config  # unchanged, or -L/-S on the command line choose the server anyway
        self.supervisor.event(
            "config.refused-key",
            "[tmux] socket_name/socket_path changed; restart afd to watch another server "
            "(the rest of the config is reloaded)",
        )
        return replace(config, tmux_socket_name=old[0], tmux_socket_path=old[1])

    def store_reports(self) -> None:
        """What the notifiers reported (a notifier given up on, or working again), stored as events here, on the loop."""
        for kind, message, data in self.notices.reports():
            self.supervisor.event(kind, message, **data)
        if getattr(self, "fleet", None) is not None:
            self.fleet.store_pulls()  # what the hosts of the fleet answered, stored here, on the loop

    def poll(self) -> PollSummary:
        """A poll alone (`run --once`): no handoff is started, as none could be carried to its end."""
        return self._timed(self.supervisor.poll)

    def turn(self) -> PollSummary:
        return self._timed(lambda: turn(self.supervisor))

    def _timed(self, poll: Callable[[], PollSummary]) -> PollSummary:
        started = time.perf_counter()
        summary = poll()
        notify.status(summary.line())
        # One line a poll with -v: what scripts/bench.py reads the poll's duration from.
        log.debug("poll took %.1f ms: %s", (time.perf_counter() - started) * 1000, summary.line())
        return summary

    def _settled(self, entry_id: int, entry) -> None:
        """Tell a client waiting on this action (`afd handoff` without --no-wait) how it ended."""
        if self.control is not None and entry is not None:
            self.control.publish(f"action-{entry_id}", {"journal": entry_id, "state": entry.state.value, "outcome": entry.outcome})

    def run_forever(self) -> int:
        assert self._wake_r is not None  # install_signals() runs first
        wake = self._wake_r
        selector = selectors.DefaultSelector()
        selector.register(wake, selectors.EVENT_READ, "wake")
        if self.control is not None:
            selector.register(self.control.fileno(), selectors.EVENT_READ, "control")
        first = True
        last_prune = 0.0
        interval = notify.watchdog_interval()
        ping_every = interval / 2 if interval else None
        while not self._stop:
            if self._reload:
                self.reload()
            started = time.monotonic()
            try:
                self.turn()  # not `run --once`'s poll: a swap needs the loop to carry it to its end
            except Exception as exc:
                # A bug in one turn must not kill the service.
                self._poll_failed(exc)
            else:
                self._poll_worked()
            self.store_reports()
            if first:
                notify.ready()
                first = False
            notify.watchdog()
            last_ping = time.monotonic()
            if started - last_prune > 3600:
                self.store.prune_events(datetime.now(timezone.utc))
                last_prune = started
            deadline = started + self._interval()
            if self.control is not None:
                # A poll that overran its interval (tmux hanging) must not starve requests.
                self.control.serve_pending(0)
            while not self._stop and not self._reload:
                now = time.monotonic()
                # A request may have started an action meanwhile: then the next turn comes sooner.
                left = min(deadline, started + self._interval()) - now
                if left <= 0:
                    break
                # Capped so a wake-up is never more than a minute away, whatever the config says.
                wait = min(left, 60.0)
                if ping_every is not None:
                    # systemd kills a unit that misses its watchdog, however long poll_interval is.
                    if now - last_ping >= ping_every:
                        notify.watchdog()
                        last_ping = now
                    wait = min(wait, last_ping + ping_every - now)
                for key, _ in selector.select(wait):
                    if key.data == "wake":
                        try:
                            while wake.recv(512):
                                pass
                        except (BlockingIOError, OSError):
                            pass
                        self.supervisor.advance_actions(actions={"create"})
                        self.store_reports()
                    elif self.control is not None:
                        self.control.serve_pending(0)
        notify.stopping()
        return 0

    def _interval(self) -> float:
        # A swap waits on processes and a new agent's screen: look again soon, not a poll later.
        return self.tempo.next_turn_in(self.config.poll_interval, self.supervisor)

    def _poll_failed(self, exc: Exception) -> None:
        """Log a new failure with its traceback; the same one again only as a count, sparingly."""
        what = f"{type(exc).__name__}: {exc}"
        if what != self._poll_error:
            self._poll_worked()
            log.exception("poll failed")
            self._poll_error, self._poll_error_repeats = what, 0
            return
        self._poll_error_repeats += 1
        n = self._poll_error_repeats
        if n & (n - 1) == 0:  # 1, 2, 4, 8, ...: a reminder that thins out
            log.error("poll failed again (%d repeat%s of: %s)", n, "s" if n != 1 else "", what)

    def _poll_worked(self) -> None:
        if self._poll_error is not None:
            log.info("polls work again after %d failure%s of: %s", self._poll_error_repeats + 1,
                     "s" if self._poll_error_repeats else "", self._poll_error)
            self._poll_error, self._poll_error_repeats = None, 0

    def close(self) -> None:
        if getattr(self, "_watch_stop", None) is not None:
            self._watch_stop.set()
        if getattr(self, "store", None) is not None:
            try:
                self.supervisor.event("daemon.stopped", "afd stopped")  # followers hear it before the socket closes
            except Exception:
                pass
        if getattr(self, "fleet", None) is not None:
            self.fleet.close()
        if getattr(self, "notices", None) is not None:
            self.notices.close()  # queued messages get a moment; nothing is kept for the next start
        if (server := getattr(self, "control", None)) is not None:
            server.serve_pending(0)
            server.close()
        if getattr(self, "web", None) is not None:
            self.web.stop()  # after the socket: its pages' event streams have ended; its logins die here
        if getattr(self, "store", None) is not None:
            self.store.close()
        if getattr(self, "lock", None) is not None:
            self.lock.release()


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
