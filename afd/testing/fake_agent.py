"""A stand-in for the claude, codex and devin CLIs, steered by a scenario.

    python -m afd.testing.fake_agent --as claude [--scenario FILE] [--log FILE] [CLI ARGS...]

``--as`` may name an agent afd has no plugin for (``--as mycli``) when the
scenario's ``style`` says which of the three to draw like; its wall is the
scenario's ``banner_rows``, as given.

Everything after the fake's own options is read the way the real CLI reads
it: a first prompt as an argument, resume flags (`claude --continue`,
`codex resume --last`, `devin --continue`), headless `claude -p`. The fake
draws the CLI's screen, takes typed and bracketed-pasted input, does
"work" (edits a file and commits it with its own git identity), shows a
usage-limit banner when its scenario says so, and writes a JSON-lines log
of everything that happened to it. With ``records`` in its scenario it also
writes the CLI's own session records (``afd.testing.fake_records``). It is
never installed as `claude`, `codex` or `devin`: tests put executables with
those names in a temporary bin directory of their own (see ``write_launcher``).

Log events (``--log FILE`` or ``AFD_FAKE_LOG``; each line has ``event``,
``t``, ``pid``, ``agent``):

* ``start``: ``argv``, ``cmdline`` (interpreter first), ``cwd``, ``ppid``,
  ``prompt``, ``resume``, ``headless``, ``tty``
* ``ready``: the first screen is drawn and input is being read
* ``input``: ``text``, ``via`` (``argument`` | ``typed`` | ``paste``), ``queued``
* ``paste``: ``text`` of one bracketed paste; ``key``: ``esc``; ``menu``: ``choice`` (for a menu
  that lists its options: the option's text, ``index``, ``via`` enter | digit); ``menu_move``:
  ``selected``, ``option`` (an arrow key moved the highlight)
* ``work_start``: ``prompt``, ``n``; ``work``: ``prompt``, ``n``, ``file``, ``commit``
* ``limit``: ``banner`` (family id), ``rows`` (as drawn), ``reason``
* ``command``: ``command``, ``rc``, ``stdout``, ``stderr`` (a "run: " prompt)
* ``child``: ``child_pid``; ``signal``: ``signal``, ``ignored``
* ``exit``: ``code``, ``reason``
"""

from __future__ import annotations

import codecs
import collections
import json
import os
import select
import signal
import subprocess
import sys
import termios
import time
import tty
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from afd.testing import banners, screens
from afd.testing.fake_records import RecordWriter, record_writer
from afd.testing.scenario import Scenario, load_scenario

AGENTS = ("claude", "codex", "devin")
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"

# Options that take a value, so the value is not mistaken for the prompt.
_VALUE_FLAGS = {
    "claude": {"--model", "--permission-mode", "--append-system-prompt", "--allowedTools", "--add-dir", "-r", "--resume"},
    "codex": {"-m", "--model", "-c", "--config", "-C", "--cd", "-p", "--profile", "-s", "--sandbox", "-a"},
    "devin": {"--model", "--prompt-file"},
}


@dataclass(frozen=True, slots=True)
class Invocation:
    prompt: str | None
    resume: bool
    headless: bool


def parse_invocation(agent: str, args: list[str]) -> Invocation:
    """Read the agent's own command line the way the real CLI would (``agent``: the style it plays)."""
    words: list[str] = []
    resume, headless = False, False
    it = iter(enumerate(args))
    for _i, arg in it:
        if agent == "codex" and not words and arg == "resume":
            resume = True
        elif agent == "codex" and not words and arg == "exec":
            headless = True
        elif arg in ("--continue", "--last") or (arg == "-c" and agent != "codex"):
            resume = True
        elif agent == "claude" and arg in ("-p", "--print"):
            headless = True
        elif arg in _VALUE_FLAGS[agent]:
            if arg in ("-r", "--resume"):
                resume = True
            next(it, None)
        elif arg.startswith("-") and arg != "-":
            continue  # a flag the fake does not care about
        else:
            words.append(arg)
    return Invocation(prompt=" ".join(words) if words else None, resume=resume, headless=headless)


