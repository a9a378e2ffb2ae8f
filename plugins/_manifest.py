"""Agent manifests: one TOML file that teaches afd an agent, read and checked.

A manifest says what most agents differ in: how the process is recognised,
how it is launched and resumed, which environment variables select its
account, what its screen's chrome looks like, when it is busy, what its
walls say (and where their reset clause is), what only looks like a wall,
and where it keeps session records a witness can read. The format, key by
key, is in docs/plugins.md ("Agents as data"); `plugins/agents/*.toml` are the
shipped examples.

Reading is strict and collects every problem with its line, as the config
does: a manifest either becomes a whole agent or is named and skipped. Each
regex is compiled once here, as a budgeted pattern (``afd.config.userpattern``):
a manifest is text a user wrote, matched against text any program printed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import tomlkit
import tomlkit.exceptions

from afd.config.userpattern import UserPattern, check
from afd.model import AgentSpec, ComposerBox, PromptDelivery

# The named groups a banner regex may use for its reset clause.
RESET_GROUPS = frozenset({"clock", "zone", "date", "relative", "epoch"})
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_KIND = re.compile(r"[a-z0-9][a-z0-9.-]{0,39}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class BannerRule:
    """One wall: the row that starts it, the rows that continue it, its reset clause."""

    regex: UserPattern
    kind: str
    continuation: UserPattern | None = None
    # Searched in the block's joined text for the reset groups; the banner regex itself when None.
    reset: UserPattern | None = None
    # The wall lets the user go on with another model (a choice the agent draws); issue 16's
    # rule derives needs_human from this and the reset clause, never from the manifest.
    offers_other_model: bool = False
    # The agent retries past this wall by itself at its reset: afd waits and never types into it.
    continues_by_itself: bool = False
    # Searched in the wall's rows (and its dialog's): when it finds one, the wall offers another
    # model, read from the screen (an option such as "Switch to …" that the agent draws).
    offers_other_model_when: UserPattern | None = None
    # Searched in the wall's rows: when it finds one, the wall says it lifts by itself but not when
    # ("try again later"): waited out, not a person's chore.
    reset_unstated: UserPattern | None = None
    # The wall's message has blank rows inside it (a tip block): a blank row ends it only when the
    # next row is no continuation.
    spans_blank_rows: bool = False
    # The wall counts only when the nearest row above it with any letter or digit in it (past
    # frames, bars and blank rows) is one this finds: OpenCode draws an error under the prompt it
    # answers, both under the same bar, while a prompt sits under the agent's own reply.
    under: UserPattern | None = None
    # The wall counts only when nothing but chrome, frames and blank rows follows it: drawn like a prompt,
    # it is the agent's last word only where no reply came after it.
    nothing_after: bool = False


@dataclass(frozen=True, slots=True)
class DialogRule:
    """A dialog or menu the agent opens under (or around) its wall: part of the wall's block, not output after it."""

    start: UserPattern  # its first row (a box's top edge, a title)
    end: UserPattern  # its last row (a box's bottom edge, a key hint)
    # An option of the dialog that goes on with another model ("Switch to auto mode?" · "1. Yes").
    offers_other_model: UserPattern | None = None


@dataclass(frozen=True, slots=True)
class Condition:
    """One test of a record: the value at a JSON path is present and truthy, equals a string, or matches a regex."""

    path: tuple[str, ...]
    equals: str | None = None
    matches: UserPattern | None = None


@dataclass(frozen=True, slots=True)
class RecordRules:
    """Where the agent keeps JSON-lines session records, and what in them is a wall."""

    dir: str  # home-relative folder
    dir_env: str | None  # a variable that names the folder instead
    files: str  # glob under the folder
    timestamp: tuple[str, ...]  # JSON path of a record's ISO 8601 time
    wall: tuple[Condition, ...]  # every one holds for a record that is a wall
    progress: tuple[Condition, ...]
    reset: tuple[str, ...] | None  # JSON path of the wall's reset, epoch seconds
    cwd: tuple[str, ...] | None  # JSON path of the working directory a record names
    # Every one holds for a prompt someone submitted (after a wall: unknown until the agent answers).
    prompt: tuple[Condition, ...] = ()


