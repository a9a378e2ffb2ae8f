"""afd's own notifiers, one `afd_event` plugin per `[[notify]]` table.

Registered through the same plugin manager as every other plugin (so `afd
plugins` lists them), they use nothing but the public hook: the event, and
the notice afd made of it. The hook call only filters and queues; the
sending happens on the notifier's own lane (`courier.py`).
"""

from __future__ import annotations

import logging

from afd import hookimpl
from afd.config.notifiers import NotifierSettings
from afd.model import Event, Notice
from afd.notifiers import command, desktop, ntfy, webhook
from afd.notifiers.courier import Courier, Report, Send

log = logging.getLogger("afd.notify")

SENDERS: dict[str, Send] = {"desktop": desktop.send, "ntfy": ntfy.send, "webhook": webhook.send, "command": command.send}


def _logged(kind: str, message: str, data: dict) -> None:
    log.warning("%s: %s", kind, message)


class Notifier:
    """One configured notifier as a plugin."""

    def __init__(self, settings: NotifierSettings):
        self.settings = settings
        self.report: Report = _logged  # the daemon points this at its event queue
        self._courier: Courier | None = None  # started on the first event it wants

    @property
    def plugin_name(self) -> str:
        return f"notify[{self.settings.number}]"

    @hookimpl
    def afd_event(self, event: Event, notice: Notice) -> None:
        if not self.settings.wants(event.kind):
            return
        if self._courier is None:
            self._courier = Courier(self.settings, SENDERS[self.settings.type], self._report)
        self._courier.offer(event, notice)

    def _report(self, kind: str, message: str, data: dict) -> None:
        self.report(kind, message, data)  # looked up at each report: a reload may re-point it

    def take_over(self, old: Notifier) -> None:
        """Carry on `old`'s lane (its queue, collapse windows, failure state): same settings, after a reload."""
        self._courier, old._courier = old._courier, None
        if self._courier is not None:
            self._courier.report = self._report

    def close(self, grace: float = 0.0) -> None:
        if self._courier is not None:
            self._courier.close(grace)


def send_once(settings: NotifierSettings, notice: Notice):
    """One attempt through `settings`' notifier, no queue, no retry: what `afd notify test` shows."""
    return SENDERS[settings.type](settings, notice)
