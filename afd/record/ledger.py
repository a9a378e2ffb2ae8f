"""A session's handoff ledger as a reviewer reads it: who wrote which commit range. Pure.

afd writes no commit and no trailer; what it can state exactly is the HEAD
SHA at each swap (seed §6). So "claude wrote base..sha1, codex wrote
sha1..HEAD" is not a claim, it is a `git log` range anyone can check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timezone, tzinfo

from afd.display.clock import with_offset
from afd.display.text import neutral
from afd.record.types import LedgerEntry


@dataclass(frozen=True, slots=True)
class Stretch:
    agent: str
    start: str | None  # None: from wherever the branch began (no base was recorded)
    end: str  # a SHA, or "HEAD" for the agent working now
    handed_to: str | None
    reason: str | None
    automatic: bool | None
    account: str | None = None  # the account it ran on (None: its default, or recorded before accounts)
    handed_to_account: str | None = None

    @property
    def range(self) -> str:
        return f"{self.start}..{self.end}" if self.start else self.end


def stretches(entries: Sequence[LedgerEntry]) -> list[Stretch]:
    """One stretch per agent turn on the branch, oldest first; the last one runs to HEAD."""
    if not entries:
        return []
    out, start = [], entries[0].base_sha
    for e in entries:
        out.append(Stretch(e.from_agent, start, e.head_sha, e.to_agent, e.reason, e.automatic, e.from_account, e.to_account))
        start = e.head_sha
    out.append(Stretch(entries[-1].to_agent, start, "HEAD", None, None, None, entries[-1].to_account))
    return out


def who(agent: str | None, account: str | None) -> str:
    """An agent as a person reads it: `claude`, or `claude (claude-work)` on an account other than its default."""
    if agent is None:
        return "unknown"
    return f"{agent} ({account})" if account and account != agent else agent


def _for_review(agent: str | None, account: str | None) -> str:
    """`who` for a pull request: an account no one named (its name is a local path) is left out."""
    return who(agent, None if account and "@" in account else account)


def _iso(at) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def as_json(session: str, entries: Sequence[LedgerEntry], head: str | None) -> dict:
    return {
        "session": session,
        "head": head,
        "entries": [
            {
                "from": e.from_agent,
                "from_conversation": e.from_conversation,
                "to": e.to_agent,
                "at": _iso(e.at),
                "head_sha": e.head_sha,
                "base_sha": e.base_sha,
                "reason": e.reason,
                "automatic": e.automatic,
                "from_account": e.from_account,
                "to_account": e.to_account,
            }
            for e in entries
        ],
        "ranges": [{"agent": s.agent, "account": s.account, "range": s.range, "handed_to": s.handed_to,
                    "handed_to_account": s.handed_to_account} for s in stretches(entries)],
    }


def _short(rev: str | None) -> str:
    return rev[:12] if rev and rev != "HEAD" else (rev or "")


def as_markdown(session: str, entries: Sequence[LedgerEntry], head: str | None, zone: tzinfo = timezone.utc) -> str:
    """Ready to paste into a pull-request description; times in `zone` with their offset (`09:30 +01:00`)."""
    if not entries:
        return f"No agent handoffs were recorded for session `{neutral(session)}`: one agent wrote this branch.\n"
    lines = [
        "### Agents on this branch",
        "",
        "More than one coding agent worked on this branch. The handoff points below are the branch's",
        "HEAD at each swap, as recorded by afd; each range can be checked with `git log --oneline RANGE`.",
        "",
        "| commits | written by | then |",
        "|---|---|---|",
    ]
    for s in stretches(entries):
        rng = f"`{_short(s.start)}..{_short(s.end)}`" if s.start else f"up to `{_short(s.end)}`"
        if s.end == "HEAD" and head:
            rng += f" (HEAD is `{_short(head)}`)"
        if s.handed_to:
            how = "automatically" if s.automatic else "by the user"
            then = f"handed to {_for_review(s.handed_to, s.handed_to_account)} {how} ({s.reason})"
        else:
            then = "working now"
        lines.append(neutral(f"| {rng} | {_for_review(s.agent, s.account)} | {then} |"))
    lines += ["", "Handoffs:", ""]
    for e in entries:
        how = "automatic" if e.automatic else "manual"
        lines.append(neutral(f"- {with_offset(e.at, zone)}: {_for_review(e.from_agent, e.from_account)} → "
                             f"{_for_review(e.to_agent, e.to_account)} at `{_short(e.head_sha)}` ({e.reason}, {how})"))
    return "\n".join(lines) + "\n"
