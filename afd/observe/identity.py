"""Which agent runs in a pane, and the prompt it was started with.

`identify` and the mission readers are pure: process facts and AgentSpecs
in, an answer out. `pane_processes` is the thin shell that gathers the
facts with psutil.

Identity has three values. KNOWN names the agent. UNKNOWN means something
other than a shell is in the foreground and matches no spec: a wrapper
script not named after its agent, an interpreter running something we
cannot read, or simply `vim` or `less` -- it might be an agent, so it is
never treated as "no agent", and it never authorises anything: only KNOWN
panes are adopted automatically, and the user can vouch for the rest.
NONE means only a shell (or nothing at all) is running.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import psutil

from afd.model import AgentSpec, Identity, IdentityKind, PromptDelivery


@dataclass(frozen=True, slots=True)
class ProcessFact:
    pid: int
    ppid: int
    name: str  # the kernel's comm: 15 characters at most
    exe: str  # "" when unreadable
    argv: tuple[str, ...]
    create_time: float
    status: str  # psutil status; "zombie" and "dead" count as gone
    pgid: int = 0
    foreground: bool = False  # in the terminal's foreground process group

    @property
    def alive(self) -> bool:
        return self.status not in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)


DEFAULT_SHELLS = frozenset({"sh", "bash", "zsh", "fish", "dash", "ksh", "mksh", "tcsh", "csh", "ash", "nu", "elvish"})

_PYTHON = re.compile(r"python(\d+(\.\d+)?)?|pypy\d*")
_NODE_LIKE = frozenset({"node", "nodejs", "bun", "deno"})
_NO_OVERRIDES: Mapping[str, Sequence[str]] = MappingProxyType({})
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=.*")


# --- facts ---------------------------------------------------------------


def _foreground_pgid(pid: int) -> int | None:
    """Field 8 (tpgid) of /proc/<pid>/stat: the process group that owns the terminal."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", errors="replace")
    except OSError:
        return None
    # comm (field 2) may hold spaces and parentheses; fields resume after the last ")".
    fields = stat.rpartition(")")[2].split()
    try:
        tpgid = int(fields[5])
    except (IndexError, ValueError):
        return None
    return tpgid if tpgid > 0 else None


def _fact(proc: psutil.Process, tpgid: int | None) -> ProcessFact | None:
    try:
        with proc.oneshot():
            name = proc.name()
            ppid = proc.ppid()
            create_time = proc.create_time()
            status = proc.status()
            try:
                argv = tuple(proc.cmdline())
            except psutil.AccessDenied:
                argv = ()
            try:
                exe = proc.exe()
            except psutil.AccessDenied:
                exe = ""
        pgid = os.getpgid(proc.pid)
    except (psutil.NoSuchProcess, ProcessLookupError):
        return None  # exited while we looked: it is simply not there
    except psutil.AccessDenied:
        return None
    return ProcessFact(proc.pid, ppid, name, exe, argv, create_time, status, pgid, tpgid is not None and pgid == tpgid)


def process_tree() -> dict[int, list[int]]:
    """Every process's children, read once: a poll over many panes walks /proc once, not per pane."""
    children: dict[int, list[int]] = {}
    for proc in psutil.process_iter(["ppid"]):
        ppid = proc.info.get("ppid")
        if ppid is not None:
            children.setdefault(ppid, []).append(proc.pid)
    return children


def _descendants(root: int, tree: Mapping[int, list[int]]) -> list[int]:
    found, stack = [], list(tree.get(root, ()))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(tree.get(pid, ()))
    return found


def pane_processes(pane_pid: int, tree: Mapping[int, list[int]] | None = None) -> list[ProcessFact]:
    """The pane's process and all its descendants, as they are now; [] when the pane process is gone.

    Processes come and go while we look; one that vanishes is left out,
    never an error. ``tree`` (from `process_tree`) saves a /proc walk per pane.
    """
    try:
        root = psutil.Process(pane_pid)
        procs = [root, *root.children(recursive=True)] if tree is None else [root]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []
    for pid in _descendants(pane_pid, tree) if tree is not None else ():
        try:
            procs.append(psutil.Process(pid))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    tpgid = _foreground_pgid(pane_pid)
    return [fact for fact in (_fact(p, tpgid) for p in procs) if fact is not None]


# --- matching --------------------------------------------------------------


def _base(path: str) -> str:
    return os.path.basename(path.rstrip("/"))


