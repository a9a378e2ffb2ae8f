"""`afd run`: the long-lived shell around the supervisor.

Owns the process-level things: the state lock, the store, signals, the
control socket, config reload, and systemd's notify protocol. Each loop turn
polls once, then serves control requests until the next poll is due.
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from afd import __version__, control, notify, tmux
from afd.config import Config, ConfigError, default_config_path
from afd.loader import PluginSet, load_config_and_plugins
from afd.model import Event
from afd.status import event_json
from afd.store import JournalState, StateLock, Store, StoreError
from afd.store import default_path as default_db_path
from afd.supervisor import PollSummary, Supervisor

log = logging.getLogger("afd.daemon")

# journald reads a "<N>" prefix on each stderr line as the syslog priority.
_PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3, logging.CRITICAL: 2}


class JournaldFormatter(logging.Formatter):
    """One event per line; under journald (JOURNAL_STREAM set) with its priority prefix."""

    def __init__(self, fmt: str, prefix: bool):
        super().__init__(fmt)
        self.prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record).replace("\n", " ⏎ ")
        return f"<{_PRIORITY.get(record.levelno, 6)}>{text}" if self.prefix else text


def setup_logging(verbose: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JournaldFormatter("%(name)s: %(message)s", prefix=bool(os.environ.get("JOURNAL_STREAM"))))
    root = logging.getLogger("afd")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    root.propagate = False


class StartupError(Exception):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def load_checked(path: Path | None) -> tuple[Config, PluginSet]:
    return load_config_and_plugins(path, lenient_patterns=True)


def server_ref(config: Config, socket_name: str | None, socket_path: str | None) -> tmux.ServerRef:
    if socket_name or socket_path:
        return tmux.ServerRef(socket_name=socket_name, socket_path=socket_path)
    return tmux.ServerRef(socket_name=config.tmux_socket_name, socket_path=config.tmux_socket_path)


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

    # --- start ----------------------------------------------------------------

    def start(self) -> None:
        try:
            self.config, self.plugins = load_checked(self.config_path)
        except ConfigError as exc:
            raise StartupError("\n".join(str(p) for p in exc.problems) + "\nafd: not started: the config is invalid", 78) from None
        for warning in self.config.warnings:
            log.warning("%s; the built-in pattern stays in force", warning)
        for failure in self.plugins.failures:
            log.error("plugin %s (%s) was skipped: %s", failure.name, failure.origin, failure.error)

        db = self.store_path or default_db_path()
        self.lock = StateLock.for_store(db)
        try:
            self.lock.acquire()
        except StoreError as exc:
            raise StartupError(str(exc), 1) from None
        try:
            self.store = Store(db)
        except StoreError as exc:
            self.lock.release()
            raise StartupError(str(exc), 1) from None
        self.server = server_ref(self.config, self.socket_name, self.socket_path)
        self.supervisor = Supervisor(self.config, self.plugins, self.store, self.server, emit=self._publish)
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
        self._recover_journal()
        self.supervisor.event("daemon.started", f"afd {__version__} started (pid {os.getpid()})")

    def _recover_journal(self) -> None:
        """Intent committed before a crash, with no outcome: inspected where afd knows how, else rolled back; said."""
        for entry in self.store.pending_journal():
            if self.supervisor.recover_entry(entry):
                continue
            outcome = (
                f"afd stopped before finishing {entry.action}; nothing more was done. "
                "Check the session's pane and worktree before retrying."
            )
            self.store.journal_finish(entry.id, JournalState.ROLLED_BACK, outcome)
            self.supervisor.event("journal.rolled-back", f"{entry.action} of {entry.session}: {outcome}", entry.session)

    def start_control(self) -> None:
        from afd.requests import RequestHandler

        self.handler = RequestHandler(self)
        self.control = control.ControlServer(control.socket_path(), self.handler.handle)
        try:
            self.control.start()
        except control.ControlError as exc:
            raise StartupError(str(exc), 1) from None

    def _publish(self, event: Event, event_id: int) -> None:
        if self.control is not None:
            self.control.publish("events", event_json(event, event_id))

    # --- signals and reload ---------------------------------------------

    def install_signals(self) -> None:
        self._wake_r, self._wake_w = socket.socketpair()
        for s in (self._wake_r, self._wake_w):
            s.setblocking(False)
        signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)
        self.supervisor.creates.wake = self.wake  # a finished worker step is advanced at once
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
        path = self.config.path or (self.config_path or default_config_path())
        folder = Path(path).parent
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            log.warning("cannot watch %s for config changes: %s", folder, exc)
            return
        self._watch_stop = threading.Event()

        def watcher() -> None:
            import watchfiles

            try:
                for changes in watchfiles.watch(folder, stop_event=self._watch_stop, debounce=200, rust_timeout=1000):
                    if any(Path(p).name == Path(path).name for _, p in changes):
                        self._reload = True
                        self.wake()
            except Exception as exc:  # the daemon works on without live reload
                log.warning("config watch stopped: %s", exc)

        threading.Thread(target=watcher, name="afd-config-watch", daemon=True).start()

    def reload(self) -> None:
        self._reload = False
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
        else:
            for warning in config.warnings:
                log.warning("%s; the built-in pattern stays in force", warning)
            self.config, self.plugins = config, plugins
            self.supervisor.config, self.supervisor.plugins = config, plugins
            self.server = server_ref(config, self.socket_name, self.socket_path)
            self.supervisor.server = self.server
            self.supervisor.event("config.reloaded", f"config reloaded from {config.path or 'the built-in defaults'}")
        notify.ready()

    # --- the loop -------------------------------------------------------

    def poll(self) -> PollSummary:
        summary = self.supervisor.poll()
        notify.status(summary.line())
        return summary

    def run_forever(self) -> int:
        selector = selectors.DefaultSelector()
        selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        if self.control is not None:
            selector.register(self.control.fileno(), selectors.EVENT_READ, "control")
        first = True
        last_prune = 0.0
        while not self._stop:
            if self._reload:
                self.reload()
            started = time.monotonic()
            try:
                self.poll()
            except Exception:
                # A bug in one poll must not kill the service; it is logged with its traceback.
                log.exception("poll failed")
            if first:
                notify.ready()
                first = False
            notify.watchdog()
            if started - last_prune > 3600:
                self.store.prune_events(datetime.now(timezone.utc))
                last_prune = started
            deadline = started + self.config.poll_interval
            if self.control is not None:
                # A poll that overran its interval (tmux hanging) must not starve requests.
                self.control.serve_pending(0)
            while not self._stop and not self._reload:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                # Capped so a wake-up is never more than a minute away, whatever the config says.
                for key, _ in selector.select(min(left, 60.0)):
                    if key.data == "wake":
                        try:
                            while self._wake_r.recv(512):
                                pass
                        except (BlockingIOError, OSError):
                            pass
                        self.supervisor.creates.advance()
                    elif self.control is not None:
                        self.control.serve_pending(0)
        notify.stopping()
        return 0

    def close(self) -> None:
        if getattr(self, "_watch_stop", None) is not None:
            self._watch_stop.set()
        if getattr(self, "store", None) is not None:
            try:
                self.supervisor.event("daemon.stopped", "afd stopped")  # followers hear it before the socket closes
            except Exception:
                pass
        if getattr(self, "control", None) is not None:
            self.control.serve_pending(0)
            self.control.close()
        if getattr(self, "store", None) is not None:
            self.store.close()
        if getattr(self, "lock", None) is not None:
            self.lock.release()
