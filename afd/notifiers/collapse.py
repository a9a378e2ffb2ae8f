"""`min_interval`: repeats of one kind for one session become one message that says how many.

Pure, on monotonic seconds. The first event of a (kind, session) goes out at
once and opens a window of `interval`; events of that key inside the window
are held, and when it closes the latest of them goes out once, with the
count, and opens the next window. A key quiet for a whole window is
forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

M = TypeVar("M")


@dataclass(slots=True)
class _Window(Generic[M]):
    until: float
    held: M | None = None
    count: int = 0
    first_held_at: object = None  # the caller's wall-clock stamp of the first held event


@dataclass(frozen=True, slots=True)
class Held(Generic[M]):
    """What a closed window lets out: the latest held message, how many it stands for, since when."""

    message: M
    count: int
    since: object


@dataclass
class Collapser(Generic[M]):
    interval: float
    _windows: dict[object, _Window[M]] = field(default_factory=dict)

    def offer(self, key: object, message: M, now: float, stamp: object = None) -> M | None:
        """The message to send now, or None when it is held for the window's end."""
        if self.interval <= 0:
            return message
        window = self._windows.get(key)
        if window is None or now >= window.until:
            self._windows[key] = _Window(until=now + self.interval)
            return message
        if window.count == 0:
            window.first_held_at = stamp
        window.held, window.count = message, window.count + 1
        return None

    def due(self, now: float) -> list[Held[M]]:
        """Held messages whose window has closed, in the order their windows close."""
        out = []
        for key, window in sorted(self._windows.items(), key=lambda kv: kv[1].until):
            if now < window.until:
                continue
            if window.count and window.held is not None:
                out.append(Held(window.held, window.count, window.first_held_at))
                self._windows[key] = _Window(until=now + self.interval)
            else:
                del self._windows[key]
        return out

    def next_due(self) -> float | None:
        """When the next window with something held closes, or None."""
        held = [w.until for w in self._windows.values() if w.count]
        return min(held) if held else None
