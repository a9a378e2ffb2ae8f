"""Read the usage-limit walls out of the pinned CLIs themselves, and compare them with the reviewed list.

`scripts/real-agents walls [claude|codex|gemini|opencode|copilot]` runs
this. Claude Code's native binary carries its JavaScript bundle as text;
Codex's Rust binary keeps its messages as string literals packed end to end,
split at their placeholders; Gemini CLI ships plain JavaScript files;
OpenCode is a Bun binary with its JavaScript modules inside as text; Copilot
CLI is a Node single-executable application carrying a package whose
JavaScript draws the screens and whose Rust runtime words the errors. All
are read the same way: every message of the wall families (usage limits,
spend caps, credits, admin and org caps, model caps, extra usage — `FAMILY`
below; quota, rate-limit, credit, billing and plan messages for the three
later CLIs — `QUOTA_FAMILY`; rules about words, not lists of known
sentences) is collected, and each one must be in ``tests/data/real/walls-<cli>-<version>.txt``
with the kind a reviewer gave it, or ``not a wall: <why>``. A message the
bundle holds and the list does not is printed and fails the check: after a
version bump, that is the work to do.

The list's format, one entry a line (``# `` starts a comment line)::

    <message as extracted>\\t<kind | not a wall: why>[\\t<the row as the CLI draws it>]

and, after a line ``[drawn]``, walls as the CLI composes them from the pieces
above (placeholders in braces: ``{reset}``, ``{time}``, ``{day}``, ``{model}``), with their
kind: the screens the detector test draws.
"""

from __future__ import annotations

import argparse
import io
import re
import struct
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import install

DATA = Path(__file__).resolve().parents[1] / "data" / "real"
EXIT_NEW = 1
EXIT_NOT_INSTALLED = 2
EXIT_NO_LIST = 5

# The families, as words a message of one of them must contain (case-insensitive).
FAMILY = re.compile(
    r"hit your|reached your|out of (?:usage|extra usage|credits)|usage credits? (?:limit|cap|balance)"
    r"|spend (?:limit|cap)|usage limit|credit (?:limit|balance)|requires usage credits|needs usage credits"
    r"|usage is paused|usage allocation|seat type doesn't include|add (?:funds|credits)|to refill\b"
    r"|pooled group budget|org is out of|organization is out of|disabled for your org\b|quota exceeded|included usage"
    r"|extra usage is required|usage credits are required|limit reached\\W+contact|upgrade to (?:plus|pro)\b",
    re.IGNORECASE,
)
# Strings of the bundle that are not messages: identifiers, code, markup, file paths.
_NOT_PROSE = re.compile(r"^[\w.:/-]*$|=>|\bfunction\b|\breturn\b|[;{]\s*$|^\s*[)}\]]|\\n\s*let |\$\{[^}]{40,}")


@dataclass(frozen=True, slots=True)
class Entry:
    message: str
    verdict: str  # a kind (``claude.spend-cap``) or ``not a wall: why``
    drawn_as: str = ""  # the row as the CLI draws it, when the message alone is not that

    @property
    def shown(self) -> str:
        return self.drawn_as or self.message

    @property
    def is_wall(self) -> bool:
        return not self.verdict.startswith("not a wall")


@dataclass(frozen=True, slots=True)
class Reviewed:
    found: list[Entry]  # messages as the extractor finds them
    drawn: list[Entry]  # walls as the CLI composes them, placeholders in braces


# --- extraction ------------------------------------------------------------------


