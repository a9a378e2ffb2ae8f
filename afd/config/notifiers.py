"""`[[notify]]` tables: who to tell about which events, as the config gives it.

The values only; `afd/config/settings.py` reads and checks them with the
rest of the file, and `afd/notifiers/` does the telling.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from afd.config.secrets import Secrets, url_origin, url_secrets, url_shown

TYPES = ("desktop", "ntfy", "webhook", "command")

# Whenever afd stops and leaves the next step to a person: a wall afd will not
# act on (no action configured, records alone, a wall with nothing to wait for),
# a wall no reset lifts or too many failed resumes, every account of
# handoff_order limited, a resume that failed, a handoff refused or rolled back.
# `session.limited` is not among them: afd is often about to act on it.
DEFAULT_EVENTS = (
    "session.waiting", "session.needs_human", "session.all_limited", "resume.failed", "handoff.refused",
    "handoff.rolled-back",
)

# Events about notifying itself: never handed to a notifier, so a failing one cannot feed itself.
OWN_PREFIX = "notify."

# Keys each type takes besides the common ones.
COMMON_KEYS = ("type", "name", "events", "min_interval", "timeout", "retry_for")
TYPE_KEYS = {
    "desktop": (),
    "ntfy": ("url", "token_file", "priority", "tags"),
    "webhook": ("url", "token_file"),
    "command": ("argv",),
}
REQUIRED_KEYS = {"desktop": (), "ntfy": ("url",), "webhook": ("url",), "command": ("argv",)}


@dataclass(frozen=True, slots=True)
class NotifierSettings:
    """One `[[notify]]` table, checked."""

    type: str
    number: int  # 1-based place among the file's [[notify]] tables
    name: str = ""
    events: tuple[str, ...] = DEFAULT_EVENTS
    min_interval: float = 60.0  # seconds; 0: every event is its own message
    timeout: float = 10.0  # seconds per attempt
    retry_for: float = 60.0  # seconds from the first attempt after which a message is given up
    url: str | None = None
    token_file: Path | None = None
    argv: tuple[str, ...] = ()
    priority: int | None = None  # ntfy's 1..5; None: from the event
    tags: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How afd names this notifier in events, logs and `afd notify test`: never by a secret.

        The user's `name`, else the type and the URL's scheme and host: its path
        is a webhook's key or an ntfy topic, and goes into nothing afd stores or shows.
        """
        if self.name:
            return self.name
        if self.url:
            return f"{self.type} {url_origin(self.url)}"
        if self.argv:
            return f"{self.type} {Path(self.argv[0]).name}"
        return self.type

    @property
    def secrets(self) -> Secrets:
        """What of this notifier's settings must not be stored or shown (its token is read at each send)."""
        return url_secrets(self.url)

    def wants(self, kind: str) -> bool:
        return wants(self.events, kind)


def wants(patterns: tuple[str, ...], kind: str) -> bool:
    """Whether `kind` is one of `patterns`: an exact kind, a prefix ending in "." or ".*", or "*"."""
    if kind.startswith(OWN_PREFIX):
        return False
    for pattern in patterns:
        if pattern == "*" or pattern == kind:
            return True
        prefix = pattern[:-1] if pattern.endswith(".*") else pattern
        if prefix.endswith(".") and kind.startswith(prefix):
            return True
    return False


def event_pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be an `events` entry, or None."""
    import re

    if pattern == "*":
        return None
    if not re.fullmatch(r"[a-z][a-z_-]*\.(\*|[a-z][a-z0-9_-]*)?", pattern):
        return f'"{pattern}" is not an event kind ("session.needs_human"), a prefix ("session.") or "*"'
    if pattern.startswith(OWN_PREFIX):
        return f'"{pattern}": notify.* events are never sent to notifiers (a failing notifier would feed itself)'
    return None


def url_problem(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        # Only scheme and host are shown: the rest may be the webhook's key.
        shown = f', got "{url_shown(url)}"' if parts.scheme and parts.hostname else ""
        return f"must be an http:// or https:// URL with a host{shown}"
    if parts.username or parts.password:
        return "must not carry a user or password (put a token in token_file)"
    return None


def plain_http_problem(url: str, has_token: bool) -> str | None:
    """Why `url` would send a notifier's secrets where others can read them, or None.

    An ntfy or webhook URL is itself a secret (its path), and a token_file's
    token goes in a header: over plain http to another host, anyone on the way
    reads both. Loopback stays allowed (a local relay, a test endpoint).
    """
    parts = urlsplit(url)
    if parts.scheme != "http" or is_loopback(parts.hostname or ""):
        return None
    what = "the URL and the bearer token" if has_token else "the URL, whose path is the key or topic"
    return (f"plain http to {parts.hostname} would send this notifier's secrets ({what}) unencrypted; "
            "use https:// (plain http is allowed only to a loopback address)")


def is_loopback(host: str) -> bool:
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_file_problem(path: Path) -> str | None:
    """Why `path` is no place for a secret, or None: it must be the user's own file, 0600 or tighter."""
    import os
    import stat

    try:
        info = path.stat()
    except FileNotFoundError:
        return f"{path} does not exist"
    except OSError as exc:
        return f"{path} cannot be read: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        return f"{path} is not a file"
    if info.st_uid != os.getuid():
        return f"{path} belongs to another user"
    if info.st_mode & 0o077:
        return f"{path} is readable by others (mode {stat.S_IMODE(info.st_mode):04o}); chmod 600 it"
    return None
