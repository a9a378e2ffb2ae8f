"""The real CLIs' current wall shapes, drawn by the fake agents in real tmux panes, through `afd detect`."""

from __future__ import annotations

import pytest
from test_fake_agents import afd_detect, limited_at, settled_captures

# (agent, family, limited, reset_at, needs_human); judged at 2026-07-13T09:00Z, TZ=UTC
CASES = {
    "claude-armed-wall-with-footer": ("claude", "claude.armed", True, "2026-07-13T21:42:00Z", False),
    "claude-spend-cap": ("claude", "claude.spend-cap", True, None, True),
    "claude-api-key-429-is-not-a-limit": ("claude", "claude.api-429", False, None, False),
    "codex-modal-after-the-banner": ("codex", "codex.modal", True, "2026-07-13T21:29:00Z", False),
    "codex-out-of-credits": ("codex", "codex.spend-cap", True, None, True),
    "codex-quota-exceeded": ("codex", "codex.billing", True, None, True),
    "codex-rate-limit-exceeded-is-not-a-limit": ("codex", "codex.rate-limit-exceeded", False, None, False),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_current_wall_shape_in_a_real_pane(tmux_server, git_repo, tmp_path, case):
    agent, family_id, limited, reset_at, needs_human = CASES[case]
    fake = limited_at(agent, family_id, {}, "modern", tmux_server, git_repo)
    rows = fake.wait_for_event("limit")["rows"]
    captures = settled_captures(fake, rows[-1].strip())
    if family_id == "claude.armed":
        assert "Continuing automatically at 9:42pm · Esc to cancel" in captures[-1]  # the footer below the composer
    got = afd_detect(agent, captures, tmp_path)
    assert (got["limited"], got["reset_at"], got["needs_human"]) == (limited, reset_at, needs_human), got
