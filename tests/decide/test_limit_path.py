"""Which path a limit takes (wait, or an automatic handoff tried once per wall), and what was tried surviving a restart."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from afd.decide import policy
from afd.decide.policy import LimitAction
from afd.record.store import Store

T0 = datetime(2026, 7, 13, 9, 0, tzinfo=timezone.utc)


def test_a_restart_between_trying_a_handoff_and_deciding_does_not_try_again(tmp_path):
    wall = policy.wall_key(T0, "pane,records")
    store = Store(tmp_path / "state.db")
    history = policy.observe(store.resume_history("s"), policy.Limit("claude.session-limit", "e", T0, None), now=T0)
    store.save_resume_history("s", policy.tried(history, wall, policy.HandoffTry.DECLINED))
    store.close()

    restarted = Store(tmp_path / "state.db")  # nothing in memory survives, the state file does
    history = restarted.resume_history("s")
    tried = policy.tried_for(history, wall)
    assert tried is policy.HandoffTry.DECLINED
    path = policy.limit_path(limit_action=LimitAction.HANDOFF, handoff_order=["codex"], state="limited", tried=tried)
    assert path is policy.Path.WAIT  # not a second try: the wait path has the wall
    # The pane looked at again (same wall) keeps what was tried.
    again = policy.observe(history, policy.Limit("claude.session-limit", "e2", T0, None), now=T0)
    assert policy.tried_for(again, wall) is policy.HandoffTry.DECLINED
    restarted.close()


@pytest.mark.parametrize(
    "action, order, state, tried, expected",
    [
        (LimitAction.WAIT, [], "limited", None, policy.Path.WAIT),
        (LimitAction.HANDOFF, ["codex"], "limited", None, policy.Path.HANDOFF),
        (LimitAction.HANDOFF, ["codex"], "limited", policy.HandoffTry.STARTED, policy.Path.NONE),
        (LimitAction.HANDOFF, ["codex"], "limited", policy.HandoffTry.DECLINED, policy.Path.WAIT),
        (LimitAction.HANDOFF, ["codex"], "exited", None, policy.Path.NONE),
        (LimitAction.HANDOFF, [], "limited", None, policy.Path.NONE),
    ],
    ids=["wait", "first-try", "started-owns-it", "declined-waits", "exited-not-handed-off", "no-order"],
)
def test_which_path_a_limit_takes(action, order, state, tried, expected):
    assert policy.limit_path(limit_action=action, handoff_order=order, state=state, tried=tried) is expected


def test_a_new_wall_is_tried_afresh():
    history = policy.tried(policy.ResumeHistory(), policy.wall_key(T0, "pane"), policy.HandoffTry.DECLINED)
    # Records confirming the wall a poll later make a new key: the handoff may go ahead then.
    assert policy.tried_for(history, policy.wall_key(T0, "pane,records")) is None