@dataclass(frozen=True, slots=True)
class Manifest:
    path: Path
    spec: AgentSpec
    banners: tuple[BannerRule, ...]
    not_limits: tuple[UserPattern, ...] = ()
    composer: UserPattern | None = None
    transcript: UserPattern | None = None
    submitted: UserPattern | None = None
    reset_notice: UserPattern | None = None
    records: RecordRules | None = None
    description: str = ""
    dialogs: tuple[DialogRule, ...] = ()
    # Spans cut from every row before the walls are read (a scrollbar drawn at the right edge).
    trim: tuple[UserPattern, ...] = ()
    # The agent draws a status row below its input box where a wall may show (OpenCode's retry row).
    walls_below_composer: bool = False


@dataclass(frozen=True, slots=True)
class ManifestProblem:
    path: Path
    line: int | None
    key: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class ManifestError(ValueError):
    """A manifest that cannot become an agent; every problem found, in file order."""

    def __init__(self, problems: list[ManifestProblem]):
        self.problems = sorted(problems, key=lambda p: p.line or 0)
        super().__init__("; ".join(str(p) for p in self.problems))


# --- where a key is -----------------------------------------------------------

_KEY_LINE = re.compile(r"""\s*([A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*=""")
_HEADER = re.compile(r"\s*(\[\[?)\s*([A-Za-z0-9_.-]+)\s*\]\]?")


def _key_lines(text: str) -> dict[tuple, int]:
    """Line of each key and table header; an array of tables' entries are numbered (``banner.2.regex``)."""
    lines: dict[tuple, int] = {}
    table: tuple = ()
    counts: dict[str, int] = {}
    closing: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if closing is not None:
            if closing in line:
                closing = None
            continue
        header = _HEADER.match(line)
        if header:
            name = header.group(2)
            if header.group(1) == "[[":
                counts[name] = counts.get(name, 0) + 1
                table = (*name.split("."), counts[name])
            else:
                table = tuple(name.split("."))
            lines.setdefault(table, number)
            continue
        key = _KEY_LINE.match(line)
        if key and not line.lstrip().startswith("#"):
            lines.setdefault((*table, key.group(1).strip("\"'")), number)
            rest = line[key.end() :].strip()
            for quote in ('"""', "'''"):
                if rest.startswith(quote) and quote not in rest[3:]:
                    closing = quote
    return lines


# --- reading ------------------------------------------------------------------