def js_literals(source: str) -> list[str]:
    """The string literals of a JavaScript text; a template literal keeps its ``${…}`` as written."""
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        # Jump to the next character that can start a literal, a regular expression or a comment.
        found = _LITERAL_START.search(source, i)
        if found is None:
            break
        i = found.start()
        c = source[i]
        if c in "\"'":
            closed = (_DOUBLE if c == '"' else _SINGLE).match(source, i)
            if closed is not None:
                out.append(closed.group(1))
                i = closed.end()
            else:
                i += 1
        elif c == "`":
            j, buf = i + 1, []
            while j < n and source[j] != "`":
                plain = _TEMPLATE_TEXT.match(source, j)
                if plain.end() > j:
                    buf.append(plain.group())
                    j = plain.end()
                elif source[j] == "\\":
                    buf.append(source[j:j + 2])
                    j += 2
                elif source.startswith("${", j):
                    k = _template_end(source, j + 2)
                    buf.append(source[j:k])
                    j = k
                else:  # a `$` not opening a placeholder
                    buf.append(source[j])
                    j += 1
            out.append("".join(buf))
            i = j + 1
        elif source[i + 1:i + 2] not in ("/", "*") and _REGEX_BEFORE.match(source, _prev(source, i)):
            i = _regex_end(source, i + 1)
        elif source.startswith("//", i) and (i == 0 or source[i - 1] == "\n"):
            i = source.find("\n", i) % (n + 1) + 1
        else:
            i += 1
    return out


_LITERAL_START = re.compile(r"[\"'`/]")
_DOUBLE = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_SINGLE = re.compile(r"'((?:[^'\\\n]|\\.)*)'")
_TEMPLATE_TEXT = re.compile(r"[^`\\$]*")


# A `/` after one of these starts a regular expression, not a division.
_REGEX_BEFORE = re.compile(r"[(,=:\[!&|?{};]|$|return\b|typeof\b")


def _prev(source: str, i: int) -> int:
    j = i - 1
    while j >= 0 and source[j] in " \t":
        j -= 1
    if j >= 5 and source[j - 5:j + 1] in ("return", "typeof"):
        return j - 5
    return max(j, 0) if j >= 0 else len(source)


def _regex_end(source: str, k: int) -> int:
    in_class = False
    while k < len(source) and source[k] != "\n":
        ch = source[k]
        if ch == "\\":
            k += 2
            continue
        if ch == "[":
            in_class = True
        elif ch == "]":
            in_class = False
        elif ch == "/" and not in_class:
            return k + 1
        k += 1
    return k


def _template_end(source: str, k: int) -> int:
    depth = 1
    while k < len(source) and depth:
        ch = source[k]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "`":  # a template inside the placeholder
            k += 1
            while k < len(source) and source[k] != "`":
                k += 2 if source[k] == "\\" else 1
        k += 1
    return k


_UTF8_RUN = re.compile(rb"(?:[\x20-\x7e\t\n]|[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3})+")
_WORDS = re.compile(FAMILY.pattern.lower().encode())
# A module of the bundle: a long run of ASCII, or a short one that starts with Bun's module marker.
_ASCII_RUN = re.compile(rb"// @bun[\x20-\x7e\t\n]{100,}|[\x20-\x7e\t\n]{2000,}")


def text_runs(data: bytes, words: re.Pattern[bytes] | None = None) -> list[str]:
    """The runs of UTF-8 text in which the wall words occur (each run found from a hit, which keeps this quick)."""
    runs, end = [], 0
    for hit in (words or _WORDS).finditer(data.lower()):
        if hit.start() < end:
            continue
        start = hit.start()
        while start > max(0, hit.start() - 4096) and _is_text(data[start - 1]):
            start -= 1
        run = _UTF8_RUN.match(data, start)
        while run is None or run.end() <= hit.start():  # started inside a character: step into it
            start += 1
            run = _UTF8_RUN.match(data, start)
        end = run.end()
        runs.append(run.group().decode("utf-8", "replace"))
    return runs


def _is_text(byte: int) -> bool:
    return 0x20 <= byte <= 0x7E or byte in (0x09, 0x0A) or 0x80 <= byte <= 0xF4


def js_runs(data: bytes) -> list[str]:
    """The long ASCII runs that hold a JavaScript bundle's modules, where the wall words occur."""
    return [m.group().decode("ascii") for m in _ASCII_RUN.finditer(data) if _WORDS.search(m.group().lower())]


def claude_messages(binary: Path) -> set[str]:
    """Every wall-family message in Claude Code's bundle (the JS text inside the native binary)."""
    found: set[str] = set()
    for run in js_runs(binary.read_bytes()):
        for literal in js_literals(run):
            message = _clean(literal.replace("\n", "\\n"))
            if message and len(message) <= 400 and FAMILY.search(message) and not _NOT_PROSE.search(message):
                found.add(message)
    return found


