"""The dashboard over plain HTTP: its login, its guards and its API, against a real daemon on a private tmux server."""

from __future__ import annotations

import json
import re
import socket
from importlib.resources import files
from pathlib import Path

import pytest
from web_harness import FAST, Client, afd, free_port, login_url, token_of, web_config

from afd.config.settings import Config, ConfigError, load_config
from daemon_harness import limited_claude, run_daemon, session_for, wait_state, write_config  # noqa: F401 (run_daemon is a fixture)  # noqa: F401 (limited_claude is a fixture)
from harness import start_fake, wait_for

pytestmark = pytest.mark.tmux


@pytest.fixture
def port():
    return free_port()


@pytest.fixture
def dashboard(run_daemon, xdg_dirs, port):
    """A daemon serving the dashboard from its start, and a client not logged in."""
    write_config(xdg_dirs, web_config(port))
    run_daemon()
    return Client(port)


@pytest.fixture
def limited(limited_claude, port):
    """A daemon serving the dashboard and a fake claude at its wall: (client logged in, session name, fake)."""
    wt, base, name, fake = limited_claude(web_config(port))
    client = Client(port)
    client.log_in()
    return client, name, fake


# --- config --------------------------------------------------------------------------


@pytest.mark.parametrize("bind", ["0.0.0.0", "192.168.1.10", "::", "localhost"])
def test_web_bind_other_than_loopback_is_a_config_error_with_file_and_line(tmp_path, bind):
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'poll_interval = "2s"\n[web]\nenabled = true\nbind = "{bind}"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(cfg)
    assert str(caught.value).startswith(f"{cfg}:4: web.bind: must be a loopback address")


def test_web_defaults_are_off_on_port_8787_on_127_0_0_1(tmp_path):
    config = Config()
    assert (config.web_enabled, config.web_port, config.web_bind) == (False, 8787, "127.0.0.1")
    cfg = tmp_path / "config.toml"
    cfg.write_text("[web]\nport = 70000\n")
    with pytest.raises(ConfigError) as caught:
        load_config(cfg)
    assert f"{cfg}:2: web.port: must be at most 65535" in str(caught.value)


# --- logging in -------------------------------------------------------------------------


def test_the_login_token_rides_in_the_fragment_and_buys_one_session_token_once(dashboard, port):
    url = login_url()
    assert re.fullmatch(rf"http://127\.0\.0\.1:{port}/#token=[A-Za-z0-9_-]{{40,}}", url)
    reply = dashboard.log_in(url)
    assert reply.cookies == [] and "set-cookie" not in reply.headers  # nothing a browser would attach by itself
    assert dashboard.session and dashboard.session != token_of(url)
    assert dashboard.get("/api/status").status == 200

    again = Client(port).post("/api/login", {"token": token_of(url)})
    assert again.status == 401 and "used already or has expired" in again.json()["error"]
    forged = Client(port, session="A" * 43)
    assert forged.get("/api/status").status == 401
    # The old form, the token in the query, logs nobody in: the page is served, the token is not redeemed.
    spare = login_url()
    old_form = Client(port).get(f"/?token={token_of(spare)}")
    assert old_form.status == 200 and old_form.cookies == []
    assert Client(port).log_in(spare).status == 200  # still unspent
    assert Client(port).get("/api/login").status == 405


def test_without_a_session_token_the_api_answers_401_and_the_page_holds_no_data(limited, port):
    client, name, fake = limited
    assert name in client.get("/api/status").text
    stranger = Client(port)
    for path in ("/api/status", "/api/jobs", f"/api/sessions/{name}/ledger", f"/api/sessions/{name}/targets", "/api/events"):
        reply = stranger.get(path)
        assert reply.status == 401, path
        assert name not in reply.text and fake.pane not in reply.text, path
        # Whatever cookies a browser might have: none of them is a login.
        assert stranger.get(path, headers={"Cookie": f"afd_session_{port}={client.session}"}).status == 401, path
    for path in ("/", "/static/app.js", "/static/app.css"):
        reply = stranger.get(path)
        assert reply.status == 200, path
        assert name not in reply.text and fake.pane not in reply.text, path
    reply = stranger.post(f"/api/sessions/{name}/resume")
    assert reply.status == 401 and name not in reply.text
    assert stranger.post(f"/api/sessions/{name}/resume", headers={"Authorization": f"Basic {client.session}"}).status == 401
    assert wait_state(name, "limited")["state"] == "limited"  # nothing was done


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        pytest.param({"Sec-Fetch-Site": "same-site"}, False, id="another-port"),
        pytest.param({"Sec-Fetch-Site": "cross-site"}, False, id="another-site"),
        pytest.param({"Origin": "http://127.0.0.1:{other}"}, False, id="origin-of-another-port"),
        pytest.param({"Origin": "null"}, False, id="opaque-origin"),
        pytest.param({"Origin": "http://localhost:{port}"}, False, id="origin-of-another-name"),
        pytest.param({"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:{port}"}, True, id="own-page"),
        pytest.param({}, True, id="a-script"),
    ],
)
def test_a_request_another_origin_makes_is_refused_whatever_it_carries(limited, port, headers, allowed):
    client, name, fake = limited
    sent = {k: v.format(port=port, other=port + 1) for k, v in headers.items()}
    read = client.get("/api/status", headers=sent)
    assert read.status == (200 if allowed else 403), read.text
    if not allowed:
        assert name not in read.text and "another" in read.json()["error"]
        assert client.post(f"/api/sessions/{name}/handoff", {"to": "codex"}, headers=sent).status == 403
        assert client.post("/api/login", {"token": token_of(login_url())}, headers=sent).status == 403
        assert wait_state(name, "limited")["handoffs"] == 0


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1", "localhost:1", "127.0.0.2:{port}",
                                  "rebound.attacker.test", "[::1]:{other}", ""])