class _Reader:
    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = _key_lines(text)
        self.problems: list[ManifestProblem] = []

    def problem(self, parts: tuple, message: str) -> None:
        line = None
        for end in range(len(parts), 0, -1):
            line = self.lines.get(parts[:end])
            if line is not None:
                break
        self.problems.append(ManifestProblem(self.path, line, ".".join(str(p) for p in parts), message))

    def table(self, data: Mapping, key: str, known: set[str]) -> dict:
        raw = data.get(key, {})
        if not isinstance(raw, dict):
            self.problem((key,), f"expected a table [{key}]")
            return {}
        for k in raw:
            if k not in known:
                self.problem((key, k), f"unknown key (known: {', '.join(sorted(known))})")
        return raw

    def string(self, parts: tuple, raw: object, *, pattern: re.Pattern[str] | None = None, what: str = "") -> str | None:
        if raw is None:
            return None
        if not isinstance(raw, str) or (pattern is not None and not pattern.fullmatch(raw)):
            self.problem(parts, f"expected {what or 'a string'}, got {raw!r}")
            return None
        return raw

    def strings(self, parts: tuple, raw: object, *, pattern: re.Pattern[str] | None = None, what: str = "strings") -> tuple[str, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
            self.problem(parts, f"expected a list of {what}, e.g. [\"…\"]")
            return ()
        bad = [v for v in raw if pattern is not None and not pattern.fullmatch(v)]
        if bad:
            self.problem(parts, f"{bad[0]!r} is not {what}")
            return ()
        return tuple(raw)

    def regex(self, parts: tuple, raw: object, *, groups: frozenset[str] = frozenset()) -> UserPattern | None:
        """A regex, with only the named ``groups`` it may have (a [[banner]]'s reset clause, a paste's line count)."""
        text = self.string(parts, raw, what="a regex string")
        if text is None:
            return None
        why = check(text)
        if why is not None:
            self.problem(parts, f"invalid regex: {why}")
            return None
        pattern = UserPattern(text, source=f"{self.path}:{self.lines.get(parts, '?')}")
        named = set(pattern.groupindex)
        if groups and named - groups:
            self.problem(parts, f"unknown group {sorted(named - groups)[0]!r} (known here: {', '.join(sorted(groups))})")
            return None
        if not groups and named:
            self.problem(parts, "named groups mean something only in a [[banner]] regex or reset, or in screen.pasted")
            return None
        return pattern

    def regexes(self, parts: tuple, raw: object, *, groups: frozenset[str] = frozenset()) -> tuple[UserPattern, ...]:
        texts = self.strings(parts, raw, what="regex strings")
        found = []
        for text in texts:
            p = self.regex(parts, text, groups=groups)
            if p is not None:
                found.append(p)
        return tuple(found)

    def json_path(self, parts: tuple, raw: object) -> tuple[str, ...] | None:
        text = self.string(parts, raw, pattern=re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*"), what="a dotted JSON path such as \"error.type\"")
        return tuple(text.split(".")) if text else None

    def conditions(self, parts: tuple, raw: object) -> tuple[Condition, ...]:
        """``"reply"`` (present and truthy), ``{ path = "type", equals = "error" }``,
        ``{ path = "content", matches = "quota" }``, or a list of these that must all hold."""
        found = []
        for item in raw if isinstance(raw, list) and raw else [raw]:
            if isinstance(item, str):
                path = self.json_path(parts, item)
                if path:
                    found.append(Condition(path))
                continue
            if isinstance(item, dict) and set(item) <= {"path", "equals", "matches"} and "path" in item and len(item) <= 2:
                path = self.json_path(parts, item["path"])
                equals = self.string(parts, item.get("equals"), what="a string")
                matches = self.regex(parts, item.get("matches"))
                if path:
                    found.append(Condition(path, equals, matches))
                continue
            self.problem(parts, 'expected a JSON path, { path = "…", equals = "…" } or { path = "…", matches = "…" }, or a list of them')
            return ()
        return tuple(found)


_TOP = {"name", "description", "process", "launch", "accounts", "screen", "banner", "dialog", "not_limit", "records"}


def read_manifest(path: Path) -> Manifest:
    """The manifest at ``path``; raises ManifestError naming every problem with its line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError([ManifestProblem(path, None, None, f"cannot be read: {getattr(exc, 'strerror', None) or exc}")]) from None
    try:
        data = tomlkit.parse(text).unwrap()
    except tomlkit.exceptions.ParseError as exc:
        message = str(exc).split(" at line ")[0]
        raise ManifestError([ManifestProblem(path, exc.line, None, f"invalid TOML: {message[:1].lower()}{message[1:]}")]) from None
    r = _Reader(path, text)
    for key in data:
        if key not in _TOP:
            r.problem((key,), f"unknown key (known: {', '.join(sorted(_TOP))})")

    name = r.string(("name",), data.get("name", path.stem), pattern=_NAME, what="an agent name (lower case letters, digits, - and _)")
    description = r.string(("description",), data.get("description", "")) or ""

    process = r.table(data, "process", {"executables", "argv_patterns"})
    executables = r.strings(("process", "executables"), process.get("executables"), pattern=re.compile(r"[^/\s]+"), what="program names")
    argv_patterns = r.regexes(("process", "argv_patterns"), process.get("argv_patterns"))
    if not executables and not argv_patterns and "process" not in {p.key.split(".")[0] for p in r.problems if p.key}:
        r.problem(("process",), "needs executables or argv_patterns: how else would afd know the agent in a pane?")

    launch = r.table(data, "launch", {"command", "resume_args", "first_prompt"})
    command = r.strings(("launch", "command"), launch.get("command"))
    if not command and "command" not in launch:
        command = executables[:1]
    if not command:
        r.problem(("launch", "command"), 'must name the program to run, e.g. ["mycli"]')
    resume_args = r.strings(("launch", "resume_args"), launch.get("resume_args"))
    delivery = r.string(("launch", "first_prompt"), launch.get("first_prompt", "argument"), pattern=re.compile("argument|typed"), what='"argument" or "typed"')

    accounts = r.table(data, "accounts", {"select_env", "credential_env"})
    account_env = r.strings(("accounts", "select_env"), accounts.get("select_env"), pattern=_ENV_NAME, what="variable names")
    credential_env = r.strings(("accounts", "credential_env"), accounts.get("credential_env"), pattern=_ENV_NAME, what="variable names")

    screen = r.table(data, "screen", {"composer", "composer_box", "transcript", "chrome", "busy", "volatile", "submitted",
                                      "reset_notice", "pasted", "walls_below_composer", "trim"})
    composer = r.regex(("screen", "composer"), screen.get("composer"))
    box = _composer_box(r, screen.get("composer_box"))
    if composer is not None and box is not None:
        r.problem(("screen", "composer_box"), "a screen has one input row: give composer or composer_box, not both")
    trim = r.regexes(("screen", "trim"), screen.get("trim"))
    below = screen.get("walls_below_composer", False)
    if not isinstance(below, bool):
        r.problem(("screen", "walls_below_composer"), f"expected true or false, got {below!r}")
    chrome = r.regexes(("screen", "chrome"), screen.get("chrome"))
    busy = r.regexes(("screen", "busy"), screen.get("busy"))
    volatile = r.regexes(("screen", "volatile"), screen.get("volatile"))
    pasted = r.regexes(("screen", "pasted"), screen.get("pasted"), groups=frozenset({"lines"}))
    transcript = r.regex(("screen", "transcript"), screen.get("transcript"))
    submitted = r.regex(("screen", "submitted"), screen.get("submitted"))
    reset_notice = r.regex(("screen", "reset_notice"), screen.get("reset_notice"))

    banners = _banners(r, data.get("banner"))
    dialogs = _dialogs(r, data.get("dialog"))
    not_limits: list[UserPattern] = []
    raw_not = data.get("not_limit", [])
    if not isinstance(raw_not, list) or not all(isinstance(t, dict) for t in raw_not):
        r.problem(("not_limit",), "expected [[not_limit]] tables, each with a regex")
        raw_not = []
    for i, entry in enumerate(raw_not, start=1):
        for k in set(entry) - {"regex", "why"}:
            r.problem(("not_limit", i, k), "unknown key (known: regex, why)")
        p = r.regex(("not_limit", i, "regex"), entry.get("regex"))
        if p is None and "regex" not in entry:
            r.problem(("not_limit", i), "needs a regex")
        if p is not None:
            not_limits.append(p)

    records = _records(r, data)
    if r.problems:
        raise ManifestError(r.problems)
    spec = AgentSpec(
        name=name,
        executables=executables,
        command=command,
        resume_args=resume_args,
        prompt_delivery=PromptDelivery(delivery),
        # The composer row is chrome too: the gates strip it with the footers below it.
        chrome=(*(p for p in (composer,) if p is not None), *chrome),
        argv_patterns=argv_patterns,
        busy=busy,
        volatile=volatile,
        paste_markers=pasted,
        account_env=account_env,
        credential_env=credential_env,
        self_continuing_kinds=tuple(f"{name}.{b.kind}" for b in banners if b.continues_by_itself),
        composer_box=box,
    )
    return Manifest(
        path=path,
        spec=spec,
        banners=banners,
        not_limits=tuple(not_limits),
        composer=composer,
        transcript=transcript,
        submitted=submitted,
        reset_notice=reset_notice,
        records=records,
        description=description,
        dialogs=dialogs,
        trim=trim,
        walls_below_composer=below is True,
    )


def _banners(r: _Reader, raw: object) -> tuple[BannerRule, ...]:
    if raw is None:
        r.problem(("banner",), "a manifest needs at least one [[banner]]: the wall is what afd watches for")
        return ()
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        r.problem(("banner",), "expected [[banner]] tables")
        return ()
    rules = []
    known = {"regex", "kind", "continuation", "reset", "offers_other_model", "continues_by_itself", "reset_unstated",
             "spans_blank_rows", "under", "nothing_after", "needs_human"}
    for i, entry in enumerate(raw, start=1):
        for k in set(entry) - known:
            r.problem(("banner", i, k), f"unknown key (known: {', '.join(sorted(known - {'needs_human'}))})")
        if "needs_human" in entry:
            # Derived, never declared: a wall that names a reset or offers another model needs no one.
            r.problem(("banner", i, "needs_human"), "is derived from the reset clause and offers_other_model, never declared: remove it")
        regex = r.regex(("banner", i, "regex"), entry.get("regex"), groups=RESET_GROUPS)
        kind = r.string(("banner", i, "kind"), entry.get("kind"), pattern=_KIND, what="a kind such as \"usage-limit\"")
        for key in ("regex", "kind"):
            if key not in entry:
                r.problem(("banner", i), f"needs a {key}")
        flags = {}
        for flag in ("offers_other_model", "continues_by_itself", "spans_blank_rows", "nothing_after"):
            flags[flag] = entry.get(flag, False)
            if flag == "offers_other_model" and isinstance(flags[flag], str):
                continue  # a regex: the offer is read from the screen
            if not isinstance(flags[flag], bool):
                r.problem(("banner", i, flag), f"expected true or false{' or a regex' if flag == 'offers_other_model' else ''}, "
                                                f"got {flags[flag]!r}")
        offer = flags["offers_other_model"]
        offer_when = r.regex(("banner", i, "offers_other_model"), offer) if isinstance(offer, str) else None
        rule_reset = r.regex(("banner", i, "reset"), entry.get("reset"), groups=RESET_GROUPS)
        continuation = r.regex(("banner", i, "continuation"), entry.get("continuation"))
        unstated = r.regex(("banner", i, "reset_unstated"), entry.get("reset_unstated"))
        after = r.regex(("banner", i, "under"), entry.get("under"))
        if regex is not None and kind is not None:
            rules.append(BannerRule(regex, kind, continuation, rule_reset, offer is True, flags["continues_by_itself"] is True,
                                    offer_when, unstated, flags["spans_blank_rows"] is True, after,
                                    flags["nothing_after"] is True))
    return tuple(rules)


def _composer_box(r: _Reader, raw: object) -> ComposerBox | None:
    r"""``composer_box = { side = '^\s*┃', edge = '^\s*╹▀+\s*$' }``: the input box by its shape."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != {"side", "edge"}:
        r.problem(("screen", "composer_box"), "expected { side = '<regex>', edge = '<regex>' }: the box's side bar and bottom edge")
        return None
    side = r.regex(("screen", "composer_box"), raw["side"])
    edge = r.regex(("screen", "composer_box"), raw["edge"])
    return ComposerBox(side, edge) if side is not None and edge is not None else None


def _dialogs(r: _Reader, raw: object) -> tuple[DialogRule, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
        r.problem(("dialog",), "expected [[dialog]] tables, each with a start and an end")
        return ()
    known = {"start", "end", "offers_other_model", "why"}
    rules = []
    for i, entry in enumerate(raw, start=1):
        for k in set(entry) - known:
            r.problem(("dialog", i, k), f"unknown key (known: {', '.join(sorted(known))})")
        for key in ("start", "end"):
            if key not in entry:
                r.problem(("dialog", i), f"needs a {key}")
        start = r.regex(("dialog", i, "start"), entry.get("start"))
        end = r.regex(("dialog", i, "end"), entry.get("end"))
        offer = r.regex(("dialog", i, "offers_other_model"), entry.get("offers_other_model"))
        if start is not None and end is not None:
            rules.append(DialogRule(start, end, offer))
    return tuple(rules)


def _records(r: _Reader, data: Mapping) -> RecordRules | None:
    if "records" not in data:
        return None
    known = {"dir", "dir_env", "files", "timestamp", "wall", "progress", "prompt", "reset", "cwd"}
    t = r.table(data, "records", known)
    for key in ("dir", "files", "wall", "progress"):
        if key not in t:
            r.problem(("records",), f"needs {key}")
    directory = r.string(("records", "dir"), t.get("dir"), what="a folder under the home directory")
    if directory is not None and (directory.startswith("/") or ".." in Path(directory).parts):
        r.problem(("records", "dir"), "must be relative to the home directory, without ..")
    files = r.string(("records", "files"), t.get("files"), what='a glob such as "sessions/*.jsonl"')
    if files is not None and (files.startswith("/") or ".." in Path(files).parts):
        r.problem(("records", "files"), "must be a glob under dir, without ..")
    wall = r.conditions(("records", "wall"), t.get("wall")) if "wall" in t else ()
    progress = r.conditions(("records", "progress"), t.get("progress")) if "progress" in t else ()
    prompt = r.conditions(("records", "prompt"), t.get("prompt")) if "prompt" in t else ()
    if any(p.key and p.key.startswith("records") for p in r.problems):
        return None
    return RecordRules(
        dir=directory or "",
        dir_env=r.string(("records", "dir_env"), t.get("dir_env"), pattern=_ENV_NAME, what="a variable name"),
        files=files or "",
        timestamp=r.json_path(("records", "timestamp"), t.get("timestamp", "timestamp")) or ("timestamp",),
        wall=wall,
        progress=progress,
        reset=r.json_path(("records", "reset"), t.get("reset")) if "reset" in t else None,
        cwd=r.json_path(("records", "cwd"), t.get("cwd")) if "cwd" in t else None,
        prompt=prompt,
    )
