"""Notifiers without a daemon: config, words, collapsing, and each type against a local endpoint or program."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from endpoint import free_port, start_endpoint

from afd.config.notifiers import DEFAULT_EVENTS, NotifierSettings, wants
from afd.config.settings import ConfigError, load_config
from afd.model import Event
from afd.notifiers import builtin
from afd.notifiers.answer import Outcome
from afd.notifiers.collapse import Collapser
from afd.notifiers.courier import Courier
from afd.notifiers.message import About, compose
from harness import wait_for

NOW = datetime(2026, 7, 13, 13, 50, tzinfo=timezone.utc)
ZONE = ZoneInfo("Europe/Berlin")  # 15:50 there
SHOP = About(agent="claude", location="shop:1.0", pane="%3", worktree="/srv/shop-fix", branch="afd/shop-fix",
             reset_at=NOW + timedelta(hours=1, minutes=12))


@pytest.fixture
def endpoint():
    ep = start_endpoint()
    yield ep
    ep.stop()


def notice_for(kind="session.needs_human", message="needs you: add credits (spend cap)", session="shop-fix", **data):
    event = Event(at=NOW, kind=kind, message=message, session=session, data=data)
    return event, compose(event, SHOP if session else None, now=NOW, zone=ZONE, host="laptop", event_id=7)


def private_token(tmp_path: Path, text: str = "s3cret-token") -> Path:
    path = tmp_path / "token"
    path.write_text(text + "\n")
    path.chmod(0o600)
    return path


# --- config ---------------------------------------------------------------


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_notify_tables_are_read_with_their_defaults(tmp_path):
    token = private_token(tmp_path)
    config = load_config(write(tmp_path, f"""
[[notify]]
type = "desktop"

