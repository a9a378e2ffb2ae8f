"""The state database's schema: the migrations that build it, and the version they reach.

Its own module, with nothing but the standard library behind it, so a reader
(`afd status` with the daemon down) can check a file's version without
importing the writer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

# MIGRATIONS[i] takes a database from user_version i to i + 1. Append only:
# a released step is never edited, because databases in the field ran it.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE sessions (
        name TEXT PRIMARY KEY,
        pane_id TEXT NOT NULL,
        server_socket TEXT NOT NULL,
        server_pid INTEGER,
        agent TEXT,
        identity TEXT NOT NULL CHECK (identity IN ('known', 'unknown', 'none')),
        identity_source TEXT NOT NULL CHECK (identity_source IN ('process', 'user')),
        state TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        mission TEXT,
        worktree TEXT,
        branch TEXT,
        agent_pid INTEGER,
        agent_started_at REAL,
        last_banner TEXT,
        banner_first_seen_at TEXT,
        reset_at TEXT,
        next_action TEXT
    );
    CREATE TABLE limits (
        agent TEXT PRIMARY KEY,
        state TEXT NOT NULL CHECK (state IN ('limited', 'available', 'unknown')),
        reset_at TEXT,
        observed_at TEXT,
        source_session TEXT,
        banner TEXT
    );
    -- AUTOINCREMENT: ids are never reused after pruning, so a follower's
    -- cursor never skips or repeats an event.
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        session TEXT,
        kind TEXT NOT NULL,
        message TEXT NOT NULL,
        data TEXT NOT NULL DEFAULT '{}'
    );
    CREATE INDEX events_at ON events (at);
    CREATE TABLE journal (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        session TEXT NOT NULL,
        action TEXT NOT NULL,
        intent TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'done', 'rolled_back')),
        outcome TEXT,
        finished_at TEXT
    );
    CREATE INDEX journal_pending ON journal (state) WHERE state = 'pending';
    CREATE TABLE banners (
        session TEXT PRIMARY KEY,
        banner_text TEXT NOT NULL,
        first_seen_at TEXT NOT NULL,
        reset_at TEXT
    );
    CREATE TABLE ledger (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session TEXT NOT NULL,
        at TEXT NOT NULL,
        from_agent TEXT NOT NULL,
        to_agent TEXT NOT NULL,
        head_sha TEXT NOT NULL,
        reason TEXT NOT NULL,
        automatic INTEGER NOT NULL
    );
    CREATE INDEX ledger_session ON ledger (session, id);
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
    # 1 → 2: where the pane sits in tmux, for `afd status`.
    """
    ALTER TABLE sessions ADD COLUMN location TEXT;
    """,
    # → +1: what afd did about each session's limits (attempts, backoff), so a restart keeps them.
    """
    CREATE TABLE resume_history (
        session TEXT PRIMARY KEY,
        episode TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_sent_at TEXT,
        backoff_level INTEGER NOT NULL DEFAULT 0,
        relimited_at TEXT,
        unconfirmed INTEGER NOT NULL DEFAULT 0,
        retry_after TEXT,
        needs_human TEXT,
        first_seen_at TEXT,
        reset_at TEXT
    );
    """,
    # → next: which witnesses (pane, the agent's own records) say a session is limited.
    """
    ALTER TABLE sessions ADD COLUMN witnesses TEXT;
    """,
    # → +1, handoff: the ledger keeps the outgoing conversation, the base of the
    # branch's range, and the journal entry of its swap (one entry per swap).
    """
    ALTER TABLE ledger ADD COLUMN from_conversation TEXT;
    ALTER TABLE ledger ADD COLUMN base_sha TEXT;
    ALTER TABLE ledger ADD COLUMN journal_id INTEGER;
    CREATE UNIQUE INDEX ledger_journal ON ledger (journal_id) WHERE journal_id IS NOT NULL;
    """,
    # → +1: jobs (sessions that other sessions supervise), who owns them and
    # who owned them, handoff receipts, and the envelope outbox (afd/jobs/book.py).
    """
    CREATE TABLE jobs (
        name TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        owner TEXT NOT NULL,
        parent TEXT,
        agent TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'limited', 'done', 'failed', 'gone')),
        summary TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX jobs_owner ON jobs (owner);
    CREATE TABLE job_masters (
        job TEXT NOT NULL,
        master TEXT NOT NULL,
        rank INTEGER NOT NULL,
        PRIMARY KEY (job, master)
    );
    CREATE TABLE handoff_receipts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        from_owner TEXT NOT NULL,
        to_owner TEXT NOT NULL,
        jobs TEXT NOT NULL,
        note TEXT
    );
    CREATE TABLE ownership_history (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        job TEXT NOT NULL,
        at TEXT NOT NULL,
        from_owner TEXT,
        to_owner TEXT NOT NULL,
        receipt INTEGER
    );
    CREATE INDEX ownership_history_job ON ownership_history (job, id);
    CREATE TABLE outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL UNIQUE,
        job TEXT,
        to_session TEXT,
        kind TEXT NOT NULL,
        text TEXT NOT NULL,
        nonce TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'attempting', 'sent', 'consumed')),
        recipient TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX outbox_open ON outbox (state) WHERE state != 'consumed';
    """,
    # → +1: the wall an automatic handoff was tried for, and how it went (a restart does not try again).
    """
    ALTER TABLE resume_history ADD COLUMN handoff_wall TEXT;
    ALTER TABLE resume_history ADD COLUMN handoff_tried TEXT;
    """,
    # → +1, accounts: a limit belongs to an account, not to a program. The map
    # is keyed by account; what was known per agent is its default account's,
    # which is named after the agent. Sessions say their account, the ledger
    # the accounts of each handoff.
    """
    CREATE TABLE limits_by_account (
        account TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('limited', 'available', 'unknown')),
        reset_at TEXT,
        observed_at TEXT,
        source_session TEXT,
        banner TEXT
    );
    INSERT INTO limits_by_account (account, agent, state, reset_at, observed_at, source_session, banner)
        SELECT agent, agent, state, reset_at, observed_at, source_session, banner FROM limits;
    DROP TABLE limits;
    ALTER TABLE limits_by_account RENAME TO limits;
    ALTER TABLE sessions ADD COLUMN account TEXT;
    ALTER TABLE ledger ADD COLUMN from_account TEXT;
    ALTER TABLE ledger ADD COLUMN to_account TEXT;
    """,
    # → +1: when the agent last took a continuation of afd's (a confirmed resume). Evidence of a
    # wall from before it (a banner above the continuation, a rejection record) is history.
    """
    ALTER TABLE sessions ADD COLUMN continued_at TEXT;
    """,
    # → +1 (0.2.0): a session's next action is a typed value, stored as one JSON object; text
    # kept from before (a plan in words) becomes a report with those words. And the instant afd
    # started a session's agent and waits to see it run is the session's own (it was read from
    # the step of the action's journal row): set here for the rows 0.1.0 left waiting.
    """
    UPDATE sessions SET next_action = NULL WHERE next_action = '';
    UPDATE sessions SET next_action = json_object(
            'action', 'report', 'at', NULL, 'attempt', NULL, 'of', NULL, 'why', next_action)
        WHERE next_action IS NOT NULL AND NOT (json_valid(next_action)
            AND json_type(next_action) = 'object' AND json_type(next_action, '$.action') = 'text');
    ALTER TABLE sessions ADD COLUMN awaiting_since TEXT;
    UPDATE sessions SET awaiting_since = created_at WHERE agent_pid IS NULL AND name IN (
        SELECT session FROM journal WHERE state = 'pending' AND action = 'create'
            AND json_extract(intent, '$.step') = 'awaiting');
    UPDATE sessions SET awaiting_since = updated_at WHERE name IN (
        SELECT session FROM journal WHERE state = 'pending' AND action = 'resume'
            AND json_extract(intent, '$.step') = 'respawned');
    """,
    # → +1, the person's holds: a pause per session (afd types nothing into its pane by itself until
    # `until`, or until unpaused when NULL), and the wall whose planned resume the person cancelled.
    """
    CREATE TABLE pauses (
        session TEXT PRIMARY KEY,
        since TEXT NOT NULL,
        until TEXT
    );
    ALTER TABLE resume_history ADD COLUMN cancelled TEXT;
    """,
    # → +1, usage before the wall (afd/record/usage_book.py): each account's windows as its agent last
    # reported them, the samples a burn rate is read from, the usage.high alerts already given (once per
    # window, across restarts), the walls and working time calibration reads, each Claude Code
    # session's prompt cache, and the prompts held for a reset (`afd queue`, afd/record/queue_book.py).
    """
    CREATE TABLE usage_windows (
        account TEXT NOT NULL,
        limit_id TEXT NOT NULL DEFAULT '',
        window TEXT NOT NULL,
        agent TEXT NOT NULL,
        used_percent REAL,
        resets_at TEXT,
        window_minutes INTEGER,
        observed_at TEXT NOT NULL,
        source TEXT NOT NULL,
        plan_type TEXT,
        PRIMARY KEY (account, limit_id, window)
    );
    CREATE TABLE usage_samples (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        account TEXT NOT NULL,
        limit_id TEXT NOT NULL DEFAULT '',
        window TEXT NOT NULL,
        at TEXT NOT NULL,
        used_percent REAL,
        resets_at TEXT
    );
    CREATE INDEX usage_samples_at ON usage_samples (at);
    CREATE TABLE usage_alerts (
        key TEXT PRIMARY KEY,
        at TEXT NOT NULL
    );
    CREATE TABLE usage_stops (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        account TEXT NOT NULL,
        agent TEXT NOT NULL,
        at TEXT NOT NULL,
        busy_seconds REAL NOT NULL
    );
    CREATE TABLE usage_busy (
        account TEXT PRIMARY KEY,
        agent TEXT NOT NULL,
        since TEXT NOT NULL,
        seconds REAL NOT NULL,
        whole INTEGER NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE prompt_caches (
        account TEXT NOT NULL,
        session_id TEXT NOT NULL,
        cwd TEXT,
        transcript_path TEXT,
        warm INTEGER,
        expires_at TEXT,
        recache_tokens INTEGER,
        observed_at TEXT NOT NULL,
        PRIMARY KEY (account, session_id)
    );
    CREATE TABLE queue (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session TEXT NOT NULL,
        text TEXT NOT NULL,
        at_kind TEXT NOT NULL CHECK (at_kind IN ('reset', 'time')),
        due_at TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('waiting', 'delivering', 'delivered', 'unconfirmed', 'cancelled')),
        route TEXT,
        ref INTEGER,
        outcome TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX queue_open ON queue (state) WHERE state IN ('waiting', 'delivering');
    """,
    # → +1, secrets: notifiers were named by their URL's host and path (a webhook's key, an ntfy
    # topic), and an endpoint's reply (which may echo the bearer token) was kept whole. Events
    # stored so name them by type and host, cut every URL to its origin and drop the replies' words.
    """
    UPDATE events SET message = afd_scrub_message_v1(kind, message, data), data = afd_scrub_data_v1(kind, data)
        WHERE kind LIKE 'notify.%' OR kind LIKE 'config.%';
    """,
    # → +1, the fleet (afd/record/fleet_book.py): the hosts afd asks over ssh, how the last ask of each went,
    # and the limit facts each last told, keyed by host and account (a fact's source host).
    """
    CREATE TABLE hosts (
        name TEXT PRIMARY KEY,
        dest TEXT NOT NULL,
        port INTEGER,
        added_at TEXT NOT NULL,
        contact TEXT CHECK (contact IN ('answered', 'unreachable', 'refused', 'invalid', 'host-key-changed')),
        asked_at TEXT,
        answered_at TEXT,
        failing_since TEXT,
        error TEXT,
        skew REAL,
        version TEXT,
        host_key TEXT,
        answer TEXT
    );
    CREATE TABLE fleet_limits (
        host TEXT NOT NULL,
        account TEXT NOT NULL,
        agent TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('limited', 'available', 'unknown')),
        reset_at TEXT,
        observed_at TEXT,
        source_session TEXT,
        banner TEXT,
        PRIMARY KEY (host, account)
    );
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


