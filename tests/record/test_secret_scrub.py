"""The migration that takes notifiers' secrets out of the events an earlier afd stored, after a backup."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone

from afd.model import Event
from afd.record.store import MIGRATIONS, SCHEMA_VERSION, Store

T = datetime(2026, 1, 1, tzinfo=timezone.utc)
SCRUB_STEP = next(i for i, m in enumerate(MIGRATIONS) if "afd_scrub_message_v1" in m)
KEY = "abcdefghijklmnopqrstuvwx"
TOKEN = "tk_9Zq7Lm2Xw4Vb8Nc1"
OLD_LABEL = f"webhook hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/{KEY}"
TOPIC_LABEL = "ntfy ntfy.sh/afd-laptop-7f3k2"

# What the earlier afd stored: its courier's words, with the label of netloc and path, and the reply whole.
OLD_EVENTS = [
    Event(at=T, kind="notify.failed",
          message=f"{OLD_LABEL} could not be told (HTTP 401: invalid token {TOKEN}; gave up at the first attempt): "
                  "shop-fix needs you. Further failures are not reported until a message gets through",
          data={"notifier": OLD_LABEL, "detail": f"HTTP 401: invalid token {TOKEN}", "attempts": 1}),
    Event(at=T, kind="notify.recovered",
          message=f"{TOPIC_LABEL} works again (HTTP 200: published to afd-laptop-7f3k2 by Bearer {TOKEN}); "
                  "2 messages could not be sent meanwhile",
          data={"notifier": TOPIC_LABEL, "lost": 2}),
    Event(at=T, kind="notify.failed", message="phone could not be told (connection refused; gave up after 3 attempts): x",
          data={"notifier": "phone", "detail": "connection refused", "attempts": 3}),
    Event(at=T, kind="config.invalid",
          message=f'config.toml:4: notify[1].url: must be an http:// or https:// URL with a host, got "ftp://hooks.example/{KEY}"'),
    Event(at=T, kind="session.needs_human", session="shop", message="needs you: see https://claude.ai/upgrade/max"),
]


def test_old_events_lose_every_notifier_secret_and_the_backup_keeps_them(tmp_path):
    db = tmp_path / "state.db"
    with Store(db, migrations=MIGRATIONS[:SCRUB_STEP]) as old:
        for event in OLD_EVENTS:
            old.add_event(event)
    with Store(db) as new:
        assert new.backup_path is not None
        events = [e.event for e in new.recent_events()]
    failed, recovered, phone, invalid, other = events
    assert failed.message == ("webhook hooks.slack.com could not be told (HTTP 401: <redacted>; gave up at the first "
                              "attempt): shop-fix needs you. Further failures are not reported until a message gets through")
    assert failed.data == {"notifier": "webhook hooks.slack.com", "detail": "HTTP 401: <redacted>", "attempts": 1}
    assert recovered.message == "ntfy ntfy.sh works again (HTTP 200: <redacted>); 2 messages could not be sent meanwhile"
    assert recovered.data == {"notifier": "ntfy ntfy.sh", "lost": 2}
    assert (phone.message, phone.data) == (OLD_EVENTS[2].message, OLD_EVENTS[2].data)  # nothing secret: unchanged
    assert invalid.message.endswith('got "ftp://hooks.example/<redacted>"')
    assert other.message == OLD_EVENTS[4].message  # not a notifier's or the config's: left alone

    on_disk = db.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("state.db-*") if p.is_file())
    for secret in (KEY, TOKEN, "afd-laptop-7f3k2"):
        assert secret.encode() not in on_disk, secret
    kept = sqlite3.connect(new.backup_path)
    try:
        assert kept.execute("PRAGMA user_version").fetchone()[0] == SCRUB_STEP
        assert json.loads(kept.execute("SELECT data FROM events WHERE id = 1").fetchone()[0])["notifier"] == OLD_LABEL
    finally:
        kept.close()
    assert SCRUB_STEP < SCHEMA_VERSION