# In Codex's binary the literals follow each other with nothing between them:
# a message ends where a sentence ends and another begins, or where a length
# byte that happens to be printable stands before it.
_SENTENCE_JOIN = re.compile(r"(?<=[a-z0-9.?!)…])(?=[A-Z][a-z’'])")
_LEADING_BYTE = re.compile(r"^[^\sA-Z(](?=[A-Z][a-z’'])|^[A-Z](?=[A-Z][a-z’'])")


def codex_messages(binary: Path) -> set[str]:
    """Every wall-family message fragment in Codex's binary (split where its placeholders were)."""
    found: set[str] = set()
    for run in text_runs(binary.read_bytes()):
        if not FAMILY.search(run):
            continue
        for piece in _SENTENCE_JOIN.split(run):
            piece = _LEADING_BYTE.sub("", piece)
            if len(piece) > 400 or not FAMILY.search(piece) or _NOT_PROSE.search(piece):
                continue
            if not re.search(r"\s", piece.strip()) or re.search(r"[a-z][A-Z][a-z]+[A-Z]|_[a-z]+_", piece):
                continue  # identifiers run together (`usage_limit_reached`, `creditsDepleted…`)
            message = _clean(piece.replace("\n", "\\n"))
            if message:
                found.add(message)
    return found


def _clean(message: str) -> str:
    return message.replace("\\xB7", "·").replace("\\u2014", "—").replace("\\u2019", "’").replace("\\u2013", "–") \
        .replace("\\xA0", " ").replace("\\u2192", "→").replace("\\xD7", "×").strip("\n")


# Gemini CLI, OpenCode and Copilot CLI word their walls from the API's error
# (a quota, a rate limit, credits, a billing or plan state), not as Claude's
# and Codex's "hit your … limit" sentences: their rule takes those words too.
QUOTA_FAMILY = re.compile(
    FAMILY.pattern + r"|quota|rate[ _-]?limit|\bcredits?\b|billing|payment required|spending limit|premium requests?"
    r"|upgrade (?:to|your|for)\b|higher limits|subscribe to|usage (?:limit|exceeded)|limit reached|exceeded your"
    r"|exhausted your",
    re.IGNORECASE,
)


def _prose(message: str, rule: re.Pattern[str]) -> bool:
    """A message of the family: its words, in a sentence (two words at least), not code or an identifier."""
    return (0 < len(message) <= 400 and rule.search(message) is not None and _NOT_PROSE.search(message) is None
            and _TWO_WORDS.search(message) is not None)


_TWO_WORDS = re.compile(r"[A-Za-z]{2,}[,.:!?]? +[A-Za-z$]")


def _js_messages(texts, rule: re.Pattern[str]) -> set[str]:
    found: set[str] = set()
    for text in texts:
        for literal in js_literals(text):
            message = _clean(literal.replace("\n", "\\n"))
            if _prose(message, rule):
                found.add(message)
    return found


def gemini_messages(bundle: Path) -> set[str]:
    """Every wall-family message in Gemini CLI's bundle (plain JavaScript files)."""
    return _js_messages((p.read_text(encoding="utf-8", errors="replace") for p in sorted(bundle.glob("*.js"))
                         if _QUOTA_WORDS.search(p.read_bytes())), QUOTA_FAMILY)


_QUOTA_WORDS = re.compile(QUOTA_FAMILY.pattern.encode(), re.IGNORECASE)


def opencode_messages(binary: Path) -> set[str]:
    """Every wall-family message in OpenCode's binary (Bun, with its JavaScript modules inside as text)."""
    runs = [m.group().decode("ascii") for m in _ASCII_RUN.finditer(binary.read_bytes())
            if _QUOTA_WORDS.search(m.group())]
    return _js_messages(runs, QUOTA_FAMILY)


