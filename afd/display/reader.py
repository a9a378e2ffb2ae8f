"""One reader of afd's output: the instant they read it and their zone. Neutralise, then render times."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo

from afd.display.clock import clock_time, local_instants, moment, parse_iso, with_offset
from afd.display.text import neutral


@dataclass(frozen=True, slots=True)
class Reader:
    now: datetime  # aware
    zone: tzinfo

    @classmethod
    def here(cls, now: datetime | None = None) -> Reader:
        """The person at this terminal: now, in `TZ`'s zone, else the system's."""
        from afd.kit.resettime import local_zone

        return cls(now or datetime.now(timezone.utc), local_zone())

    def says(self, text: object, *, lines: bool = False) -> str:
        """Outside or stored text as this reader reads it: neutral, its instants in their zone."""
        if text is None:
            return ""
        return local_instants(neutral(text, lines=lines), self.now, self.zone)

    def at(self, when: datetime | str | None) -> str | None:
        """An instant ahead or just past (`08:00 (in 3h24m)`); None for none; unreadable text, neutral."""
        if when is None or when == "":
            return None
        return self._shown(when, clock_time)

    def happened(self, when: datetime | str | None) -> str:
        """When something happened (`09:30:05`, `Dec 04 09:30:05`)."""
        return self._shown(when, moment)

    def dated(self, when: datetime | str | None) -> str:
        """An instant with its offset, for text read elsewhere later (`2026-12-04 09:30 +01:00`)."""
        return self._shown(when, lambda at, _now, zone: with_offset(at, zone))

    def _shown(self, when: datetime | str | None, form) -> str:
        at = parse_iso(when)
        try:
            return form(at, self.now, self.zone) if at is not None else neutral(when or "")
        except (OverflowError, ValueError):  # an instant at the edge of what a datetime holds, in this zone
            return neutral(str(when))
