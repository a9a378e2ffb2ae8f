"""Jobs: sessions that another session supervises. The pure rules.

A job is a session afd created for a supervisor session (`afd jobs create`
run from the supervisor's pane). Its results reach the supervisor as
*envelopes*, short texts typed into the supervisor's pane (afd/jobs/outbox.py routes them,
afd/jobs/delivery.py types them).
This module decides, from facts handed to it, who an envelope goes to, what
a handoff moves and why one is refused, and what the texts say. It does no
I/O: afd/jobs/book.py keeps the records, afd/jobs/requests.py asks.

The rules come from the local subagent handoff design: only the current
supervisor hands off its own top-level jobs; a job's descendants move with
it and keep their immediate parent; every envelope has exactly one current
recipient, the primary master while it is live, else the next live master,
without the primary changing.
"""

from __future__ import annotations

import textwrap
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from afd.record.types import Job, JobStatus

MAX_NOTE = 4000
HELP_POINTER = "You are an afd job: run `afd help agents` to learn how to report your result (afd jobs done/fail)."


FINAL = frozenset({JobStatus.DONE, JobStatus.FAILED})


# --- routing -------------------------------------------------------------------


def recipient(masters: Sequence[str], live: Collection[str]) -> str | None:
    """The one current recipient: the first live master in rank order (the primary first), or None."""
    return next((m for m in masters if m in live), None)


def masters_after_handoff(old: Sequence[str], source: str, target: str) -> list[str]:
    """The target becomes the primary; the former supervisor stays a master and is the first fallback."""
    rest = [m for m in old if m not in (source, target)]
    return [target, source, *rest]


# --- handoff: what moves, and why not ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: str


@dataclass(frozen=True, slots=True)
class Selection:
    top: tuple[str, ...]  # the selected top-level jobs
    moved: tuple[str, ...]  # those and every descendant, parents before children


def descendants(root: str, jobs: Mapping[str, Job]) -> list[str]:
    """Every job below `root` through parent links, parents first."""
    out, frontier = [], [root]
    while frontier:
        children = sorted(j.name for j in jobs.values() if j.parent in frontier and j.name not in out)
        out += children
        frontier = children
    return out


def select_handoff(
    jobs: Mapping[str, Job],
    caller: str,
    target: str,
    names: Sequence[str] | None,
    note: str | None,
    target_live: bool,
    target_agent_known: bool,
) -> Selection | Rejection:
    """Check a handoff before anything is written; `names` None or ["all"] means every top-level job of the caller."""
    if note is not None and len(note) > MAX_NOTE:
        return Rejection(f"the note is {len(note)} characters; at most {MAX_NOTE} are allowed")
    if target == caller:
        return Rejection(f"{caller} cannot hand its jobs to itself")
    if not target_live:
        return Rejection(f"{target!r} is not a live session; hand off to a session whose pane is open")
    if not target_agent_known:
        return Rejection(f"afd does not know which agent runs in {target!r}; hand off to a session running a known agent")
    own_top = sorted(j.name for j in jobs.values() if j.owner == caller and j.parent is None)
    if names is None or list(names) == ["all"]:
        top = own_top
    else:
        unknown = [n for n in names if n not in jobs]
        if unknown:
            return Rejection(f"no job named {', '.join(map(repr, unknown))}")
        others = [n for n in names if jobs[n].owner != caller]
        if others:
            n = others[0]
            return Rejection(f"job {n!r} is supervised by {jobs[n].owner}, not {caller}; only its supervisor can hand it off")
        nested = [n for n in names if jobs[n].parent is not None]
        if nested:
            n = nested[0]
            return Rejection(f"job {n!r} is under {jobs[n].parent!r}; select its top-level job, which takes it along")
        top = list(dict.fromkeys(names))
    if not top:
        return Rejection(f"{caller} has no jobs to hand off" if names is None or list(names) == ["all"] else "no jobs selected")
    if any(n == target for n in top) or any(target in descendants(n, jobs) for n in top):
        return Rejection(f"{target!r} is one of the jobs being handed off; a job cannot supervise itself")
    moved = []
    for n in top:
        moved += [n, *descendants(n, jobs)]
    return Selection(top=tuple(top), moved=tuple(dict.fromkeys(moved)))


# --- status from what afd sees -------------------------------------------------------