[[notify]]
type = "ntfy"
url = "https://ntfy.example.org/afd-laptop"
token_file = "{token}"
events = ["session."]
min_interval = "5m"
"""))
    desktop, ntfy = config.notify
    assert (desktop.type, desktop.events, desktop.min_interval, desktop.timeout) == ("desktop", DEFAULT_EVENTS, 60.0, 10.0)
    assert (ntfy.number, ntfy.url, ntfy.token_file, ntfy.events, ntfy.min_interval) == (
        2, "https://ntfy.example.org/afd-laptop", token, ("session.",), 300.0)


@pytest.mark.parametrize(
    ("table", "line", "expected"),
    [
        pytest.param('type = "pager"', 3, 'notify[1].type: must be "desktop" or "ntfy" or "webhook" or "command"', id="unknown-type"),
        pytest.param('type = "ntfy"', 2, "notify[1].url: type \"ntfy\" needs url", id="missing-url"),
        pytest.param('type = "webhook"\nurl = "ftp://x/y"', 4, "notify[1].url: must be an http:// or https:// URL", id="bad-url"),
        pytest.param('type = "desktop"\nurl = "http://x/"', 4, 'notify[1].url: is not used by type "desktop"', id="key-of-another-type"),
        pytest.param('type = "webhook"\nurl = "https://x/"\nevents = ["notify.failed"]', 5, "notify.* events are never sent", id="own-events"),
        pytest.param('type = "command"\nargv = []', 4, "notify[1].argv: must name the program", id="empty-argv"),
        pytest.param('type = "desktop"\nmin_intervall = "1m"', 4, 'did you mean "min_interval"', id="typo"),
        pytest.param('type = "webhook"\nurl = "https://x/"\ntoken_file = "/nonexistent/token"', 5, "does not exist", id="no-token-file"),
    ],
)
def test_a_bad_notify_table_is_named_with_its_line(tmp_path, table, line, expected):
    path = write(tmp_path, f"\n[[notify]]\n{table}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    problem = caught.value.problems[0]
    assert expected in str(problem) and problem.line == line, str(problem)


def test_a_token_file_others_can_read_is_refused(tmp_path):
    token = private_token(tmp_path)
    token.chmod(0o644)
    with pytest.raises(ConfigError, match="readable by others .*chmod 600"):
        load_config(write(tmp_path, f'[[notify]]\ntype = "ntfy"\nurl = "https://n.example/t"\ntoken_file = "{token}"\n'))


def test_the_second_table_is_named_by_its_own_line(tmp_path):
    path = write(tmp_path, '[[notify]]\ntype = "desktop"\n\n[[notify]]\ntype = "webhook"\nurl = "gopher://x"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value.problems[0]).endswith(':6: notify[2].url: must be an http:// or https:// URL with a host, got "gopher://x"')


@pytest.mark.parametrize(
    ("patterns", "kind", "wanted"),
    [
        pytest.param(DEFAULT_EVENTS, "session.needs_human", True, id="default-needs-human"),
        pytest.param(DEFAULT_EVENTS, "session.limited", False, id="default-not-limited"),
        pytest.param(("session.",), "session.limited", True, id="prefix"),
        pytest.param(("resume.*",), "resume.failed", True, id="prefix-star"),
        pytest.param(("*",), "notify.failed", False, id="never-own-events"),
        pytest.param(("session",), "session.limited", False, id="no-dot-is-no-prefix"),
    ],
)
def test_events_filter_by_kind_and_prefix(patterns, kind, wanted):
    assert wants(patterns, kind) is wanted


# --- words ------------------------------------------------------------------


def test_a_spend_cap_reads_like_a_person_wrote_it():
    _, notice = notice_for(why="add credits (spend cap)")
    assert notice.text == "shop-fix (claude) needs you: spend cap — add credits; then: afd resume shop-fix"
    assert notice.title == "shop-fix needs you" and notice.priority == 4
    assert notice.where == "shop:1.0 (%3) · /srv/shop-fix · afd/shop-fix"


def test_all_limited_gives_the_earliest_reset_in_the_users_zone():
    _, notice = notice_for("session.all_limited", "all agents limited (…)", earliest_reset="2026-07-13T15:02:00Z")
    assert notice.text == "all agents limited; earliest reset 17:02 (in 1h12m); shop-fix (claude) waits"


def test_an_instant_in_the_events_words_reaches_the_person_in_their_zone():
    # The stored message keeps ISO UTC (the payload says so); the words a person reads do not.
    event, notice = notice_for("resume.scheduled", "resume at 2026-07-13T15:02:05Z (attempt 1 of 3)")
    assert notice.text == "shop-fix (claude): resume at 17:02 (in 1h12m) (attempt 1 of 3)"
    assert notice.payload["message"] == event.message and notice.payload["at"] == "2026-07-13T13:50:00Z"


def test_text_from_outside_in_a_notice_is_neutral():
    event = Event(at=NOW, kind="session.handoff", message="handed off: \x1b]0;pwned\x07done\rEVIL",
                  session="shop\x1b[2J", data={"to": "codex"})
    about = About(agent="claude", location="shop\x1b[2J:1.0", worktree="/srv/\u202eexe.txt")
    notice = compose(event, about, now=NOW, zone=ZONE, host="laptop")
    for shown in (notice.title, notice.text, notice.where):
        assert not any(c in shown for c in "\x1b\x07\r\u202e"), shown
    assert "\\x1b]0;pwned\\x07done\\x0dEVIL" in notice.text and "\\u202eexe.txt" in notice.where


def test_the_default_events_are_every_stop_that_leaves_the_next_step_to_a_person():
    assert DEFAULT_EVENTS == ("session.waiting", "session.needs_human", "session.all_limited", "resume.failed",
                              "handoff.refused", "handoff.rolled-back")
    assert not wants(DEFAULT_EVENTS, "session.limited")  # afd is often about to act on it
    # A notifier with its own list keeps it.
    assert NotifierSettings("webhook", 1, events=("session.limited",)).events == ("session.limited",)


WHAT_NEXT = [
    ("a wall afd leaves to you says so and what to run",
     dict(kind="session.waiting", message="afd will not act on this wall; it waits for you: resume with: afd resume shop-fix",
          why="report", next="resume with: afd resume shop-fix", reset_at="2026-07-13T15:02:00Z"),
     "shop-fix waits for you",
     "shop-fix (claude) is at its usage limit (resets 17:02 (in 1h12m)). afd will not act on this wall; "
     "it waits for you: resume with: afd resume shop-fix"),
    ("a failed resume says what afd does next",
     dict(kind="resume.failed", message="the pasted text never showed in the agent's input row",
          next="afd tries again in 30 s at the earliest (attempt 2 of 5)"),
     "shop-fix: resume failed",
     "shop-fix (claude): a resume failed — the pasted text never showed in the agent's input row; "
     "afd tries again in 30 s at the earliest (attempt 2 of 5)"),
    ("a refused handoff says why and what afd does instead",
     dict(kind="handoff.refused", message="no automatic handoff to codex: codex is at its usage limit; the wait path applies",
          to="codex", why="codex is at its usage limit", next="afd falls back to waiting, and resumes it when its limit resets"),
     "shop-fix: handoff refused",
     "shop-fix (claude): the handoff to codex was refused — codex is at its usage limit; "
     "afd falls back to waiting, and resumes it when its limit resets"),
    ("a rolled-back handoff says the session is as it was and what to run",
     dict(kind="handoff.rolled-back", message="handoff to codex rolled back: codex did not start", to="codex",
          next="the session is as it was; afd tries an automatic handoff once a wall, so resume with: afd resume shop-fix, "
               "or hand off with: afd handoff shop-fix --to AGENT"),
     "shop-fix: handoff rolled back",
     "shop-fix (claude): the handoff to codex was rolled back — codex did not start; the session is as it was; afd tries an "
     "automatic handoff once a wall, so resume with: afd resume shop-fix, or hand off with: afd handoff shop-fix --to AGENT"),
]


@pytest.mark.parametrize(("event", "title", "text"), [c[1:] for c in WHAT_NEXT], ids=[c[0] for c in WHAT_NEXT])
def test_each_default_message_says_what_afd_does_next_or_what_to_run(event, title, text):
    _, notice = notice_for(**event)
    assert (notice.title, notice.text, notice.priority) == (title, text, 4)


def test_the_payload_is_the_event_as_events_json_prints_it_plus_agent_account_host():
    event, notice = notice_for()
    assert notice.payload == {
        "id": 7, "at": "2026-07-13T13:50:00Z", "session": "shop-fix", "kind": "session.needs_human",
        "message": event.message, "agent": "claude", "account": None, "host": "laptop",
        "where": notice.where, "text": notice.text,
    }


# --- collapsing ---------------------------------------------------------------


def test_repeats_inside_the_interval_become_one_message_with_a_count():
    c: Collapser[str] = Collapser(60)
    assert c.offer("k", "first", 0) == "first"
    assert c.offer("k", "second", 10, stamp="t10") is None
    assert c.offer("k", "third", 20) is None
    assert c.offer("other", "elsewhere", 20) == "elsewhere"  # another session or kind is not held
    assert c.due(59) == [] and c.next_due() == 60
    [held] = c.due(60)
    assert (held.message, held.count, held.since) == ("third", 2, "t10")
    assert c.offer("k", "fourth", 70) is None  # the window after a summary holds too
    assert c.due(200)[0].count == 1 and c.due(400) == [] and c.offer("k", "fifth", 400) == "fifth"


def test_min_interval_zero_collapses_nothing():
    c: Collapser[str] = Collapser(0)
    assert [c.offer("k", m, 0) for m in "ab"] == ["a", "b"]


# --- each type, one attempt -----------------------------------------------------


def test_ntfy_sends_title_priority_tags_and_the_bearer_token_from_its_file(endpoint, tmp_path):
    settings = NotifierSettings(type="ntfy", number=1, url=endpoint.url("/afd-laptop"), token_file=private_token(tmp_path))
    got = builtin.send_once(settings, notice_for()[1])
    assert got.outcome is Outcome.SENT, got
    [req] = endpoint.on("/afd-laptop")
    assert req.headers["Title"] == "shop-fix needs you"
    assert req.headers["Priority"] == "4" and req.headers["Tags"] == "warning"
    assert req.headers["Authorization"] == "Bearer s3cret-token"
    assert req.body.decode() == "shop-fix (claude) needs you: spend cap — add credits; then: afd resume shop-fix\nshop:1.0 (%3) · /srv/shop-fix · afd/shop-fix"


def test_a_redirect_is_not_followed_and_the_token_goes_nowhere_else(endpoint, tmp_path):
    elsewhere = start_endpoint()
    try:
        endpoint.behaviour["/hook"] = ("redirect", elsewhere.url("/steal"))
        settings = NotifierSettings(type="webhook", number=1, url=endpoint.url(), token_file=private_token(tmp_path))
        got = builtin.send_once(settings, notice_for()[1])
        assert got.outcome is Outcome.FAILED and "redirects are not followed" in got.detail
        assert endpoint.on("/hook")[0].headers["Authorization"] == "Bearer s3cret-token"
        assert elsewhere.requests == []
    finally:
        elsewhere.stop()


def test_a_50_mb_reply_is_not_read(endpoint):
    endpoint.behaviour["/hook"] = "big"
    got = builtin.send_once(NotifierSettings(type="webhook", number=1, url=endpoint.url()), notice_for()[1])
    assert got.outcome is Outcome.SENT and got.detail.startswith("HTTP 200")


def test_an_endpoint_that_does_not_answer_is_cut_off_at_the_timeout(endpoint):
    endpoint.behaviour["/hook"] = "hold"
    got = builtin.send_once(NotifierSettings(type="webhook", number=1, url=endpoint.url(), timeout=0.5), notice_for()[1])
    assert (got.outcome, got.detail) == (Outcome.RETRY, "no answer within 0.5s")
    assert endpoint.answered == 0  # still held when afd gave up


def test_a_refused_connection_is_worth_a_retry():
    got = builtin.send_once(NotifierSettings(type="webhook", number=1, url=f"http://127.0.0.1:{free_port()}/"), notice_for()[1])
    assert (got.outcome, got.detail) == (Outcome.RETRY, "connection refused")


def test_a_command_gets_the_events_json_on_stdin(tmp_path):
    out = tmp_path / "got.json"
    script = tmp_path / "on-afd-event"
    script.write_text(f"#!{sys.executable}\nimport sys\nopen({str(out)!r}, 'w').write(sys.stdin.read())\nprint('noted')\n")
    script.chmod(0o700)
    event, notice = notice_for()
    got = builtin.send_once(NotifierSettings(type="command", number=1, argv=(str(script),)), notice)
    assert (got.outcome, got.detail) == (Outcome.SENT, "exit 0: noted")
    assert json.loads(out.read_text()) == notice.payload


def test_a_command_that_hangs_is_stopped_with_what_it_started(tmp_path):
    pidfile = tmp_path / "child.pid"
    settings = NotifierSettings(type="command", number=1, timeout=0.5,
                                argv=("/bin/sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"))
    got = builtin.send_once(settings, notice_for()[1])
    assert got.outcome is Outcome.RETRY and "did not finish within 0.5s" in got.detail
    child = int(pidfile.read_text())
    wait_for(lambda: not _running(child), message="the command's child gone")


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_desktop_uses_notify_send_on_the_session_bus(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    seen = tmp_path / "argv"
    fake = bindir / "notify-send"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$DBUS_SESSION_BUS_ADDRESS\" \"$@\" > {seen}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus")
    got = builtin.send_once(NotifierSettings(type="desktop", number=1), notice_for()[1])
    assert got.outcome is Outcome.SENT
    assert seen.read_text().splitlines() == [
        "unix:path=/run/user/1000/bus", "--app-name=afd", "--urgency=normal", "--", "shop-fix needs you",
        "shop-fix (claude) needs you: spend cap — add credits; then: afd resume shop-fix", "shop:1.0 (%3) · /srv/shop-fix · afd/shop-fix",
    ]


def test_desktop_without_a_session_bus_says_so(monkeypatch, tmp_path):
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    got = builtin.send_once(NotifierSettings(type="desktop", number=1), notice_for()[1])
    assert got.outcome is Outcome.FAILED and "no D-Bus session bus" in got.detail


# --- the lane: retries, giving up once, coming back ------------------------------------


class Reports(list):
    def __call__(self, kind, message, data):
        self.append((kind, message, data))


def test_a_500_is_retried_until_it_gets_through(endpoint):
    endpoint.behaviour["/hook"] = ["fail", "fail", "ok"]
    reports = Reports()
    lane = Courier(NotifierSettings(type="webhook", number=1, url=endpoint.url(), min_interval=0, retry_for=30),
                   builtin.SENDERS["webhook"], reports)
    try:
        lane.offer(*notice_for())
        wait_for(lambda: endpoint.answered == 3, timeout=20, message="three attempts")
    finally:
        lane.close(5)
    assert reports == []


def test_a_dead_endpoint_is_reported_once_and_its_return_once():
    port = free_port()
    reports = Reports()
    lane = Courier(NotifierSettings(type="webhook", number=1, url=f"http://127.0.0.1:{port}/hook", min_interval=0,
                                    retry_for=0.5, timeout=2), builtin.SENDERS["webhook"], reports)
    ep = None
    try:
        for n in range(3):
            lane.offer(*notice_for(message=f"needs you: {n}"))
        wait_for(lambda: reports, timeout=20, message="the failure report")
        ep = start_endpoint(port)
        lane.offer(*notice_for(message="needs you: again"))
        wait_for(lambda: len(reports) == 2, timeout=20, message="the recovery report")
    finally:
        lane.close(5)
        if ep is not None:
            ep.stop()
    (failed, message, data), (recovered, back, back_data) = reports
    assert failed == "notify.failed" and "connection refused" in message, (message, data)
    assert data["attempts"] >= 1, data
    # The two queued behind the first fail fast while the lane is failing, or, when the
    # endpoint is back before the lane reaches them, go through: each is one or the other.
    early = [r.json()["message"] for r in ep.requests if r.json()["message"] != "needs you: again"]
    assert recovered == "notify.recovered" and back_data["lost"] + len(early) == 2, (back_data, early)
    assert [r.json()["message"] for r in ep.requests][-1] == "needs you: again"


def test_notify_test_prints_each_answer(endpoint, tmp_path, xdg_dirs):
    refused = free_port()
    config = write(tmp_path, f"""