def copilot_messages(binary: Path) -> set[str]:
    """Every wall-family message in Copilot CLI: its single-executable application carries a package
    (``copilot.tgz``) whose JavaScript draws the screens and whose native runtime (Rust) words the
    errors, its literals packed end to end as in Codex."""
    package = tarfile.open(fileobj=io.BytesIO(sea_asset(binary.read_bytes(), "copilot.tgz")), mode="r:gz")
    found: set[str] = set()
    for member in package.getmembers():
        name = member.name.removeprefix("package/")
        if name.endswith(".js") and "/" not in name:
            text = package.extractfile(member).read().decode("utf-8", "replace")
            if QUOTA_FAMILY.search(text):
                found |= _js_messages([text], QUOTA_FAMILY)
        elif name.endswith(".node"):
            found |= rust_messages(elf_section(package.extractfile(member).read(), ".rodata"), QUOTA_FAMILY)
    return found


def sea_asset(data: bytes, name: str) -> bytes:
    """An asset of a Node single-executable application: its name, its size (8 bytes), its bytes."""
    key = name.encode()
    at = data.find(key, data.find(b"NODE_SEA_BLOB"))
    while at != -1:
        size = struct.unpack_from("<Q", data, at + len(key))[0]
        body = at + len(key) + 8
        if 0 < size <= len(data) - body:
            return data[body:body + size]
        at = data.find(key, at + 1)
    raise FileNotFoundError(f"no {name} asset in the executable")


def elf_section(data: bytes, name: str) -> bytes:
    """One section of a 64-bit little-endian ELF file (the whole file when it has no such section)."""
    if data[:4] != b"\x7fELF":
        return data
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    entsize, count, names_at = struct.unpack_from("<HHH", data, 0x3A)

    def header(i: int) -> tuple[int, int, int]:
        fields = struct.unpack_from("<IIQQQQ", data, shoff + i * entsize)
        return fields[0], fields[4], fields[5]  # name offset, file offset, size

    names = header(names_at)[1]
    for i in range(count):
        at, offset, size = header(i)
        if data[names + at:data.index(b"\0", names + at)].decode("ascii", "replace") == name:
            return data[offset:offset + size]
    return data


def rust_messages(data: bytes, rule: re.Pattern[str]) -> set[str]:
    """The family's messages among a Rust binary's literals, split where one ends and the next begins."""
    found: set[str] = set()
    for run in text_runs(data, re.compile(rule.pattern.encode(), re.IGNORECASE)):
        if not rule.search(run):
            continue
        for piece in (p for joined in _SENTENCE_JOIN.split(run) for p in _LOWER_JOIN.split(joined)):
            # An error code glued to its message (`quota_exceededYou've run out …`, `… features`
            # followed by `additional_spend_limit_reached`) is not part of it.
            piece = _SNAKE_TAIL.sub("", _SNAKE_HEAD.sub("", _LEADING_BYTE.sub("", piece)))
            if not _prose(piece, rule) or re.search(r"[a-z][A-Z][a-z]+[A-Z]|_[a-z]+_", piece):
                continue
            message = _clean(piece.replace("\n", "\\n"))
            if message:
                found.add(message)
    return found


# A sentence that ends and a lower-case literal glued to it (`… for more details.exceeded maximum …`).
_LOWER_JOIN = re.compile(r"(?<=[a-z]{2}\.)(?=[a-z]{3,}\s)")
_SNAKE_HEAD = re.compile(r"^(?:[a-z0-9]+_)+[a-z0-9]+(?=[A-Z])")
_SNAKE_TAIL = re.compile(r"(?:[a-z0-9]+_)+[a-z0-9]+$")


EXTRACT = {"claude": claude_messages, "codex": codex_messages, "gemini": gemini_messages,
           "opencode": opencode_messages, "copilot": copilot_messages}


def messages(pin: install.Pin, root: Path | None = None) -> set[str]:
    return EXTRACT[pin.agent](real_binary(pin, root))


# Where each CLI's installed package keeps what its messages are read from.
_SOURCES = {
    "claude": "@anthropic-ai/claude-code-linux-*/claude",
    "codex": "@openai/codex-linux-*/vendor/*/bin/codex",
    "gemini": "@google/gemini-cli/bundle",
    "opencode": "opencode-linux-*/bin/opencode",
    "copilot": "@github/copilot-linux-*/copilot",
}


