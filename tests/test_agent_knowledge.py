"""What afd knows about one agent is its plugin's: core code names no agent and quotes no agent's screen.

An agent's name in a comparison, or a phrase of its screen in a regex, is
knowledge a third-party agent's plugin could never supply; it belongs in
the agent's `AgentSpec` (or its detector), which core code reads.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from afd.pluginset import load_plugins
from afd.testing import banners, screens

AFD = Path(__file__).resolve().parents[1] / "afd"
# Where naming an agent is the point: fakes and scenarios for tests and the demo. Help texts and
# examples may mention agents; code must not compare with one, which is a string that is just its name.
NAMES_ALLOWED = ("testing/", "cli/demo")
AGENT_NAME = re.compile(r"[rbuf]*(['\"])(claude|codex|devin)\1", re.IGNORECASE)
# Text afd types or shows in its own words that happens to share three words with an agent's screen.
OWN_WORDS = {("act/deliver.py", "your usage limit")}  # the default continuation: "Your usage limit has reset. …"


def _string_literals(source: str):
    """String tokens that are not docstrings or comments (a docstring is a string statement of its own)."""
    previous = tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING and previous not in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL):
            yield tok
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            previous = tok.type


def _core_modules():
    for path in sorted(AFD.rglob("*.py")):
        rel = path.relative_to(AFD).as_posix()
        if not rel.startswith(NAMES_ALLOWED):
            yield rel, path.read_text()


def _words(text: str) -> str:
    """Lower-case words only: a regex's escapes (`\\b`, `\\s`) and punctuation are not words."""
    text = re.sub(r"\\[A-Za-z]", " ", text)
    return " ".join(re.sub(r"[^a-z' ]", " ", text.lower()).split())


def _agent_phrases() -> set[str]:
    """Every run of three words the agents draw: their walls and screens as the fakes draw them, and what
    their plugins' specs match (busy rows, chrome, menus, auto-continue rows, placeholders)."""
    shown: list[str] = []
    for family in banners.FAMILIES:
        shown += banners.render(family)
    for agent in ("claude", "codex", "devin"):
        for status in (None, screens.spinner(agent, 3.0)):
            shown += screens.draw(screens.Screen(agent=agent, width=120, height=40, cwd="/w", transcript=(), status=status, composer=""))
    for spec in load_plugins(None, entry_points=False).agents.values():
        shown += spec.input_placeholders
        shown += [p.pattern for p in (*spec.busy, *spec.chrome, *spec.auto_continue_armed, *spec.auto_continue_cancelled)]
        shown += [f"{m.pattern.pattern} {m.answer or ''} {m.ask}" for m in spec.limit_menus]
    phrases = set()
    for row in shown:
        words = _words(row).split()
        phrases.update(" ".join(words[i:i + 3]) for i in range(len(words) - 2))
    return phrases


def test_no_core_module_names_an_agent():
    found = [
        f"afd/{rel}:{tok.start[0]}: {tok.string}"
        for rel, source in _core_modules()
        for tok in _string_literals(source)
        if AGENT_NAME.fullmatch(tok.string)
    ]
    assert not found, "\n".join(found)


def test_the_scan_for_agent_text_knows_what_the_agents_draw():
    phrases = _agent_phrases()
    # What the resume executor used to match by itself: now each is a spec's.
    assert {"stop and wait", "keep current model", "esc to interrupt", "automatic continue cancelled"} <= phrases
    assert len(phrases) > 200


def test_no_core_module_quotes_an_agents_screen():
    phrases = _agent_phrases()
    found = []
    for rel, source in _core_modules():
        for tok in _string_literals(source):
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):
                continue  # an f-string: its literal parts are afd's sentences around values
            if not isinstance(value, str):
                continue
            words = f" {_words(value)} "
            found += [f"afd/{rel}:{tok.start[0]}: {phrase!r} in {tok.string[:60]}"
                      for phrase in phrases if f" {phrase} " in words and (rel, phrase) not in OWN_WORDS]
    assert not found, "\n".join(found)