def observed_status(stored: JobStatus, session_state: str | None, creating: bool = False) -> JobStatus:
    """A job's status given its session's state (None: no session record); done and failed are the agent's word and stay.

    A job whose session is still being created has no record yet and is not gone.
    """
    if stored in FINAL or (session_state is None and creating):
        return stored
    if session_state is None or session_state == "gone":
        return JobStatus.GONE
    if session_state == "limited":
        return JobStatus.LIMITED
    return JobStatus.RUNNING


# --- texts ---------------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())


def stamp(nonce: str, text: str) -> str:
    """The typed form: one line, the nonce first so a look at the pane finds it."""
    return f"[afd {nonce}] {_one_line(text)}"


def done_text(job: Job, branch: str | None, summary: str | None) -> str:
    where = f" on branch {branch}" if branch else ""
    said = f": {summary}" if summary else ""
    return f"job {job.name} ({job.title}) is done{where}{said}"


def failed_text(job: Job, reason: str) -> str:
    return f"job {job.name} ({job.title}) failed: {reason}"


def limited_text(job: Job, reset_at: datetime | None) -> str:
    until = f" until {reset_at.strftime('%Y-%m-%d %H:%M UTC')}" if reset_at else " (no reset time shown)"
    return f"job {job.name} ({job.title}) is at its usage limit{until}"


def waking_text(source: str, moved: Sequence[Job], note: str | None) -> str:
    listed = "; ".join(f"{j.name} ({j.title}, {j.status.value})" for j in moved)
    said = f" Note from {source}: {note}" if note else ""
    return (f"you now supervise {len(moved)} job{'s' if len(moved) != 1 else ''} handed off by {source}: {listed}. "
            f"Their results come to you; see `afd jobs list`.{said}")


def confirmation_text(target: str, moved: Sequence[str]) -> str:
    return f"handed off {len(moved)} job{'s' if len(moved) != 1 else ''} to {target}: {', '.join(moved)}"


def brief_lines(supervised: Sequence[Job]) -> list[str]:
    """For the brief of an agent swapped into a supervisor session: the jobs it now supervises (they stay with the session)."""
    if not supervised:
        return []
    return [f"This session supervises {len(supervised)} job{'s' if len(supervised) != 1 else ''}; their results "
            "will be typed into this pane (see `afd jobs list` and `afd help agents`):",
            *(f"  {j.name}: {j.title} ({j.status.value})" for j in supervised)]


def agent_help(agents: Sequence[str], accounts: Sequence[str] = ()) -> str:
    """`afd help agents` for the agents and accounts this afd can start (the plugin manager's, the config's)."""
    names = ", ".join(sorted(agents)) or "(no agent is loaded: see `afd plugins`)"
    named = f"; or an account: {', '.join(sorted(accounts))}" if accounts else ""
    return AGENT_HELP.format(agents=textwrap.fill(f"AGENT is one of: {names}{named}.", width=72,
                                                  initial_indent="      ", subsequent_indent="      "))


AGENT_HELP = """\
afd jobs: for agents running in an afd session (a tmux pane afd watches)

A job is a helper session afd starts for you: its own agent, its own git
branch (afd/NAME) and worktree of your repository. You supervise the jobs you
create; their results come to you as envelopes, one line typed into your
pane when you are idle, starting with a tag like `[afd 3f9a1c]`.

  afd jobs create NAME --agent AGENT --prompt TEXT [--title T] [--parent JOB]
      start a job; --parent groups it under another of your jobs.
{agents}
  afd jobs list [--json]
      your jobs: name, title, status (running, limited, done, failed, gone),
      owner, parent.
  afd jobs done [--summary TEXT]
      run this in a job when its work is finished and committed; your
      supervisor gets "job NAME is done on branch afd/NAME: TEXT".
  afd jobs fail --reason TEXT
      run this in a job that cannot finish; your supervisor gets the reason.
  afd jobs handoff --to SESSION [--jobs all|NAME...] [--note TEXT]
      give your jobs (with everything under them) to another session, which
      gets one message listing them; you stay a fallback recipient.

Envelopes: "job NAME is done ...", "job NAME failed: ...", "job NAME is at
its usage limit until ...", "you now supervise N jobs handed off by ...".
Run these commands from your own pane: afd checks that the caller runs in it.
"""