def _words(argv: Sequence[str]) -> list[str]:
    # A Node CLI that rewrote process.title shows as one argv element,
    # possibly with spaces ("claude" or "node cli.js"); read it as words.
    words = argv[0].split() if len(argv) == 1 and " " in argv[0].strip() else list(argv)
    # `#!/usr/bin/env node` runs `env node SCRIPT` for a moment before env
    # execs; what env runs is what counts.
    if words and _base(words[0]) == "env":
        words = words[1:]
        while words and (words[0].startswith("-") or _ASSIGNMENT.fullmatch(words[0])):
            words = words[1:]
    return words


def _is_shell_name(name: str, shells: frozenset[str]) -> bool:
    return name.lstrip("-") in shells  # "-bash": a login shell


def _script_index(argv: Sequence[str], shells: frozenset[str]) -> int | None:
    """Index of the script an interpreter (or a shell) runs, or None when it runs none we can name."""
    head = _base(argv[0]).lstrip("-")
    python, node, shell = bool(_PYTHON.fullmatch(head)), head in _NODE_LIKE, head in shells
    if not (python or node or shell):
        return None
    i = 2 if node and len(argv) > 1 and argv[1] == "run" else 1  # `deno run main.ts`, `bun run cli.js`
    while i < len(argv):
        arg = argv[i]
        if (
            (shell and re.fullmatch(r"-\w*c\w*", arg))
            or (python and arg == "-c")
            or (node and arg in ("-e", "--eval", "-p", "--print"))
        ):
            return None  # code on the command line, not a script (`sh -c ...`, `bash -lc ...`)
        if python and arg == "-m":
            return i + 1 if i + 1 < len(argv) else None  # `python -m pkg`: the module is the script
        if arg == "--":
            return i + 1 if i + 1 < len(argv) else None
        if arg == "-":
            return None  # the script comes on stdin
        if not arg.startswith("-"):
            return i
        if (
            (python and arg in ("-W", "-X"))
            or (node and arg in ("-r", "--require", "--import", "--loader"))
            # an interactive shell's startup file is not a script it runs
            or (shell and arg in ("--rcfile", "--init-file", "-o", "-O", "+O"))
        ):
            i += 1  # the flag's value
        i += 1
    return None


def _script_of(words: Sequence[str], shells: frozenset[str]) -> int | None:
    """Like `_script_index`, but through shims: a script named after an interpreter is one.

    pyenv, asdf and nvm install `python3` or `node` as shell scripts, so
    for a moment (or for good) the process is `bash …/shims/python3 SCRIPT`.
    """
    offset, found = 0, None
    for _ in range(4):
        script = _script_index(words[offset:], shells)
        if script is None:
            return found
        found = offset + script
        head = _base(words[found])
        if not (_PYTHON.fullmatch(head) or head in _NODE_LIKE):
            return found
        offset = found
    return found


def _names(proc: ProcessFact, shells: frozenset[str]) -> set[str]:
    """Every name this process may go by: argv[0], the script an interpreter runs, exe, comm."""
    names = {proc.name}
    if proc.exe:
        names.add(_base(proc.exe))
    words = _words(proc.argv)
    if words:
        names.add(_base(words[0]).lstrip("-"))
        script = _script_of(words, shells)
        if script is not None:
            names.add(_base(words[script]))
    names.discard("")
    return names


def _is_bare_shell(proc: ProcessFact, shells: frozenset[str]) -> bool:
    words = _words(proc.argv)
    if not words:
        return _is_shell_name(proc.name, shells)
    # A shell running a script file is that script; a shell running
    # `-c CODE` or nothing is just a shell (its children are the work).
    return _is_shell_name(_base(words[0]), shells) and _script_of(words, shells) is None


def _matches(proc: ProcessFact, names: set[str], spec: AgentSpec) -> str | None:
    """Why `proc` is `spec`'s agent by the plugin's own matchers, or None."""
    for exe in (*spec.executables, *(_base(c) for c in spec.command[:1])):
        if exe in names:
            return f"{exe!r} in its argv or executable"
    joined = " ".join(proc.argv)
    for pattern in spec.argv_patterns:
        if pattern.search(joined):
            return f"argv matches {pattern.pattern!r}"
    return None


