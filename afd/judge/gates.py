"""The two core gates that stand between a detector's hit and a limit decision.

A detector only says "this text is on screen". The gates ask whether the
agent is *stalled* at it: a pane that merely shows the banner (a file, a
diff, the agent quoting it) must never pass for a wall, because the action a
limit triggers can swap who edits the user's branch. So the banner must be
the last thing the agent printed (tail-anchored) and the pane must sit
unchanged on it (stability-gated). Both are pure functions over captured rows.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from afd.kit.text import box_rows, masked
from afd.model import AgentSpec, Detection


@functools.lru_cache(maxsize=64)
def _combined(chrome: tuple[re.Pattern[str], ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None] | None:
    """A spec's chrome as two alternations, so a row is tested twice, not once per pattern.

    The patterns anchored at the row's start are joined under one `^` and
    tried at the start only; joined with the others, every one of them would
    be tried at every column of the row.
    """
    # Only plain `re` patterns: a manifest's budgeted pattern joined into a
    # plain alternation would lose its per-row time budget.
    if not chrome or any(not isinstance(p, re.Pattern) or not isinstance(p.pattern, str) or p.flags & re.ASCII for p in chrome):
        return None
    scoped = {re.IGNORECASE: "i", re.MULTILINE: "m", re.DOTALL: "s", re.VERBOSE: "x"}
    at_start: list[str] = []
    anywhere: list[str] = []
    for p in chrome:
        letters = "".join(ch for flag, ch in scoped.items() if p.flags & flag)
        body = _after_start_anchor(p)
        text = p.pattern if body is None else body
        part = f"(?{letters}:{text})" if letters else f"(?:{text})"
        (anywhere if body is None else at_start).append(part)
    return (
        re.compile("^(?:" + "|".join(at_start) + ")") if at_start else None,
        re.compile("|".join(anywhere)) if anywhere else None,
    )


def _after_start_anchor(p: re.Pattern[str]) -> str | None:
    """The pattern after its leading `^` when that `^` anchors all of it (no `|` outside a group); else None."""
    text = p.pattern
    if not text.startswith("^") or p.flags & (re.MULTILINE | re.VERBOSE):
        return None
    depth, i = 0, 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = _class_end(text, i)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            return None
        i += 1
    return text[1:]


def _class_end(text: str, i: int) -> int:
    """The index after the `]` closing the class opened at ``text[i]`` (a `]` first in it is a member)."""
    i += 1
    if text[i : i + 1] == "^":
        i += 1
    if text[i : i + 1] == "]":
        i += 1
    while i < len(text) and text[i] != "]":
        i += 2 if text[i] == "\\" else 1
    return i + 1


def chrome_of(spec: AgentSpec, rows: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    """The agent's chrome on this capture: its patterns, and the rows of its input box when it draws one.

    A box found by its shape (`AgentSpec.composer_box`) adds one pattern
    matching exactly its rows' text on this capture, so every gate and
    check that reads chrome row by row sees the box, and the same side bar
    in the transcript stays transcript.
    """
    box = spec.composer_box
    found = box_rows(rows, box.side, box.edge) if box is not None else None
    if found is None:
        return spec.chrome
    texts = sorted({rows[i].rstrip() for i in range(found[0], found[1] + 1)})
    exact = re.compile("^(?:" + "|".join(re.escape(t) for t in texts) + r")\s*$")
    return (*spec.chrome, exact)


def is_chrome(row: str, chrome: Sequence[re.Pattern[str]]) -> bool:
    key = tuple(chrome)
    try:
        combined = _combined(key)
    except (TypeError, re.error):  # unhashable or patterns that cannot be joined
        combined = None
    if combined is not None:
        at_start, anywhere = combined
        return (at_start is not None and at_start.match(row) is not None) or (anywhere is not None and anywhere.search(row) is not None)
    return any(p.search(row) for p in chrome)


def strip_bottom_chrome(rows: Sequence[str], chrome: Sequence[re.Pattern[str]]) -> list[str]:
    """Drop the agent's UI (prompt box, footer, status) and blank rows from the bottom.

    The result is a prefix of ``rows``, so a detection's row indices stay valid.
    """
    end = len(rows)
    while end and (not rows[end - 1].strip() or is_chrome(rows[end - 1], chrome)):
        end -= 1
    return list(rows[:end])


def content_of(
    rows: Sequence[str], chrome: Sequence[re.Pattern[str]], volatile: Sequence[re.Pattern[str]] = ()
) -> tuple[str, ...]:
    """What the agent has printed, with every chrome row removed and its volatile spans masked.

    Compared between polls: a ticking clock or context counter in a footer,
    or a spinner beside a wall the agent waits out, must not make a stalled
    pane look busy.
    """
    kept = [masked(r, volatile) if volatile else r for r in rows if not is_chrome(r, chrome)]
    while kept and not kept[-1].strip():
        kept.pop()
    return tuple(kept)


# A footer notice that comes and goes (Claude Code's "tmux focus-events off
# · add 'set -g focus-events on' …", an update or tip line) takes a row from
# the transcript while it shows: everything above it moves up, and the top
# row leaves the screen, then comes back. Rows lost at the top, with nothing
# new at the bottom, are the same pane; new output always changes the bottom.
SCROLL_SLACK = 3


def same_content(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether two captures' contents (`content_of`) show the same pane, maybe scrolled by a transient row."""
    if a == b:
        return True
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    lost = len(long) - len(short)
    if not short or not 0 < lost <= SCROLL_SLACK:
        return False
    return tuple(long[lost:]) == tuple(short)