def test_a_host_header_that_is_not_this_server_on_loopback_is_403(dashboard, port, host):
    dashboard.log_in()
    reply = dashboard.get("/api/status", headers={"Host": host.format(port=port, other=port + 1)})
    assert reply.status == 403
    assert "sessions" not in reply.text
    for good in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        assert dashboard.get("/api/status", headers={"Host": good}).status == 200


def test_a_post_without_x_afd_is_403_and_nothing_is_done(limited):
    client, name, fake = limited
    reply = client.post(f"/api/sessions/{name}/handoff", {"to": "codex"}, afd_header=False)
    assert reply.status == 403 and "x-afd: 1" in reply.json()["error"]
    reply = client.post(f"/api/sessions/{name}/resume", afd_header=False, headers={"x-afd": "true"})
    assert reply.status == 403
    s = wait_state(name, "limited")
    assert s["agent"] == "claude" and s["handoffs"] == 0


def test_a_deeply_nested_json_body_is_a_400_with_no_traceback(limited, limited_claude):
    client, name, fake = limited
    deep = "[" * 30000 + "]" * 30000  # 60,000 bytes, under the 64 KiB limit
    for body in (deep, '{"to": ' + deep[:40000] + "}"):
        reply = client.post(f"/api/sessions/{name}/handoff", body, headers={"Content-Type": "application/json"})
        assert reply.status == 400 and reply.json()["error"] == "the request body nests too deeply", reply.text
    assert client.post("/api/jobs/handoff", deep).status == 400
    assert client.get("/api/status").status == 200  # the server carries on
    log = "\n".join(d.log() for d in limited_claude.daemons)
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-2000:]


def test_a_body_over_64_kib_is_400_whether_announced_or_streamed(limited):
    client, name, fake = limited
    big = json.dumps({"to": "codex", "brief": "x" * (64 * 1024)})
    assert client.post(f"/api/sessions/{name}/handoff", big).status == 400
    streamed = client.post(f"/api/sessions/{name}/handoff", big, headers={"Transfer-Encoding": "chunked"})
    assert streamed.status == 400 and "64 KiB" in streamed.json()["error"]
    assert client.post(f"/api/sessions/{name}/handoff", "{not json").status == 400
    assert client.post(f"/api/sessions/{name}/handoff", {"to": 3}).status == 400
    assert wait_state(name, "limited")["handoffs"] == 0


def test_no_cors_headers_are_ever_sent(dashboard, port):
    dashboard.log_in()
    origin = {"Origin": "https://evil.example"}
    replies = [
        dashboard.get("/api/status", headers=origin),
        dashboard.request("OPTIONS", "/api/status", headers={**origin, "Access-Control-Request-Method": "POST",
                                                             "Access-Control-Request-Headers": "x-afd"}),
        dashboard.post("/api/sessions/x/resume", headers=origin),
    ]
    for reply in replies:
        assert not [h for h in reply.headers if h.startswith("access-control-")], reply.headers
    page = dashboard.get("/")
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"


