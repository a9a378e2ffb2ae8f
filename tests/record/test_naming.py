"""Which session a name a person types means (`afd resume shop-api`), as a table."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from afd.errors import EXIT_USAGE
from afd.record.naming import NameAmbiguous, NameNotFound, resolve
from afd.record.types import SessionRecord

NOW = datetime(2026, 7, 13, 12, 0, tzinfo=timezone.utc)


def rec(name: str, pane: str, location: str | None, state: str = "limited") -> SessionRecord:
    return SessionRecord(name=name, pane_id=pane, server_socket="/tmp/tmux-1000/default", server_pid=1, agent="claude",
                         identity="known", identity_source="process", state=state, created_at=NOW, updated_at=NOW,
                         location=location)  # type: ignore[arg-type]


SESSIONS = [
    rec("shop-api:0.0", "%3", "shop-api:0.0"),
    rec("blog", "%5", "web:1.0"),
    rec("notes", "%6", "web:1.1"),
    rec("old", "%7", "gone-one:0.0", state="gone"),
    rec("web", "%9", "other:0.0", state="gone"),  # an afd name that is also a tmux session of live panes
    rec("%1", "%8", "pct:0.0"),  # an afd name that looks like a pane id
]

FOUND = [
    ("the afd name", "shop-api:0.0", "shop-api:0.0"),
    ("the tmux session name", "shop-api", "shop-api:0.0"),
    ("session:window", "shop-api:0", "shop-api:0.0"),
    ("session:window.pane", "web:1.1", "notes"),
    ("the pane id", "%5", "blog"),
    ("an exact afd name wins over tmux's names, even a gone one", "web", "web"),
    ("an exact afd name wins over a pane id", "%1", "%1"),
    ("a gone session by its afd name", "old", "old"),
]


@pytest.mark.parametrize(("typed", "name"), [c[1:] for c in FOUND], ids=[c[0] for c in FOUND])
def test_any_unambiguous_name_finds_the_session(typed, name):
    assert resolve(typed, SESSIONS).name == name


def test_a_name_two_live_sessions_answer_to_is_an_error_listing_both():
    sessions = [s for s in SESSIONS if s.name != "web"]
    with pytest.raises(NameAmbiguous) as caught:
        resolve("web", sessions)
    assert caught.value.candidates == ("blog", "notes") and caught.value.code == EXIT_USAGE
    assert str(caught.value) == "'web' names 2 sessions: blog (web:1.0 %5), notes (web:1.1 %6); give one of their names"


@pytest.mark.parametrize("typed", ["gone-one", "%7", "nothing", "shop", "shop-api:0.0.0"], ids=["gone-tmux-session", "gone-pane",
                                                                                          "unknown", "prefix", "too-long"])
def test_a_name_no_live_session_answers_to_is_not_found(typed):
    with pytest.raises(NameNotFound) as caught:
        resolve(typed, SESSIONS)
    assert caught.value.code == EXIT_USAGE and "sessions: shop-api:0.0, blog, notes, old, web, %1" in str(caught.value)
