"""What the supervisor remembers about each watched pane between polls.

Kept in memory only: captures can hold secrets, so no pane content is
stored (the store keeps just a detection's banner text).
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from afd.judge.gates import compared_content, is_chrome, same_content
from afd.model import Detection

# The list-panes fingerprint has a one-second grain (window_activity): a pane
# that printed in the same second as the listing its capture went with may
# print again in that second unseen, so it is captured once more (`grain_open`).
# Any other change moves the fingerprint. This backstop is for what neither
# shows (a tmux that does not stamp activity the way it does today).
MAX_CAPTURE_AGE = 60.0


def grain_open(fingerprint: tuple, listed_at: float | None) -> bool:
    """Whether a pane listed at `listed_at` (epoch seconds) may change with its fingerprint unchanged.

    Its last output was in the listing's second or later (`window_activity`
    is whole seconds): more output within that second leaves it as it is.
    None: no listing time (a fingerprint made up by a test); MAX_CAPTURE_AGE alone applies.
    """
    return listed_at is not None and bool(fingerprint) and fingerprint[0] >= int(listed_at)


@dataclass
class PaneWatch:
    """Recent fresh captures of one pane and the detections on them, oldest first."""

    keep: int = 2
    fingerprint: tuple | None = None
    captured_at: float | None = None  # monotonic seconds of the last fresh capture
    captures: deque = field(default_factory=deque)
    detections: deque = field(default_factory=deque)
    contents: deque = field(default_factory=deque)  # compared_content of each capture, computed once
    # What the last detection was made under (the config and plugins): a
    # reload must not reuse an answer the old rules gave.
    detected_under: object = None
    text: str | None = None  # the last fresh capture as tmux sent it
    # The last capture went with a listing in whose second the pane printed: look again next poll.
    grain_open: bool = False
    # The last capture differed from the one before (or was the first): only a second one alike
    # shows the pane has come to rest, so the next poll looks again whatever the fingerprint says.
    moving: bool = True

    def needs_capture(self, fingerprint: tuple, now: float, settled: bool = False) -> bool:
        """Whether this poll must capture the pane afresh.

        An unchanged fingerprint may reuse the last capture, except when its
        one-second grain may hide a change (`grain_open`), while the pane has
        not yet shown two captures alike since it last changed (`moving`,
        unless `settled`), while a banner is
        on screen and not yet `settled` (judged a limit: the decision needs
        fresh captures, the verdict once made does not), and never for longer
        than MAX_CAPTURE_AGE.
        """
        if self.captured_at is None or fingerprint != self.fingerprint or self.grain_open:
            return True
        if self.moving and not settled:
            return True
        if self.detections and self.detections[-1] is not None and not settled:
            return True
        return now - self.captured_at >= MAX_CAPTURE_AGE

    def repeats(self, rows: Sequence[str], rules: object) -> bool:
        """Whether `rows` is exactly the last fresh capture, detected under the same `rules`.

        Detectors are pure functions of the text, so the last detection
        stands: the backstop capture of an unchanged pane then costs a
        comparison, not a pass of every detector.
        """
        return bool(self.captures) and self.detected_under == rules and list(rows) == self.captures[-1]

    def settled_on(self, text: str, rules: object) -> bool:
        """Whether `text` is the last capture again and every capture (and detection) held is that same one.

        Recording it would leave every capture, detection and content the
        gates look at as it is, so their verdict cannot change: the
        backstop capture of an unchanged pane needs no parsing or judging.
        """
        if self.text != text or self.detected_under != rules or len(self.captures) < max(self.keep, 2):
            return False
        # Detections made under earlier rules (a reload) are not this verdict's: held beside the new one, they differ.
        return all(c == self.captures[-1] for c in self.captures) and all(d == self.detections[-1] for d in self.detections)

    def refresh(self, fingerprint: tuple, now: float, listed_at: float | None = None) -> None:
        """A fresh capture showed nothing new: it counts as one for `needs_capture`."""
        self.fingerprint = fingerprint
        self.captured_at = now
        self.grain_open = grain_open(fingerprint, listed_at)
        self.moving = False

    def record(
        self,
        rows: Sequence[str],
        detection: Detection | None,
        fingerprint: tuple,
        now: float,
        chrome: Sequence[re.Pattern[str]],
        volatile: Sequence[re.Pattern[str]] = (),
        listed_at: float | None = None,
    ) -> bool | None:
        """Add a fresh capture; return whether the pane is idle (content unchanged since the last one).

        None for the first capture: one look cannot tell idle from working.
        `listed_at`: when the listing that gave `fingerprint` was asked for (epoch seconds).
        """
        repeated = bool(self.captures) and list(rows) == self.captures[-1] and detection == self.detections[-1]
        # a ticking statusLine is not work
        content = self.contents[-1] if repeated else compared_content(rows, detection, chrome, volatile)
        idle = same_content(self.contents[-1], content) if self.contents else None
        self.captures.append(list(rows))
        self.detections.append(detection)
        self.contents.append(content)
        while len(self.captures) > max(self.keep, 2):
            self.captures.popleft()
            self.detections.popleft()
            self.contents.popleft()
        self.fingerprint = fingerprint
        self.captured_at = now
        self.grain_open = grain_open(fingerprint, listed_at)
        self.moving = idle is not True
        return idle

    def look_again(self) -> None:
        """Capture afresh at the next poll, whatever the fingerprint says (someone waits for this pane to settle)."""
        self.captured_at = None

    def reset(self) -> None:
        self.captures.clear()
        self.detections.clear()
        self.contents.clear()
        self.fingerprint = None
        self.captured_at = None


def occurrence_key(rows: Sequence[str], detection: Detection, chrome: Sequence[re.Pattern[str]], context: int = 3) -> str:
    """Names one appearance of a banner: its text and a digest of the rows just above it.

    The same sentence printed again after the agent worked (the user said
    "continue" at the wall) is a new banner with its own first-seen time,
    while a banner that merely stays on screen keeps its identity. Only a
    digest of the context is kept: captures can hold secrets.
    """
    above = [r for r in rows[: detection.first_row] if r.strip() and not is_chrome(r, chrome)][-context:]
    digest = hashlib.sha256("\n".join(above).encode("utf-8", "replace")).hexdigest()[:16]
    return f"{detection.banner}\n#{digest}"