def test_nothing_the_page_loads_points_outside_the_server(dashboard):
    dashboard.log_in()
    page = dashboard.get("/")
    assert page.status == 200
    # Everything the page names (src, href, url(), fetch, EventSource) is a path on this server.
    named = re.findall(r'(?:src|href)="([^"]*)"', page.text)
    assert named and all(u.startswith("/") and not u.startswith("//") or u.startswith("#") for u in named), named
    static = files("afd.web").joinpath("static")
    for asset in sorted(p.name for p in Path(str(static)).iterdir()):
        reply = dashboard.get(f"/static/{asset}")
        assert reply.status == 200, asset
        if asset.endswith(".svg"):
            # The xmlns is a name, never fetched; anything else with a scheme would be.
            assert re.findall(r"https?://", reply.text.replace('xmlns="http://www.w3.org/2000/svg"', "")) == [], asset
        else:
            assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}|@import", reply.text, re.I), asset
    for path in ("/static/app.css", "/static/app.js", "/static/icon.svg"):
        assert path in page.text
    js = dashboard.get("/static/app.js").text
    assert set(re.findall(r'fetch\(\s*"([^"]+)"', js)) <= {"/api/events"}
    assert "EventSource(" not in js and "document.cookie" not in js and "localStorage" not in js
    assert all(p.startswith("/api/") for p in re.findall(r'api\("[A-Z]+", [`"]([^`"$]+)', js))
    assert page.headers["content-security-policy"].startswith("default-src 'none'")


def test_the_logins_die_with_the_daemon(run_daemon, xdg_dirs, port):
    write_config(xdg_dirs, web_config(port))
    first = run_daemon()
    client = Client(port)
    client.log_in()
    spare = login_url()
    assert client.get("/api/status").status == 200
    assert first.stop() == 0
    run_daemon()
    wait_for(lambda: _answers(port), message="the new daemon serving the dashboard")
    assert client.get("/api/status").status == 401
    assert Client(port).post("/api/login", {"token": token_of(spare)}).status == 401


def _answers(port: int) -> bool:
    try:
        return Client(port).get("/api/status", timeout=2).status == 401
    except OSError:
        return False


