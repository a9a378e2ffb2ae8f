"""An account as a person reads it: their name for it, or its agent and a short directory."""

from __future__ import annotations

import pytest

from afd.judge.accountlabel import label

HOME = "/home/ana"


@pytest.mark.parametrize(
    "name, shown",
    [
        pytest.param("claude", "claude", id="default-account"),
        pytest.param("claude-work-for-the-platform-team", "claude-work-for-the-platform-team", id="configured"),
        pytest.param("claude@/home/ana/.claude-work", "claude · ~/.claude-work", id="under-home"),
        pytest.param("claude@/home/ana", "claude · ~", id="home-itself"),
        pytest.param("claude@/home/anabel/.claude", "claude · /home/…/.claude", id="a-home-that-only-starts-alike"),
        pytest.param("codex@/tmp/afd-demo-73e8orjb/codex", "codex · /tmp/…/codex", id="temporary-directory"),
        pytest.param("codex@/srv/codex", "codex · /srv/codex", id="short-path-whole"),
        pytest.param("gemini@GEMINI_DIR=x,OTHER=y", "gemini · GEMINI_DIR=x,OTHER=y", id="variables"),
        pytest.param(None, None, id="no-agent"),
        pytest.param("unknown", "unknown", id="unknown"),
    ],
)
def test_label(name, shown):
    assert label(name, HOME) == shown


def test_a_temporary_path_is_never_shown_whole():
    raw = "claude@/tmp/pytest-of-root/pytest-30/popen-gw1/test_x0/home/.claude-x"
    assert "pytest-30" not in label(raw, "/home/ana")