def real_binary(pin: install.Pin, root: Path | None = None) -> Path:
    """The native binary (or the bundle's folder) that holds the messages (the npm command is a launcher)."""
    modules = (root or install.cache_root()) / pin.folder / "node_modules"
    candidates = sorted(modules.glob(_SOURCES[pin.agent]))
    if not candidates:
        raise FileNotFoundError(f"no {pin.agent} binary or bundle under {modules}")
    return candidates[0]


# --- the reviewed list ------------------------------------------------------------


def list_path(pin: install.Pin) -> Path:
    return DATA / f"walls-{pin.agent}-{pin.version}.txt"


def read_list(path: Path) -> Reviewed:
    found: list[Entry] = []
    drawn: list[Entry] = []
    target = found
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("# ") or line.strip() == "#":
            continue  # a comment (a message may itself start with `#`)
        if line.strip() == "[drawn]":
            target = drawn
            continue
        message, sep, rest = line.partition("\t")
        verdict, _, drawn_as = rest.partition("\t")
        if not sep or not verdict.strip():
            raise ValueError(f"{path}:{number}: expected '<message><TAB><kind or not a wall: why>[<TAB><as drawn>]'")
        target.append(Entry(message, verdict.strip(), drawn_as.strip()))
    return Reviewed(found, drawn)


def compare(found: set[str], reviewed: Reviewed) -> tuple[list[str], list[str]]:
    """(messages in the binary the list lacks, listed messages the binary no longer has)."""
    listed = {e.message for e in reviewed.found}
    return sorted(found - listed), sorted(listed - found)


def draft(found: set[str]) -> str:
    """A list to review: every message with a placeholder verdict."""
    return "".join(f"{m}\tTODO\n" for m in sorted(found))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="real-agents walls",
        description="Extract the usage-limit, spend, credit, admin, org, model-cap, quota, rate-limit, billing and plan messages from the pinned "
                    "CLIs' installed binaries and compare them with the reviewed lists "
                    "tests/data/real/walls-<cli>-<version>.txt.",
        epilog="Exit codes: 0 every message is reviewed; 1 a message is missing from the list (printed); "
               "2 the pinned CLI is not installed; 5 the list for the pinned version does not exist.",
    )
    parser.add_argument("agent", nargs="?", choices=list(EXTRACT), help="which CLI (default: every pinned one)")
    parser.add_argument("--draft", action="store_true",
                        help="print every extracted message with a TODO verdict, to start the list for a new version")
    args = parser.parse_args(argv)
    wanted = [args.agent] if args.agent else list(EXTRACT)
    status = 0
    for pin in (p for p in install.pins() if p.agent in wanted):
        if not install.installed(pin):
            print(f"walls: {pin.package}@{pin.version} is not installed: run scripts/real-agents install",
                  file=sys.stderr)
            return EXIT_NOT_INSTALLED
        found = messages(pin)
        if args.draft:
            sys.stdout.write(draft(found))
            continue
        path = list_path(pin)
        if not path.exists():
            print(f"walls: no reviewed list for {pin.agent} {pin.version}: {path} does not exist.\n"
                  f"  start one with: scripts/real-agents walls {pin.agent} --draft > {path}\n"
                  f"  then give each line its kind or 'not a wall: <why>'", file=sys.stderr)
            status = max(status, EXIT_NO_LIST)
            continue
        missing, gone = compare(found, read_list(path))
        for message in missing:
            print(f"walls: {pin.agent} {pin.version}: not in the list: {message}")
        for message in gone:
            print(f"walls: {pin.agent} {pin.version}: listed but no longer in the binary: {message}", file=sys.stderr)
        if missing:
            print(f"walls: {len(missing)} {pin.agent} message(s) to review: add each to {path} with its kind "
                  f"(or 'not a wall: <why>'), and a detector rule for each new wall", file=sys.stderr)
            status = max(status, EXIT_NEW)
        else:
            print(f"walls: {pin.agent} {pin.version}: all {len(found)} messages are reviewed", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