def test_a_port_in_use_is_one_clear_error_naming_the_port_and_the_key(run_daemon, xdg_dirs, port):
    write_config(xdg_dirs, FAST + f"[web]\nport = {port}\n")
    taken = socket.socket()
    taken.bind(("127.0.0.1", port))
    taken.listen(1)
    try:
        run_daemon()
        done = afd("web")
        assert done.returncode == 1
        assert done.stderr.strip() == (
            f"afd: port {port} on 127.0.0.1 is already in use; choose another with [web] port in the config")
    finally:
        taken.close()
    done = afd("web", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["url"] == f"http://127.0.0.1:{port}/"


def test_afd_web_without_a_daemon_says_so():
    done = afd("web")
    assert done.returncode == 3 and "not running" in done.stderr


# --- the API ---------------------------------------------------------------------------


def test_targets_say_why_each_other_agent_is_not_eligible_as_the_handoff_itself_would(limited):
    client, name, fake = limited
    reply = client.get(f"/api/sessions/{name}/targets")
    assert reply.status == 200
    targets = {t["agent"]: t for t in reply.json()["targets"]}
    assert targets["codex"]["eligible"] and targets["codex"]["why"] is None
    assert not targets["claude"]["eligible"] and targets["claude"]["why"] == "claude is the agent running there now"
    refused = afd("handoff", name, "--to", "claude")
    assert refused.returncode == 1 and targets["claude"]["why"] in refused.stderr
    assert client.get("/api/sessions/nobody/targets").status == 400


def test_a_refused_resume_is_409_with_afds_reason_and_a_bad_name_is_400(dashboard, tmux_server, worktree):
    dashboard.log_in()
    fake = start_fake(tmux_server, "claude", cwd=worktree("feature"), prompt="Fix the login test")
    name = session_for(fake.pane)["name"]
    wait_state(name, "idle")
    refused = dashboard.post(f"/api/sessions/{name}/resume")
    assert refused.status == 409
    assert refused.json()["error"].startswith(f"cannot resume {name}: ")
    cli = afd("resume", name)
    # The same refusal, word for word up to the pane's state in brackets (the fake may have
    # gone from idle to working between the two requests).
    same = refused.json()["error"].rsplit(" (", 1)[0]
    assert cli.returncode == 1 and cli.stderr.strip().rsplit(" (", 1)[0] == f"afd: {same}", cli.stderr
    assert dashboard.post("/api/sessions/nobody/resume").status == 400


def test_the_api_takes_the_names_a_person_types_and_shows_a_pause(limited, tmux_server):
    from urllib.parse import quote

    client, name, fake = limited
    tmux_session = name.split(":")[0]  # `s1`, as tmux names it; afd's name is `s1:0.0`
    assert client.get(f"/api/sessions/{tmux_session}/targets").json()["session"] == name
    assert client.get(f"/api/sessions/{quote(fake.pane, safe='')}/ledger").json()["session"] == name
    # A second pane in the same tmux window: the window's name now means two sessions.
    other = start_fake(tmux_server, "claude", cwd=tmux_server.scratch)
    tmux_server.run("join-pane", "-d", "-s", other.pane, "-t", fake.pane)
    wait_for(lambda: any(s["pane"] == other.pane and s["location"].startswith(tmux_session + ":")
                         for s in client.get("/api/status").json()["sessions"]), message="the second pane adopted")
    ambiguous = client.get(f"/api/sessions/{tmux_session}/ledger")
    assert ambiguous.status == 400 and f"'{tmux_session}' names 2 sessions" in ambiguous.json()["error"]

    assert afd("sessions", "pause", name, "--for", "2h").returncode == 0
    shown = wait_for(lambda: next(s for s in client.get("/api/status").json()["sessions"] if s["name"] == name)["paused"],
                     message="the pause in the dashboard's status")
    assert shown["until"] is not None and shown["since"] is not None


def test_handoff_through_the_api_swaps_codex_in_and_the_ledger_shows_each_agents_range(limited):
    client, name, fake = limited
    reply = client.post(f"/api/sessions/{name}/handoff", {"to": "codex"})
    assert reply.status == 200, reply.text
    assert reply.json()["state"] == "done"
    ledger = client.get(f"/api/sessions/{name}/ledger").json()
    assert [(e["from"], e["to"]) for e in ledger["entries"]] == [("claude", "codex")]
    assert [r["agent"] for r in ledger["ranges"]] == ["claude", "codex"]
    assert ledger["ranges"][1]["range"].endswith("..HEAD")
    again = client.post(f"/api/sessions/{name}/handoff", {"to": "codex"})
    assert again.status == 409 and "codex is the agent running there now" in again.json()["error"]


def test_events_stream_as_server_sent_events(limited, port):
    client, name, fake = limited
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/api/events", headers={"Authorization": f"Bearer {client.session}", "Host": f"127.0.0.1:{port}"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.headers["content-type"].startswith("text/event-stream")
        afd("sessions", "set-mission", name, "a mission set while the page listens")
        lines = []
        while not any("session.mission" in line for line in lines):
            lines.append(resp.fp.readline().decode())
        event = json.loads(next(line for line in lines if "session.mission" in line)[len("data: "):])
        assert event["session"] == name and event["kind"] == "session.mission"
    finally:
        conn.close()


def test_enabling_web_in_a_reloaded_config_starts_serving(run_daemon, xdg_dirs, port):
    write_config(xdg_dirs, FAST)
    run_daemon()
    write_config(xdg_dirs, web_config(port))
    wait_for(lambda: _answers(port), timeout=20, message="the dashboard served after the reload")
    assert json.loads(afd("web", "--json").stdout)["port"] == port


def test_afd_web_open_keeps_the_token_out_of_the_browsers_argv_and_environment(dashboard, port, tmp_path):
    import os
    import stat
    import sys

    seen = tmp_path / "browser.json"
    browser = tmp_path / "browser"
    # A stand-in browser: what every user could read of it (its argv and environment), and the page it was given.
    browser.write_text(f"""#!{sys.executable}
import json, os, sys
from urllib.parse import urlsplit, unquote
page = unquote(urlsplit(sys.argv[1]).path)
info = os.stat(page)
json.dump({{"argv": sys.argv, "environ": open("/proc/self/environ", "rb").read().decode(errors="replace"),
           "page": open(page).read(), "mode": info.st_mode & 0o777, "uid": info.st_uid, "path": page}}, open({str(seen)!r}, "w"))
""")
    browser.chmod(0o700)
    done = afd("web", "--open", env={"BROWSER": str(browser)})
    assert done.returncode == 0, done.stderr
    got = json.loads(wait_for(lambda: seen.exists() and seen.read_text(), message="the browser started"))
    printed = done.stdout.strip()
    token = token_of(printed)
    assert token not in " ".join(got["argv"]) and token not in got["environ"]
    assert got["argv"][1].startswith("file:///") and got["path"].endswith("/afd/web-login.html")
    assert got["mode"] == 0o600 and got["uid"] == os.getuid()
    assert stat.S_IMODE(Path(got["path"]).parent.stat().st_mode) == 0o700
    # The page sends the browser on to the login address, which logs it in.
    [target] = set(re.findall(r'url=([^"]+)"', got["page"]))
    opened = target.replace("&amp;", "&")
    assert opened == printed
    assert Client(port).log_in(opened).status == 200
    assert Client(port).post("/api/login", {"token": token}).status == 401  # good once