def _override_key(command: Sequence[str], shells: frozenset[str]) -> str | None:
    """The name a configured command's process goes by, or None when it is too generic to claim.

    `["node", "/opt/x/cli.js"]` is known by its script; a bare `node` or
    `bash` would claim every Node program or shell, so it claims nothing.
    """
    words = _words(command)
    if not words:
        return None
    script = _script_index(words, shells)
    key = _base(words[script] if script is not None else words[0]).lstrip("-")
    generic = key in shells or key in _NODE_LIKE or _PYTHON.fullmatch(key)
    return None if generic or not key else key


def _depths(processes: Sequence[ProcessFact]) -> dict[int, int]:
    parent = {p.pid: p.ppid for p in processes}
    depths: dict[int, int] = {}
    for pid in parent:
        depth, seen, cur = 0, set(), pid
        while parent.get(cur) in parent and cur not in seen:
            seen.add(cur)
            cur = parent[cur]
            depth += 1
        depths[pid] = depth
    return depths


def _known(agent: str, proc: ProcessFact, why: str) -> Identity:
    return Identity(IdentityKind.KNOWN, agent, proc.pid, proc.create_time, proc.argv, f"pid {proc.pid}: {why}")


def identify(
    processes: Iterable[ProcessFact],
    specs: Mapping[str, AgentSpec],
    overrides: Mapping[str, Sequence[str]] = _NO_OVERRIDES,
    shells: frozenset[str] = DEFAULT_SHELLS,
) -> Identity:
    """Decide which agent, if any, runs in a pane from its process tree.

    `overrides` maps an agent name to the user's configured command for it
    (`[agents.NAME] command`); a process started as that command is that
    agent -- the user's word, checked before the plugins' matchers.

    Only the foreground process group is judged when it has a live member:
    a stopped or background job is not what the pane shows. Among matches
    the process nearest the pane's root wins, so an agent's own tools (a
    child `git`, even a child agent) never stand in for it.
    """
    live = [p for p in processes if p.alive]
    foreground = [p for p in live if p.foreground]
    candidates = foreground or live
    depth = _depths(live)
    candidates.sort(key=lambda p: (depth.get(p.pid, 0), p.create_time, p.pid))
    claimed = {a: _override_key(cmd, shells) for a, cmd in overrides.items() if a in specs}
    for proc in candidates:
        names = _names(proc, shells)
        for agent, key in claimed.items():
            if key is not None and key in names:
                return _known(agent, proc, f"the configured command for {agent} ({key!r})")
        for agent, spec in specs.items():
            why = _matches(proc, names, spec)
            if why is not None:
                return _known(agent, proc, why)
    for proc in candidates:
        if not _is_bare_shell(proc, shells):
            label = " ".join(proc.argv) or proc.name
            return Identity(
                IdentityKind.UNKNOWN,
                None,
                proc.pid,
                proc.create_time,
                proc.argv,
                f"pid {proc.pid} ({label[:80]}) is running and matches no agent; it may be one (a wrapper?)",
            )
    if not live:
        return Identity(IdentityKind.NONE, None, None, None, (), "no live process in the pane")
    return Identity(IdentityKind.NONE, None, None, None, (), "only a shell is running")


# --- missions --------------------------------------------------------------

# Flags that take a separate value in the agent CLIs afd knows; the value is
# skipped, never mistaken for the prompt. An unknown flag with a value leaves
# two positionals, and two positionals give no mission rather than a guess.
COMMON_VALUE_FLAGS = frozenset(
    {
        "--model", "-m", "--profile", "--config", "--cd", "-C", "--sandbox", "-s",
        "--ask-for-approval", "-a", "--approval-mode", "--image", "-i", "--permission-mode",
        "--add-dir", "--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools",
        "--output-format", "--input-format", "--resume", "-r", "--session-id", "--settings",
        "--mcp-config", "--append-system-prompt", "--system-prompt", "--fallback-model",
        "--agents", "--max-turns", "--cwd", "--prompt-file",
    }
)  # fmt: skip
_BARE_WORD = re.compile(r"[A-Za-z][\w.-]*")


def _agent_names(spec: AgentSpec) -> set[str]:
    return set(spec.executables) | ({_base(spec.command[0])} if spec.command else set())


def _agent_args(argv: Sequence[str], spec: AgentSpec, shells: frozenset[str]) -> list[str]:
    """The arguments given to the agent itself, past any interpreter and its script."""
    if _base(argv[0]) in _agent_names(spec):
        return list(argv[1:])
    script = _script_of(argv, shells)
    return list(argv[(script if script is not None else 0) + 1 :])


