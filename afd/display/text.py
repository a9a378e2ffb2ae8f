"""Text that came from outside, made safe to show a person: `neutral`.

Pane titles, session names, missions taken from an agent's argv, banners,
endpoints' replies and account names are written by programs afd does not
control. Printed raw, an escape sequence in them moves the cursor, rewrites
what is on screen, sets the window title or, on some terminals, writes to
the clipboard; a carriage return hides the start of a line; bidirectional
overrides show text in another order than it runs ("Trojan Source"); a lone
surrogate (a byte afd could not decode) makes the print itself fail. Each
such character is shown instead as an escape a person can read (`\\x1b`).

Rich markup needs no escaping here: human output hands outside text to
rich as `rich.text.Text`, which never parses markup (`cell`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

# C0, DEL and C1 (Unicode's "Cc"), the bidirectional marks, embeddings,
# overrides and isolates, the line and paragraph separators, and surrogates.
_HOSTILE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")
_LINE_BREAK = re.compile("\r\n|[\n\u2028\u2029]")
_ONE_LINE_BREAK = re.compile("(?:\r\n|[\n\u2028\u2029])+")


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    if char == "\t":
        return " "
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutral(text: object, *, lines: bool = False) -> str:
    """`text` as a person may safely read it: every control and reordering character shown as an escape.

    A tab is a space. Line breaks become one space each run, unless `lines`
    keeps them (as `\\n`); a lone carriage return is always escaped, since it
    sends the cursor back over what the line said. Text with none of these
    comes back unchanged, and `neutral(neutral(x)) == neutral(x)`.
    """
    text = text if isinstance(text, str) else str(text)
    if _HOSTILE.search(text) is None:
        return text
    if lines:
        return "\n".join(_HOSTILE.sub(_escape, part) for part in _LINE_BREAK.split(text))
    return _HOSTILE.sub(_escape, _ONE_LINE_BREAK.sub(" ", text))


def cell(text: object, style: str = "") -> Text:
    """Outside text for a rich table or line: neutral, and never read as markup (`[red]` stays `[red]`)."""
    from rich.text import Text

    return Text(neutral(text), style=style)