[[notify]]
type = "webhook"
url = "{endpoint.url()}"

[[notify]]
type = "ntfy"
name = "phone"
url = "http://127.0.0.1:{refused}/t"
""")
    done = subprocess.run([sys.executable, "-m", "afd", "notify", "test", "--config", str(config), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    answers = {r["name"]: (r["sent"], r["answer"]) for r in json.loads(done.stdout)["notifiers"]}
    assert answers == {f"webhook http://127.0.0.1:{endpoint.port}": (True, "HTTP 200: ok"), "phone": (False, "connection refused")}
    assert endpoint.requests[0].json()["kind"] == "notify.test"
    only = subprocess.run([sys.executable, "-m", "afd", "notify", "test", "--config", str(config), "--type", "webhook"],
                          capture_output=True, text=True, timeout=60)
    assert only.returncode == 0 and only.stdout == f"notify[1] webhook http://127.0.0.1:{endpoint.port}: sent: HTTP 200: ok\n"
    none = subprocess.run([sys.executable, "-m", "afd", "notify", "test", "--config", str(config), "--type", "desktop"],
                          capture_output=True, text=True, timeout=60)
    assert none.returncode == 1 and none.stderr == f"afd: no notifier of type desktop in {config} (configured: ntfy, webhook)\n"


def test_notify_test_shows_an_endpoints_reply_as_text(endpoint, tmp_path, xdg_dirs):
    endpoint.behaviour["/hook"] = "hostile"
    config = write(tmp_path, f'[[notify]]\ntype = "webhook"\nname = "hook"\nurl = "{endpoint.url()}"\n')
    done = subprocess.run([sys.executable, "-m", "afd", "notify", "test", "--config", str(config)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "FAILED" in done.stdout
    assert "\x1b" not in done.stdout and "\r" not in done.stdout, repr(done.stdout)
    assert "\\x1b]0;pwned\\x07\\x1b[2Jgone" in done.stdout, done.stdout


# --- the worker and the plugin API -------------------------------------------------


def test_every_afd_event_plugin_runs_on_the_worker_and_never_gets_notify_events(tmp_path):
    import threading

    from afd.notifiers.worker import NoticeWorker
    from afd.pluginset import load_plugins

    (tmp_path / "old_style.py").write_text(
        "from afd import hookimpl\nseen = []\n@hookimpl\ndef afd_event(event):\n    seen.append(event.kind)\n")
    (tmp_path / "with_notice.py").write_text(
        "import threading\nfrom afd import hookimpl\nseen = []\n"
        "@hookimpl\ndef afd_event(event, notice):\n    seen.append((notice.text, threading.current_thread().name))\n")
    plugins = load_plugins(tmp_path, entry_points=False)
    worker = NoticeWorker(plugins)
    try:
        for kind in ("notify.failed", "session.needs_human"):
            event, notice = notice_for(kind)
            worker.submit(event, notice)
    finally:
        worker.close()
    old = sys.modules["afd_dropin_old_style"].seen
    new = sys.modules["afd_dropin_with_notice"].seen
    assert old == ["session.needs_human"]
    assert new == [("shop-fix (claude) needs you: spend cap — add credits; then: afd resume shop-fix", "afd-notifier")]
    assert threading.current_thread().name != "afd-notifier"


def test_the_example_config_names_every_notify_key():
    from afd.config.settings import _NOTIFY

    text = (Path(__file__).parents[2] / "config.example.toml").read_text()
    for key in _NOTIFY:
        assert key in text, key


def test_a_reload_keeps_the_lane_of_an_unchanged_notifier_and_stops_a_removed_one(endpoint):
    from afd.config.settings import Config
    from afd.notifiers.worker import NoticeWorker
    from afd.pluginset import add_notifiers, load_plugins

    kept = NotifierSettings(type="webhook", number=1, url=endpoint.url("/kept"), events=("session.",))
    gone = NotifierSettings(type="webhook", number=2, url=endpoint.url("/gone"), events=("session.",))
    before = load_plugins(None, entry_points=False, builtins=False)
    add_notifiers(before, Config(notify=(kept, gone)))
    worker = NoticeWorker(before)
    try:
        worker.submit(*notice_for("session.limited"))
        wait_for(lambda: len(endpoint.requests) == 2, message="both notified")
        # get_plugins() is a set: find the kept notifier by its settings, not by position
        lane = next(n for n in before.notifiers() if n.settings == kept)._courier
        after = load_plugins(None, entry_points=False, builtins=False)
        add_notifiers(after, Config(notify=(kept,)))
        worker.use(after)
        assert after.notifiers()[0]._courier is lane  # its collapse windows go on: this repeat is held
        worker.submit(*notice_for("session.limited"))
        worker.submit(*notice_for("session.mission"))
        wait_for(lambda: len(endpoint.requests) == 3, message="the next message")
    finally:
        worker.close()
    assert [r.path for r in endpoint.requests[2:]] == ["/kept"] and endpoint.requests[2].json()["kind"] == "session.mission"