class Log:
    """JSON lines, one event per line, appended whole so concurrent writers never interleave."""

    def __init__(self, path: str | None, agent: str):
        self.path, self.agent = path, agent

    def write(self, event: str, **data) -> None:
        if not self.path:
            return
        record = {"event": event, "t": time.time(), "pid": os.getpid(), "agent": self.agent, **data}
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


class Exit(Exception):
    def __init__(self, code: int, reason: str):
        super().__init__(reason)
        self.code, self.reason = code, reason


def _git(cwd: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30
    )


def author(agent: str) -> tuple[str, str]:
    """The git identity each fake commits as (a temporary HOME has none)."""
    return f"Fake {agent.capitalize()}", f"{agent}@fake.invalid"


def do_work(agent: str, cwd: str, prompt: str, work_file: str | None) -> tuple[str, str | None]:
    """Append the prompt to the agent's notes file and commit it; returns (file, sha or None)."""
    rel = work_file or f"notes/{agent}.md"
    path = Path(cwd, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"- {prompt}\n")
    if _git(cwd, "rev-parse", "--is-inside-work-tree").returncode != 0:
        return rel, None
    name, email = author(agent)
    ident = ["-c", f"user.name={name}", "-c", f"user.email={email}", "-c", "commit.gpgsign=false"]
    _git(cwd, *ident, "add", "--", rel)
    done = _git(cwd, *ident, "commit", "--no-verify", "-q", "-m", f"{agent}: {prompt.splitlines()[0][:60] if prompt else '(empty)'}")
    if done.returncode != 0:
        return rel, None
    return rel, _git(cwd, "rev-parse", "HEAD").stdout.strip() or None


def spawn_child(seconds: float) -> int:
    # Ignores SIGHUP, so closing the pane does not take it along: the
    # teardown has to find it in the process tree. Ignored before exec, so
    # there is no window in which an early hangup still kills it.
    code = "import sys,time; time.sleep(float(sys.argv[1]))"
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(seconds), "afd-fake-child"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    return child.pid


@dataclass
class Turn:
    prompt: str
    started: float
    ends: float
    command: subprocess.Popen | None = None  # a "run: " prompt's process
    answers_at: float = 0.0  # its first output shows then (think_seconds after it began)
    answered: bool = False


