"""Everything afd asks git: repository checks, branches and worktrees for new sessions."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from afd.errors import AfdError


class GitError(AfdError):
    """A git step failed; the message names the repository and what to fix."""


def _git(repo: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=timeout
        )
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"{repo}: git {' '.join(args)} did not answer within {timeout:.0f}s") from None


def repo_root(path: Path) -> Path:
    done = _git(path, "rev-parse", "--show-toplevel")
    if done.returncode != 0:
        raise GitError(f"{path}: not a git repository")
    return Path(done.stdout.strip())


def head_sha(path: Path) -> str | None:
    done = _git(path, "rev-parse", "--verify", "-q", "HEAD")
    return done.stdout.strip() if done.returncode == 0 else None


def head_of(worktree: str | None) -> str | None:
    """A session's worktree's HEAD for a ledger's "working now" range; None when it cannot be read."""
    if not worktree:
        return None
    try:
        return head_sha(Path(worktree))
    except GitError:
        return None


def current_branch(path: Path) -> str | None:
    done = _git(path, "symbolic-ref", "-q", "--short", "HEAD")
    return done.stdout.strip() if done.returncode == 0 else None


def branch_of(cwd: str) -> str | None:
    """The branch checked out where a pane sits, or None (no cwd, not a repository, detached)."""
    if not cwd:
        return None
    try:
        return current_branch(Path(cwd))
    except GitError:
        return None


def branch_exists(repo: Path, branch: str) -> bool:
    return _git(repo, "show-ref", "--verify", "-q", f"refs/heads/{branch}").returncode == 0


@dataclass(frozen=True, slots=True)
class Worktree:
    path: Path
    branch: str
    base_sha: str


def check_new_worktree(repo: Path, branch: str, path: Path, base: str | None) -> tuple[Path, str]:
    """Everything that could stop `add_worktree`, checked before anything changes.

    Returns the repository root and the base commit.
    """
    root = repo_root(repo)
    ref = base or "HEAD"
    done = _git(root, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}")
    if done.returncode != 0:
        raise GitError(f"{root}: --base {ref!r} is not a commit in this repository")
    if _git(root, "check-ref-format", "--branch", branch).returncode != 0:
        raise GitError(f"{branch!r} is not a valid branch name")
    if branch_exists(root, branch):
        raise GitError(f"{root}: branch {branch!r} already exists; pick another session name")
    if path.exists():
        raise GitError(f"{path} already exists; remove it or pick another session name")
    return root, done.stdout.strip()


def add_worktree(repo: Path, branch: str, path: Path, base: str | None = None) -> Worktree:
    root, base_sha = check_new_worktree(repo, branch, path, base)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = _git(root, "worktree", "add", "-q", "-b", branch, str(path), base_sha, timeout=120)
    if done.returncode != 0:
        raise GitError(f"{root}: git worktree add failed: {done.stderr.strip()}")
    return Worktree(path=path, branch=branch, base_sha=base_sha)


def remove_worktree(repo: Path, path: Path, branch: str) -> str:
    """Undo `add_worktree` for a session that never started; says what was removed."""
    done = _git(repo, "worktree", "remove", "--force", str(path), timeout=60)
    removed = done.returncode == 0
    deleted = _git(repo, "branch", "-D", branch).returncode == 0
    if removed and deleted:
        return f"removed the new worktree {path} and branch {branch}"
    return f"could not fully remove the new worktree {path} and branch {branch}; remove them by hand"


def is_untouched(repo: Path, path: Path, branch: str, base_sha: str | None) -> bool:
    """Whether a new session's worktree holds nothing to lose: branch still at its base, no changes.

    Anything that cannot be confirmed counts as touched, so a cleanup never
    removes work it did not look at.
    """
    if base_sha is None:
        return False
    try:
        if branch_exists(repo, branch):
            done = _git(repo, "rev-parse", "--verify", "-q", f"refs/heads/{branch}")
            if done.returncode != 0 or done.stdout.strip() != base_sha:
                return False
        if path.exists():
            done = _git(path, "status", "--porcelain", "--untracked-files=all")
            if done.returncode != 0 or done.stdout.strip():
                return False
    except GitError:
        return False
    return True