# --- functions the migrations call --------------------------------------------
#
# Registered on the connection before migrating. Like the steps, they are
# frozen once released: a database in the field ran them as they were.

_REDACTED = "<redacted>"
_URL_V1 = re.compile(r"([a-z][a-z0-9+.-]*)://([^/\s?#\"'<>]+)([^\s\"'<>]*)", re.IGNORECASE)
_RECOVERED_V1 = re.compile(r"(.*) works again \((HTTP \d{3}): .*\); (\d+ messages? could not be sent meanwhile)", re.DOTALL)
_OLD_LABEL_V1 = re.compile(r"(ntfy|webhook) (\S+)")
_REPLY_V1 = re.compile(r"^(HTTP \d{3})(: .*)?$", re.DOTALL)
_BEARER_V1 = re.compile(r"(Bearer\s+)\S+", re.IGNORECASE)


def _cut_urls_v1(text: str) -> str:
    def cut(match: re.Match[str]) -> str:
        host = match.group(2).rpartition("@")[2]
        rest = match.group(3).strip("/")
        return f"{match.group(1)}://{host}" + (f"/{_REDACTED}" if rest or "@" in match.group(2) else "")

    return _BEARER_V1.sub(rf"\g<1>{_REDACTED}", _URL_V1.sub(cut, text))