@dataclass
class FakeAgent:
    agent: str
    scenario: Scenario
    invocation: Invocation
    log: Log
    cwd: str = field(default_factory=os.getcwd)
    in_fd: int = 0
    out_fd: int = 1
    transcript: list[str] = field(default_factory=list)
    composer: str = ""
    composer_pasted: bool = False
    queue: collections.deque = field(default_factory=collections.deque)
    turn: Turn | None = None
    status: str | None = None
    prompts_done: int = 0
    limited_since: float | None = None
    limits_shown: int = 0
    menu_open: bool = False
    pending: str = ""
    in_paste: bool = False
    paste_text: str = ""
    last_rows: list[str] | None = None
    # Its clock, and when it started by it: a test that simulates time hands in its own.
    clock: Callable[[], float] = time.monotonic
    started: float | None = None
    # The screen's columns and lines when it has no terminal to ask (a simulated pane).
    size: tuple[int, int] | None = None
    # A submitted prompt the agent has not yet shown it took: (text, via, when it will).
    taking: tuple[str, str, float] | None = None
    # An open menu that lists its options: where its rows start, its parameters, the highlighted number.
    menu_start: int | None = None
    menu_params: dict = field(default_factory=dict)
    menu_selected: int = 1
    native_resumed: bool = False
    records: RecordWriter | None = None  # the agent's own session records, when the scenario asks

    @property
    def style(self) -> str:
        """Which built-in fake's screen this one draws: its own, or the scenario's for another agent."""
        return self.scenario.style or self.agent

    # --- limit ----------------------------------------------------------
    @property
    def banner_id(self) -> str:
        if self.scenario.banner:
            return self.scenario.banner
        if self.invocation.headless and self.style == "claude":
            return "claude.headless"
        return banners.DEFAULT_FAMILY[self.style]

    @property
    def limited(self) -> bool:
        if self.limited_since is None:
            return False
        lasts = self.scenario.limit_lasts_seconds
        return lasts is None or self.clock() - self.limited_since < lasts

    def at_wall_on_start(self) -> bool:
        s = self.scenario
        if self.invocation.resume:
            return not s.resume_succeeds  # a resumed run is at the wall only when told it still is
        return s.limit_now or s.limit_after_prompts == 0

    def wall_rows(self) -> list[str]:
        return list(self.scenario.banner_rows) or banners.render(self.banner_id, self.scenario.banner_params)

    def show_limit(self, reason: str) -> None:
        rows = self.wall_rows()
        if self.limited_since is None or not self.limited:
            self.limited_since = self.clock()
        self.limits_shown += 1
        if self.transcript and self.transcript[-1] != "":
            self.transcript.append("")
        fam = banners.family(self.banner_id)
        params = {**fam.defaults, **self.scenario.banner_params}
        drawn_as_family = not self.scenario.banner_rows
        self.menu_start = len(self.transcript) if "options" in params and drawn_as_family else None
        self.menu_params, self.menu_selected = params, int(params.get("selected", 1))
        self.transcript += rows
        self.menu_open = fam.replaces_composer and drawn_as_family
        self.log.write("limit", banner=self.banner_id if drawn_as_family else "scenario", rows=rows, reason=reason)
        if self.records is not None:
            self.records.limit()

    # --- menus that list their options ---------------------------------
    def move_menu(self, step: int) -> None:
        assert self.menu_start is not None  # only an open menu is moved in
        options = list(self.menu_params["options"])
        self.menu_selected = min(len(options), max(1, self.menu_selected + step))
        rows = banners.render(self.banner_id, {**self.scenario.banner_params, "selected": self.menu_selected})
        self.transcript[self.menu_start : self.menu_start + len(rows)] = rows
        self.log.write("menu_move", selected=self.menu_selected, option=options[self.menu_selected - 1])

    def confirm_menu(self, number: int, via: str) -> None:
        assert self.menu_start is not None  # only an open menu is confirmed
        options = list(self.menu_params["options"])
        self.log.write("menu", choice=options[number - 1], index=number, via=via)
        # The menu goes; the wall it was about stays on screen (up to its first blank row).
        rows = self.transcript[self.menu_start :]
        keep = rows.index("") if "" in rows else len(rows)
        del self.transcript[self.menu_start + keep :]
        self.menu_open, self.menu_start = False, None

    def native_tick(self, now: float) -> None:
        after = self.scenario.native_resume_after_seconds
        if after is None or self.native_resumed or self.limited_since is None or self.limits_shown == 0:
            return
        if now - self.limited_since >= after:
            self.native_resumed, self.limited_since = True, None
            self.transcript += ["", "● Usage limit reset · Continuing automatically"]
            self.log.write("input", text="(auto-continuation)", via="auto-continue", queued=self.turn is not None)
            self.queue.append("continue")

    # --- turns ----------------------------------------------------------
    def summary(self, elapsed: float) -> str | None:
        # Only the current Claude UI prints a turn summary; the boxed one did not.
        return screens.turn_summary(self.style, elapsed) if self.scenario.ui == "modern" else None

    def submit(self, text: str, via: str) -> None:
        self.native_resumed = True  # a prompt of the user's takes the place of Claude's own auto-continue
        self.log.write("input", text=text, via=via, queued=self.turn is not None)
        self.queue.append(text)

    def begin(self, prompt: str) -> None:
        self.status = None
        if self.transcript and self.transcript[-1] != "":
            self.transcript.append("")
        self.transcript += [screens.user_row(self.style, prompt), ""]
        if self.records is not None:
            self.records.prompt(prompt)
        if self.limited:
            self.show_limit("prompt while limited")
            self.status = self.summary(0)
            return
        now = self.clock()
        think = max(0.0, self.scenario.think_seconds)
        self.turn = Turn(prompt, now, now + think + max(0.0, self.scenario.work_seconds), answers_at=now + think)
        if think == 0:
            self.answer()
        if self.scenario.run_commands and prompt.startswith("run: "):
            self.turn.command = subprocess.Popen(
                prompt[len("run: "):], shell=True, cwd=self.cwd, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
        self.log.write("work_start", prompt=prompt, n=self.prompts_done + 1)

    def answer(self) -> None:
        """The turn's first output: its reply, and what the scenario has it print."""
        assert self.turn is not None, "an answer belongs to a turn"
        self.turn.answered = True
        self.transcript += screens.reply_rows(self.style, "I'll take care of that.")
        if self.scenario.show_file:
            try:
                lines = Path(self.cwd, self.scenario.show_file).read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                lines = [f"cat: {self.scenario.show_file}: {exc.strerror}"]
            self.transcript += ["", *screens.file_rows(self.style, self.scenario.show_file, lines)]
        if self.scenario.work_output:
            self.transcript += ["", *self.scenario.work_output]

    def turn_over(self, now: float) -> bool:
        turn = self.turn
        assert turn is not None  # asked while a turn runs
        if turn.command is not None:
            return turn.command.poll() is not None
        until = self.scenario.work_until_file
        if until and not Path(self.cwd, until).exists():
            return False
        return now >= turn.ends

    def finish_command(self) -> None:
        turn, self.turn = self.turn, None
        assert turn is not None and turn.command is not None  # a command's turn, just over
        out, err = turn.command.communicate()
        self.prompts_done += 1
        self.log.write("command", command=turn.prompt[len("run: "):], rc=turn.command.returncode, stdout=out, stderr=err)
        shown = [f"  {line}" for line in (out + err).splitlines()[-8:]]
        self.transcript += ["", f"⏺ Bash({turn.prompt[len('run: '):][:60]})", *shown, f"  (exit {turn.command.returncode})"]
        self.status = self.summary(self.clock() - turn.started)

    def finish_turn(self) -> None:
        turn, self.turn = self.turn, None
        assert turn is not None  # a turn, just over
        rel, sha = do_work(self.agent, self.cwd, turn.prompt, self.scenario.work_file)
        self.prompts_done += 1
        self.log.write("work", prompt=turn.prompt, n=self.prompts_done, file=rel, commit=sha)
        if self.records is not None:
            self.records.reply(f"Done: {rel}")
        self.transcript += ["", *screens.edit_rows(self.style, rel, sha)]
        self.status = self.summary(self.clock() - turn.started)
        n = self.scenario.limit_after_prompts
        if n is not None and self.limits_shown == 0 and self.prompts_done >= n:
            self.show_limit(f"after {n} prompts")
        n = self.scenario.exit_after_prompts
        if n is not None and self.prompts_done >= n:
            raise Exit(self.scenario.exit_code, f"after {n} prompts")

    def tick(self) -> None:
        now = self.clock()
        if self.started is None:
            self.started = now
        if self.taking is not None and now >= self.taking[2]:
            (text, via, _), self.taking = self.taking, None
            self.composer, self.composer_pasted = "", False
            self.submit(text, via)
        elapsed = now - self.started
        if self.turn and not self.turn.answered and now >= self.turn.answers_at:
            self.answer()
        if self.turn and self.turn_over(now):
            if self.turn.command is not None:
                self.finish_command()
            else:
                self.finish_turn()
        self.native_tick(now)
        t = self.scenario.exit_after_seconds
        if t is not None and elapsed >= t:
            raise Exit(self.scenario.exit_code, f"after {t} seconds")
        t = self.scenario.limit_after_seconds
        if t is not None and self.limits_shown == 0 and elapsed >= t and not self.turn:
            self.show_limit(f"after {t} seconds")
        if not self.turn and self.queue and not self.menu_open:
            self.begin(self.queue.popleft())
        if self.turn:
            thinking = not self.turn.answered
            self.status = screens.thinking(self.style) if thinking else screens.spinner(self.style, now - self.turn.started)

    # --- input ----------------------------------------------------------
    def feed(self, text: str) -> None:
        self.pending += text
        while self.pending:
            if self.in_paste:
                end = self.pending.find(PASTE_END)
                if end < 0:
                    keep = max(0, len(self.pending) - len(PASTE_END))
                    self.paste_text += self.pending[:keep]
                    self.pending = self.pending[keep:]
                    return
                self.paste_text += self.pending[:end]
                self.pending = self.pending[end + len(PASTE_END) :]
                self.in_paste = False
                # Terminals send line breaks in a paste as CR.
                pasted = self.paste_text.replace("\r\n", "\n").replace("\r", "\n")
                self.log.write("paste", text=pasted)
                self.composer += pasted
                self.composer_pasted = True
                self.paste_text = ""
                continue
            ch = self.pending[0]
            if self.menu_start is not None and self.menu_open and self.pending[:3] in ("\x1b[A", "\x1b[B"):
                self.move_menu(-1 if self.pending[:3] == "\x1b[A" else 1)
                self.pending = self.pending[3:]
                continue
            if ch == "\x1b":
                if self.pending.startswith(PASTE_START):
                    self.pending = self.pending[len(PASTE_START) :]
                    self.in_paste = True
                    continue
                if len(self.pending) < len(PASTE_START) and PASTE_START.startswith(self.pending) and self.pending != "\x1b":
                    return  # the rest of the sequence is still on its way
                self.pending = self._skip_escape(self.pending)
                continue
            self.pending = self.pending[1:]
            self.key(ch)

    def _skip_escape(self, s: str) -> str:
        if len(s) == 1:
            self.log.write("key", key="esc")
            return ""
        if s[1] == "[":
            for i in range(2, len(s)):
                if "@" <= s[i] <= "~":
                    return s[i + 1 :]
            return ""
        return s[2:]

    def key(self, ch: str) -> None:
        if self.menu_open and self.menu_start is not None:
            if ch in "\r\n":
                self.confirm_menu(self.menu_selected, "enter")
            elif ch.isdigit() and 1 <= int(ch) <= len(self.menu_params["options"]):
                self.confirm_menu(int(ch), "digit")  # as Codex does: a digit picks an option
            return
        if ch in "\r\n":
            if self.menu_open:
                self.menu_open = False
                self.log.write("menu", choice=self.composer.strip() or "1")
                self.composer = ""
                return
            if self.taking is not None:
                return  # still on its way to taking the last one
            text, via = self.composer, "paste" if self.composer_pasted else "typed"
            if text.strip() and self.scenario.take_seconds > 0:
                # A slow agent: the text stays in its input row until it shows it took it.
                self.taking = (text, via, self.clock() + self.scenario.take_seconds)
                return
            self.composer, self.composer_pasted = "", False
            if text.strip():
                self.submit(text, via)
        elif ch in "\x7f\x08":
            self.composer = self.composer[:-1]
        elif ch == "\x03":
            raise Exit(130, "ctrl-c")
        elif ch == "\x04" and not self.composer:
            raise Exit(0, "ctrl-d")
        elif ch >= " ":
            self.composer += ch

    # --- screen ---------------------------------------------------------
    def rows(self) -> list[str]:
        try:
            width, height = self.size or tuple(os.get_terminal_size(self.out_fd))
        except OSError:
            width, height = 80, 24
        screen = screens.Screen(
            agent=self.style,
            width=width,
            height=height,
            cwd=self.cwd,
            transcript=tuple(self.transcript),
            status=self.status,
            composer=self.composer,
            composer_hidden=self.menu_open,
            ui=self.scenario.ui,
        )
        return screens.draw(screen)

    def redraw(self, force: bool = False) -> None:
        rows = self.rows()
        if rows == self.last_rows and not force:
            return
        self.last_rows = rows
        # Home and overwrite rather than clear: tmux's scroll-on-clear would
        # push every frame into the history.
        out = "\x1b[H" + "\r\n".join(row + "\x1b[K" for row in rows) + "\x1b[J"
        os.write(self.out_fd, out.encode("utf-8"))

    def next_wake(self) -> float:
        if self.turn or self.taking:
            return 0.05
        waits = [0.5]
        elapsed = self.clock() - (self.started or self.clock())
        for t in (self.scenario.exit_after_seconds, self.scenario.limit_after_seconds):
            if t is not None:
                waits.append(max(0.0, t - elapsed))
        return min(waits)

    def start(self) -> None:
        """What the agent does before it reads input: its wall, its first prompt, its first screen's state."""
        if self.scenario.spawn_child:
            self.log.write("child", child_pid=spawn_child(self.scenario.child_seconds))
        if self.at_wall_on_start():
            if self.invocation.prompt is None:
                self.show_limit("resume still limited" if self.invocation.resume else "at start")
            else:
                self.limited_since = self.clock()  # the first prompt meets the wall
        if self.invocation.prompt is not None:
            self.log.write("input", text=self.invocation.prompt, via="argument", queued=False)
            self.queue.append(self.invocation.prompt)
        self.tick()

    def run(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.start()
        self.redraw()
        self.log.write("ready")
        while True:
            ready, _, _ = select.select([self.in_fd], [], [], self.next_wake())
            if ready:
                data = os.read(self.in_fd, 4096)
                if not data:
                    raise Exit(0, "end of input")
                self.feed(decoder.decode(data))
            self.tick()
            self.redraw()


def run_headless(fake: FakeAgent) -> int:
    """`claude -p PROMPT` / `codex exec PROMPT`: answer once on stdout and exit."""
    prompt = fake.invocation.prompt or ""
    fake.log.write("input", text=prompt, via="argument", queued=False)
    if fake.at_wall_on_start():
        rows = fake.wall_rows()
        fake.log.write("limit", banner=fake.banner_id, rows=rows, reason="headless")
        print("\n".join(rows), flush=True)
        return 1
    time.sleep(max(0.0, fake.scenario.work_seconds))
    rel, sha = do_work(fake.agent, fake.cwd, prompt, fake.scenario.work_file)
    fake.log.write("work", prompt=prompt, n=1, file=rel, commit=sha)
    print(f"Done. Committed {sha[:7]}." if sha else "Done.", flush=True)
    return fake.scenario.exit_code


def _install_signals(fake: FakeAgent) -> None:
    def on_term(signum, frame):
        fake.log.write("signal", signal="SIGTERM", ignored=fake.scenario.ignore_sigterm)
        if not fake.scenario.ignore_sigterm:
            raise Exit(143, "SIGTERM")

    def on_exit_signal(signum, frame):
        name = signal.Signals(signum).name
        fake.log.write("signal", signal=name, ignored=False)
        raise Exit(128 + signum, name)

    def on_winch(signum, frame):
        fake.last_rows = None

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_exit_signal)
    signal.signal(signal.SIGINT, on_exit_signal)
    signal.signal(signal.SIGWINCH, on_winch)


def _cmdline() -> list[str]:
    """argv as the kernel has it (interpreter first), which is what process-tree identity reads."""
    try:
        return Path("/proc/self/cmdline").read_bytes().decode("utf-8", "replace").split("\0")[:-1]
    except OSError:
        return [sys.executable, *sys.argv]


def _own_options(argv: list[str]) -> tuple[dict, list[str]]:
    opts: dict[str, str | None] = {"as": None, "scenario": None, "log": None}
    while argv and argv[0] in ("--as", "--scenario", "--log"):
        if len(argv) < 2:
            raise SystemExit(f"fake_agent: {argv[0]} needs a value")
        opts[argv[0][2:]] = argv[1]
        argv = argv[2:]
    return opts, argv


def main(argv: list[str] | None = None) -> int:
    opts, rest = _own_options(list(sys.argv[1:] if argv is None else argv))
    agent = opts["as"]
    if not agent:
        print(f"fake_agent: --as needs an agent ({', '.join(AGENTS)}, or any name with a scenario style)", file=sys.stderr)
        return 2
    scenario = load_scenario(agent, opts["scenario"] or os.environ.get("AFD_FAKE_SCENARIO"))
    if (scenario.style or agent) not in AGENTS:
        print(f"fake_agent: --as {agent} needs a scenario style, one of {', '.join(AGENTS)}", file=sys.stderr)
        return 2
    log = Log(opts["log"] or os.environ.get("AFD_FAKE_LOG"), agent)
    invocation = parse_invocation(scenario.style or agent, rest)
    fake = FakeAgent(agent=agent, scenario=scenario, invocation=invocation, log=log)
    fake.records = record_writer(agent, scenario, fake.cwd, os.environ)
    log.write(
        "start",
        argv=list(sys.argv),
        cmdline=_cmdline(),
        cwd=fake.cwd,
        ppid=os.getppid(),
        prompt=invocation.prompt,
        resume=invocation.resume,
        headless=invocation.headless,
        tty=os.isatty(0),
    )
    _install_signals(fake)
    if invocation.headless:
        code = run_headless(fake)
        log.write("exit", code=code, reason="headless")
        return code
    saved = None
    if os.isatty(fake.in_fd):
        saved = termios.tcgetattr(fake.in_fd)
        tty.setraw(fake.in_fd)
    if scenario.bracketed_paste:
        os.write(fake.out_fd, b"\x1b[?2004h")
    code, reason = 0, "exit"
    try:
        fake.run()
    except Exit as done:
        code, reason = done.code, done.reason
    finally:
        log.write("exit", code=code, reason=reason)
        try:
            if scenario.bracketed_paste:
                os.write(fake.out_fd, b"\x1b[?2004l")
            if saved is not None:
                termios.tcsetattr(fake.in_fd, termios.TCSADRAIN, saved)
        except OSError:
            pass  # the pane is already gone (SIGHUP)
    return code


def write_launcher(bin_dir: Path, name: str, agent: str) -> Path:
    """Write an executable ``bin_dir/name`` that runs the fake as ``agent``.

    The script is both shell and Python: sh runs the first line, which
    execs this Python with the script itself as argv[1], so the process
    looks like an interpreter running a CLI script (`python …/bin/claude
    "fix the test"`), which is what identity by argv has to handle. Name it
    after something else (`my-wrapper`) to get a wrapper that hides the agent.
    """
    python = sys.executable
    if any(c in python for c in "\"$`\\\n"):
        raise ValueError(f"cannot write a launcher for an interpreter at {python!r}")
    path = bin_dir / name
    path.write_text(
        "#!/bin/sh\n"
        f'"exec" "{python}" "$0" "$@"\n'
        "import sys\n"
        "from afd.testing.fake_agent import main\n"
        f"sys.exit(main(['--as', {agent!r}, *sys.argv[1:]]))\n",
        encoding="utf-8",
    )
    path.chmod(0o755)
    return path


if __name__ == "__main__":
    sys.exit(main())
