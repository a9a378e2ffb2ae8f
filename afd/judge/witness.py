"""Two witnesses of a usage limit — the pane and the agent's own records — and how they combine (pure).

The pane is the only signal every agent offers; a banner on screen can still
be text the agent printed, quoted or left behind (seed §2.1). Claude Code
and Codex also write their rejection to local files. When both say limited,
the limit is beyond reasonable doubt; when the records say the conversation
went on past the banner, the banner was not a wall, whatever the pane
shows. Records that say nothing leave the pane's judgement as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from afd.model import WitnessState, WitnessVerdict
from afd.record.types import Witnesses


@dataclass(frozen=True, slots=True)
class Combined:
    limited: bool
    witnesses: Witnesses | None  # None: neither witness says limited
    reset_at: datetime | None
    why: str


def combine(
    pane_limited: bool, pane_reset: datetime | None, record: WitnessVerdict | None, pane_idle: bool
) -> Combined:
    """The session's limit from the pane's gates and the record's verdict (None: no witness for the agent)."""
    state = record.state if record is not None else WitnessState.UNKNOWN
    if pane_limited:
        if record is not None and state is WitnessState.LIMITED:
            # The record's reset is the agent's own; the pane's is read from text.
            reset = record.reset_at if record.reset_at is not None else pane_reset
            return Combined(True, Witnesses.BOTH, reset, "the pane's banner and the agent's records agree")
        if record is not None and state is WitnessState.NOT_LIMITED:
            return Combined(False, Witnesses.DISPUTED, None, f"the pane shows a limit banner, but {record.why}")
        return Combined(True, Witnesses.PANE, pane_reset, "the pane's banner (the agent's records say nothing either way)")
    if record is not None and state is WitnessState.LIMITED and pane_idle:
        # A spinner still running means the agent is not stalled yet, whatever its file says.
        return Combined(True, Witnesses.RECORD, record.reset_at, f"no banner on the idle pane, but {record.why}")
    return Combined(False, None, None, "no witness says limited")


def handoff_witnessed(witnesses: Witnesses | None, agent_has_witness: bool, requires_witness: bool) -> bool:
    """Whether a limit is witnessed well enough for an automatic handoff.

    With ``handoff_requires_witness`` on and a witness plugin for the agent,
    both witnesses must agree; otherwise any limited verdict will do.
    """
    if witnesses not in (Witnesses.PANE, Witnesses.RECORD, Witnesses.BOTH):
        return False
    if requires_witness and agent_has_witness:
        return witnesses is Witnesses.BOTH
    return True