def remove_new_worktree(repo: Path, path: Path | None, branch: str | None) -> str:
    """Remove what a session that never started left: its worktree and/or its branch; says what was removed."""
    removed: list[str] = []
    failed: list[str] = []
    if path is not None:
        done = _git(repo, "worktree", "remove", "--force", str(path), timeout=60)
        (removed if done.returncode == 0 else failed).append(f"worktree {path}")
        _git(repo, "worktree", "prune")
    if branch is not None:
        done = _git(repo, "branch", "-D", branch)
        (removed if done.returncode == 0 else failed).append(f"branch {branch}")
    text = f"removed {' and '.join(removed)}" if removed else "removed nothing"
    return text + (f"; could not remove {' and '.join(failed)}: remove by hand" if failed else "")


def commit_of(repo: Path, ref: str) -> str | None:
    """The commit `ref` names in `repo`, or None."""
    done = _git(repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}")
    return done.stdout.strip() if done.returncode == 0 else None


# --- facts at a handoff ---------------------------------------------------------


def is_work_tree(path: Path) -> bool:
    try:
        done = _git(path, "rev-parse", "--is-inside-work-tree")
    except GitError:
        return False
    return done.returncode == 0 and done.stdout.strip() == "true"


def default_branch(path: Path) -> str | None:
    """The repository's default branch: origin's HEAD if it has one, else `main` or `master`."""
    done = _git(path, "symbolic-ref", "-q", "--short", "refs/remotes/origin/HEAD")
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip()
    for name in ("main", "master", "trunk"):
        if branch_exists(path, name):
            return name
    return None


def merge_base(path: Path, a: str, b: str) -> str | None:
    done = _git(path, "merge-base", a, b)
    return done.stdout.strip() if done.returncode == 0 else None


def count_commits(path: Path, rev_range: str) -> int:
    done = _git(path, "rev-list", "--count", rev_range)
    return int(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip().isdigit() else 0


def dirty_files(path: Path) -> int:
    """Files with uncommitted changes, tracked or untracked (what `git status` would list)."""
    done = _git(path, "status", "--porcelain", "-z", "--untracked-files=all")
    if done.returncode != 0:
        raise GitError(f"{path}: git status failed: {done.stderr.strip()}")
    # -z: entries end in NUL; a rename carries its old path as one more field.
    entries, fields = 0, done.stdout.split("\0")
    i = 0
    while i < len(fields):
        field = fields[i]
        if field:
            entries += 1
            if field[:1] in "RC" or field[1:2] in "RC":
                i += 1
        i += 1
    return entries


def is_ancestor(path: Path, older: str, newer: str) -> bool:
    return _git(path, "merge-base", "--is-ancestor", older, newer).returncode == 0


def handoff_facts(path: Path, recorded_base: str | None = None):
    """Branch, HEAD, base and dirty-file count of a worktree at a swap (afd.record.types.GitFacts).

    The base is the session's recorded one when it is still an ancestor of
    HEAD, else the merge-base with the default branch; on the default branch
    itself (or with none) the base is HEAD, and the range is empty.
    """
    from afd.record.types import GitFacts

    head = head_sha(path)
    if head is None:
        raise GitError(f"{path}: the branch has no commits yet")
    branch = current_branch(path)
    base, label = None, None
    if recorded_base and is_ancestor(path, recorded_base, head):
        base, label = recorded_base, recorded_base[:12]
    if base is None:
        default = default_branch(path)
        if default and default != branch:
            base = merge_base(path, default, head)
            label = default
    if base is None:
        base, label = head, head[:12]
    if label != base[:12] and label is not None:
        label = f"{label} ({base[:12]})"
    return GitFacts(
        branch=branch,
        head_sha=head,
        base_sha=base,
        base_label=label or base[:12],
        commits=count_commits(path, f"{base}..{head}"),
        dirty_files=dirty_files(path),
    )
