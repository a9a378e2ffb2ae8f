"""The handoff brief: its exact text, against golden files, and the git facts it is built from."""

from __future__ import annotations

from pathlib import Path

import pytest

from afd.decide.brief import BriefInput, build_brief
from afd.record.types import GitFacts
from afd.world import git as afd_git
from harness import git

GOLDEN = Path(__file__).parent.parent / "data" / "brief"
BASE = "1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c"
HEAD = "9a8b7c6d5e4f30219a8b7c6d5e4f30219a8b7c6d"
SINCE = "5555aaaa5555aaaa5555aaaa5555aaaa5555aaaa"
FACTS = GitFacts(branch="afd/fix-auth", head_sha=HEAD, base_sha=BASE, base_label="main (1f2e3d4c5b6a)", commits=4, dirty_files=2)

CASES = {
    "limit": BriefInput("claude", "usage limit", "Fix the login test.\nKeep the API stable.", FACTS),
    "manual-extra": BriefInput(
        "codex", "manual", "Make the parser accept tabs.",
        GitFacts(branch="feature", head_sha=HEAD, base_sha=BASE, base_label="main (1f2e3d4c5b6a)", commits=1, dirty_files=0),
        extra="Run `make test` before every commit.",
    ),
    "hand-back": BriefInput("claude", "usage limit", "Fix the login test.", FACTS, since_sha=SINCE, since_commits=1),
    "supervisor-with-jobs": BriefInput(
        "claude", "usage limit", "Ship the release.", FACTS,
        jobs=(
            "This session supervises 2 jobs; their results will be typed into this pane "
            "(see `afd jobs list` and `afd help agents`):",
            "  docs: Write the release notes (running)",
            "  tests: Fix the flaky test (done)",
        ),
    ),
    "detached-nothing-yet": BriefInput(
        "codex", "usage limit", "Write the docs.",
        GitFacts(branch=None, head_sha=HEAD, base_sha=HEAD, base_label=HEAD[:12], commits=0, dirty_files=1),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_brief_text_matches_its_golden_file(name):
    assert build_brief(CASES[name]) == (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")


def test_brief_never_summarises_and_names_the_exact_ranges():
    text = build_brief(CASES["limit"])
    assert f"git log --oneline {BASE}..HEAD" in text
    assert f"git diff {BASE}...HEAD" in text
    assert "4 commits" in text and "2 uncommitted files" in text
    assert "Fix the login test.\nKeep the API stable." in text
    assert "Do not start over, and do not revert work you did not write." in text


def test_handoff_facts_of_a_worktree(git_repo, worktree):
    path = worktree("feature")
    base = git(path, "rev-parse", "HEAD")
    for i in range(2):
        (path / f"w{i}.txt").write_text("x\n")
        git(path, "add", f"w{i}.txt")
        git(path, "commit", "-q", "-m", f"w{i}")
    (path / "untracked.txt").write_text("u\n")
    (path / "file1.txt").write_text("changed\n")
    facts = afd_git.handoff_facts(path)
    assert (facts.branch, facts.base_sha, facts.commits, facts.dirty_files) == ("feature", base, 2, 2)
    assert facts.head_sha == git(path, "rev-parse", "HEAD")
    assert facts.base_label == f"main ({base[:12]})"
    # A recorded base that is still an ancestor wins over the merge-base.
    first = git(path, "rev-parse", "HEAD~1")
    assert afd_git.handoff_facts(path, recorded_base=first).commits == 1
    # One that is not (history rewritten) is ignored.
    assert afd_git.handoff_facts(path, recorded_base="0" * 40).base_sha == base
