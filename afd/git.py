"""Everything afd asks git: repository checks, branches and worktrees for new sessions."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


class GitError(Exception):
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
    removed, failed = [], []
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