def _label_v1(label: str) -> str:
    old = _OLD_LABEL_V1.fullmatch(label)
    if old is None:
        return _cut_urls_v1(label)  # a name the user gave
    host = old.group(2).split("/", 1)[0].rpartition("@")[2]
    return f"{old.group(1)} {host}"


def _detail_v1(detail: str) -> str:
    reply = _REPLY_V1.match(detail)
    if reply is not None and reply.group(2):
        return f"{reply.group(1)}: {_REDACTED}"  # the endpoint's words: they may echo the token
    return _cut_urls_v1(detail)


def _data_v1(data: str | None) -> dict:
    try:
        found = json.loads(data or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def scrub_message_v1(kind: str, message: str, data: str | None) -> str:
    if not isinstance(message, str):
        return message
    if kind == "notify.recovered" and (recovered := _RECOVERED_V1.fullmatch(message)) is not None:
        message = f"{recovered.group(1)} works again ({recovered.group(2)}: {_REDACTED}); {recovered.group(3)}"
    if kind.startswith("notify."):
        found = _data_v1(data)
        for key, scrub in (("notifier", _label_v1), ("detail", _detail_v1)):
            value = found.get(key)
            if isinstance(value, str) and value:
                message = message.replace(value, scrub(value))
    return _cut_urls_v1(message)


def scrub_data_v1(kind: str, data: str | None) -> str | None:
    if not kind.startswith("notify.") or not data:
        return data
    found = _data_v1(data)
    if isinstance(found.get("notifier"), str):
        found["notifier"] = _label_v1(found["notifier"])
    if isinstance(found.get("detail"), str):
        found["detail"] = _detail_v1(found["detail"])
    return json.dumps(found, sort_keys=True)


SQL_FUNCTIONS: dict[str, tuple[int, Callable[..., str | None]]] = {
    "afd_scrub_message_v1": (3, scrub_message_v1),
    "afd_scrub_data_v1": (2, scrub_data_v1),
}