def compared_content(
    rows: Sequence[str], detection: Detection | None, chrome: Sequence[re.Pattern[str]], volatile: Sequence[re.Pattern[str]] = ()
) -> tuple[str, ...]:
    """What the idle and stability gates compare between polls: `content_of` the rows above the detector's chrome row.

    The agent's volatile spans are masked only while a wall is on screen
    (``detection``): a spinner that moves while the agent waits out its
    wall is not work, but the same spinner beside a request going through is.
    """
    return content_of(above_chrome(rows, detection), chrome, volatile if detection is not None else ())


def lines_after(rows: Sequence[str], detection: Detection, chrome: Sequence[re.Pattern[str]]) -> int | None:
    """Non-blank rows between the end of the banner block and the agent's chrome.

    None when the banner lies inside the chrome itself (typed into the prompt box).
    A block whose tail (a menu footer, say) reaches into the chrome ends the pane.
    """
    body = strip_bottom_chrome(above_chrome(rows, detection), chrome)
    if detection.first_row >= len(body):
        return None
    return sum(1 for r in body[detection.last_row + 1 :] if r.strip())


def above_chrome(rows: Sequence[str], detection: Detection | None) -> Sequence[str]:
    """The rows above the chrome the detector found (all rows when it found none).

    A detector that reads the screen's regions knows where the composer is;
    below it every row is UI, even one no chrome pattern knows (a user's
    statusLine, a footer that says "Usage limit reached").
    """
    if detection is None or detection.chrome_row is None:
        return rows
    return rows[: max(detection.chrome_row, 0)]


def is_anchored(rows: Sequence[str], detection: Detection, chrome: Sequence[re.Pattern[str]], tail_lines: int) -> bool:
    after = lines_after(rows, detection, chrome)
    return after is not None and after <= tail_lines - 1


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer for a pane over its recent captures."""

    agent: str
    hit: bool  # a banner in the last capture
    anchored: bool
    stable: bool
    detection: Detection | None
    reason: str

    @property
    def limited(self) -> bool:
        return self.hit and self.anchored and self.stable

    @property
    def reset_at(self) -> datetime | None:
        return self.detection.reset_at if self.detection else None


def judge(
    agent: str,
    captures: Sequence[Sequence[str]],
    detections: Sequence[Detection | None],
    chrome: Sequence[re.Pattern[str]],
    *,
    tail_lines: int,
    stability_polls: int,
    contents: Sequence[tuple[str, ...]] | None = None,
    volatile: Sequence[re.Pattern[str]] = (),
) -> Verdict:
    """Apply both gates to a pane's captures (oldest first) and their detections.

    ``contents`` may carry `compared_content` of each capture, already
    computed; else they are computed here, with the agent's ``volatile`` spans.
    """
    if not captures:
        return Verdict(agent, False, False, False, None, "no capture to judge")
    rows, found = captures[-1], detections[-1]
    if found is None:
        return Verdict(agent, False, False, False, None, f"no {agent} usage-limit banner in the last capture")

    after = lines_after(rows, found, chrome)
    anchored = after is not None and after <= tail_lines - 1

    if contents is None:
        recent_pairs = zip(captures[-stability_polls:], detections[-stability_polls:], strict=True)
        contents = [compared_content(c, d, chrome, volatile) for c, d in recent_pairs]
    recent = list(zip(contents[-stability_polls:], detections[-stability_polls:], strict=True))
    stable = len(recent) >= stability_polls and all(d is not None and d.banner == found.banner for _, d in recent)
    if stable:
        stable = all(same_content(c, recent[0][0]) for c, _ in recent[1:])

    if not anchored:
        if after is None:
            reason = "the banner text is inside the agent's prompt area, not printed by the agent"
        else:
            reason = (
                f"the banner is followed by {after} line{'s' if after != 1 else ''} of output "
                f"(at most {tail_lines - 1} allowed), so the agent is not stalled at it"
            )
    elif not stable:
        if len(captures) < stability_polls:
            reason = (
                f"the banner is at the end of the pane, but {len(captures)} capture{'s' if len(captures) != 1 else ''} "
                f"cannot show it is stable ({stability_polls} identical polls needed)"
            )
        else:
            reason = f"the pane changed within the last {stability_polls} polls, so the agent may still be working"
    else:
        when = found.reset_at.strftime("%Y-%m-%dT%H:%M:%SZ") if found.reset_at else None
        reason = (
            f"{agent} is at its usage limit: the banner ends the pane and stayed unchanged over "
            f"{stability_polls} polls; " + (f"it resets at {when}" if when else "the banner states no reset time")
        )
        if found.needs_human:
            reason += (
                f"; it is a {found.kind.rsplit('.', 1)[-1].replace('-', ' ')} wall that names no reset: "
                "a person has to act (billing, credits, an admin or the workspace's limits)"
            )
        elif found.offers_other_model and found.reset_at is None:
            reason += "; it offers another model and names no reset, so there is nothing to wait for"
    return Verdict(agent, True, anchored, stable, found, reason)