def mission_from_argv(
    argv: Sequence[str],
    spec: AgentSpec,
    value_flags: frozenset[str] = COMMON_VALUE_FLAGS,
    shells: frozenset[str] = DEFAULT_SHELLS,
) -> str | None:
    """The prompt the agent was started with (`claude "fix the login redirect"`), or None.

    None whenever it is not plainly there: the agent takes its prompt typed,
    the argv was rewritten (process.title), a subcommand was given
    (`codex resume --last`), or more than one positional argument is left.
    A lone bare word is read as a subcommand, not a mission. Never a guess.
    """
    if spec.prompt_delivery is not PromptDelivery.ARGUMENT or not argv:
        return None
    if len(argv) == 1 and " " in argv[0].strip():
        return None  # a rewritten process title: the original arguments are gone
    args = _agent_args(argv, spec, shells)
    positionals: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positionals.extend(args[i + 1 :])
            break
        if arg.startswith("-") and arg != "-":
            if "=" not in arg and arg in value_flags:
                i += 1
        else:
            positionals.append(arg)
        i += 1
    if len(positionals) != 1:
        return None
    mission = positionals[0].strip()
    if not mission or _BARE_WORD.fullmatch(mission):
        return None
    return mission


_VIS = {"t": "\t", "n": "\n", "r": "\r", "a": "\a", "b": "\b", "v": "\v", "f": "\f", "s": " ", "0": "\0"}


def _tmux_words(text: str) -> list[str] | None:
    """Undo tmux's quoting of `pane_start_command` (args_escape: quotes plus C-style vis escapes)."""
    words: list[str] = []
    word: bytearray | None = None
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote is None and ch in " \t":
            if word is not None:
                words.append(word.decode("utf-8", errors="replace"))
                word = None
            i += 1
            continue
        if word is None:
            word = bytearray()
        if ch == quote:
            quote = None
        elif quote is None and ch in "\"'":
            quote = ch
        elif ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            octal = re.match(r"[0-7]{3}", text[i + 1 : i + 4])
            if octal:
                word.append(int(octal.group(), 8) & 0xFF)
                i += 3
            else:
                word += _VIS.get(nxt, nxt).encode()
                i += 1
        else:
            word += ch.encode()
        i += 1
    if quote is not None:
        return None
    if word is not None:
        words.append(word.decode("utf-8", errors="replace"))
    return words


_SHELL_OPERATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&"})
_LAUNCHERS = frozenset({"exec", "env", "command", "nohup", "nice", "time"})


def _simple_commands(shell_text: str) -> list[list[str]]:
    lexer = shlex.shlex(shell_text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    try:
        for token in lexer:
            if token in _SHELL_OPERATORS:
                commands.append([])
            else:
                commands[-1].append(token)
    except ValueError:
        return []
    return [c for c in commands if c]


def _strip_launchers(argv: list[str]) -> list[str]:
    while argv and (_ASSIGNMENT.fullmatch(argv[0]) or argv[0] in _LAUNCHERS):
        argv = argv[1:]
    return argv


def mission_from_start_command(start_command: str, spec: AgentSpec, shells: frozenset[str] = DEFAULT_SHELLS) -> str | None:
    """The prompt from tmux's `pane_start_command`, e.g. `claude "fix the login redirect"`.

    tmux records either the argv it exec'd (several quoted words) or one
    shell command string; in a string, the simple command that runs the
    agent is the one read (`cd app && claude "fix it"`).
    """
    words = _tmux_words(start_command)
    if not words:
        return None
    return _mission_from_words(words, spec, shells, depth=0)


def _mission_from_words(words: list[str], spec: AgentSpec, shells: frozenset[str], depth: int) -> str | None:
    names = _agent_names(spec)
    for command in _simple_commands(words[0]) if len(words) == 1 else [words]:
        argv = _strip_launchers(command)
        # The agent may sit behind an interpreter or a launcher's flags:
        # `node /usr/bin/claude ...`, `nice -n 5 claude ...`.
        for i, arg in enumerate(argv[:4]):
            if _base(arg) in names:
                return mission_from_argv(argv[i:], spec, shells=shells)
        if argv and _base(argv[0]) in shells and len(argv) >= 3 and re.fullmatch(r"-\w*c\w*", argv[1]) and depth < 2:
            return _mission_from_words([argv[2]], spec, shells, depth + 1)  # `bash -lc 'claude "fix it"'`
    return None
