"""The handoff brief: the first prompt an incoming agent is given. Pure.

It carries only what afd knows for a fact: the stored goal, that a handoff
happened and why, and where the work already done can be read (exact
`git log` / `git diff` ranges). afd never summarises the previous agent's
work: a summary would be afd's guess about work it did not do, handed to the
new agent as fact (DESIGN rule 6); the diff is the ground truth, and the
agent can read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from afd.record.types import GitFacts


@dataclass(frozen=True, slots=True)
class BriefInput:
    previous_agent: str
    reason: str  # "usage limit" | "manual" | "approaching limit (96 % of the 5-hour window, resets 15:02)"
    goal: str  # the mission, or the user's --brief (which replaces it)
    git: GitFacts
    extra: str = ""  # handoff_brief from the config, appended as written
    # Hand-back: the incoming agent worked here before, up to this SHA.
    since_sha: str | None = None
    since_commits: int = 0  # commits in since_sha..HEAD
    # A supervisor session keeps its jobs across a swap: the rows that list them.
    jobs: tuple[str, ...] = ()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _work_line(commits: int, dirty: int, since: str) -> str:
    parts = _plural(commits, "commit") + f" since {since}"
    if dirty:
        return f"{parts}, plus {_plural(dirty, 'uncommitted file')} in the working tree."
    return f"{parts}, and no uncommitted changes."


def _why(reason: str) -> str:
    if reason == "usage limit":
        return "stopped because it hit its provider usage limit"
    if reason.startswith("approaching limit"):
        return f"was stopped between turns before it hit its provider usage limit, {reason}"
    return "was stopped because the user handed the work over"


def build_brief(data: BriefInput) -> str:
    """The brief text; `since_sha` set makes it the hand-back variant."""
    g = data.git
    on = f" ({g.branch})" if g.branch else " (detached HEAD)"
    lines: list[str] = []
    if data.since_sha is None:
        lines += [
            "You are continuing work already in progress in this worktree.",
            "",
            f"A previous agent ({data.previous_agent}) was working on it and {_why(data.reason)}.",
            "Its conversation is not available to you.",
            "",
            "The goal:",
            data.goal.strip(),
            "",
            f"Work already done on this branch{on}:",
            "  " + _work_line(g.commits, g.dirty_files, g.base_label),
            "  Review it before you start:",
            f"    git log --oneline {g.base_sha}..HEAD",
            f"    git diff {g.base_sha}...HEAD",
        ]
    else:
        lines += [
            "You are picking up again the work you did earlier in this worktree.",
            "",
            f"Since your last turn here, another agent ({data.previous_agent}) worked on it, and it "
            f"{_why(data.reason)}.",
            "Its conversation is not available to you; yours is.",
            "",
            "The goal:",
            data.goal.strip(),
            "",
            f"Work done on this branch{on} since your last turn (at {data.since_sha[:12]}):",
            "  " + _work_line(data.since_commits, g.dirty_files, data.since_sha[:12]),
            "  Review it before you go on:",
            f"    git log --oneline {data.since_sha}..HEAD",
            f"    git diff {data.since_sha}...HEAD",
        ]
    lines += ["", "Continue from that state. Do not start over, and do not revert work you did not write."]
    if data.jobs:
        lines += ["", *data.jobs]
    if data.extra.strip():
        lines += ["", data.extra.strip()]
    return "\n".join(lines) + "\n"
