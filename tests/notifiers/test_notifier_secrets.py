"""A notifier's secrets (its token, its URL's path and query) stay out of everything afd shows or stores,
and go nowhere in the clear; what a hostile endpoint or program answers is handled as it should be."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from endpoint import start_endpoint
from test_notifiers import Reports, notice_for, private_token

from afd.config.notifiers import NotifierSettings
from afd.config.secrets import REDACTED, Secrets, redact, url_secrets, url_shown
from afd.config.settings import ConfigError, load_config
from afd.kit.text import lowered_first_word
from afd.notifiers import builtin
from afd.notifiers.answer import Outcome
from afd.notifiers.courier import Courier
from harness import wait_for

SLACK = "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/abcdefghijklmnopqrstuvwx"
KEY = "abcdefghijklmnopqrstuvwx"
TOPIC = "afd-laptop-7f3k2"
TOKEN = "tk_9Zq7Lm2Xw4Vb8Nc1"


@pytest.fixture
def endpoint():
    ep = start_endpoint()
    yield ep
    ep.stop()


def afd(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    # Wide, so that rich's tables do not wrap a value the test looks for.
    env = {**os.environ, "COLUMNS": "400"}
    return subprocess.run([sys.executable, "-m", "afd", *args], capture_output=True, text=True, timeout=timeout, env=env)


# --- names and redaction ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "label"),
    [
        pytest.param(NotifierSettings(type="webhook", number=1, url=SLACK), "webhook https://hooks.slack.com", id="slack"),
        pytest.param(NotifierSettings(type="ntfy", number=1, url=f"https://ntfy.sh/{TOPIC}"), "ntfy https://ntfy.sh", id="ntfy-topic"),
        pytest.param(NotifierSettings(type="webhook", number=1, url="http://127.0.0.1:8080/hook?key=abcd1234"),
                     "webhook http://127.0.0.1:8080", id="query-and-port"),
        pytest.param(NotifierSettings(type="ntfy", number=1, name="phone", url=f"https://ntfy.sh/{TOPIC}"), "phone", id="named"),
        pytest.param(NotifierSettings(type="command", number=1, argv=("/home/me/bin/on-afd", "--key", "x")), "command on-afd", id="command"),
    ],
)
def test_a_notifier_is_named_by_its_name_or_its_scheme_and_host_never_by_its_path(settings, label):
    assert settings.label == label


@pytest.mark.parametrize(
    ("text", "secrets", "shown"),
    [
        pytest.param(f"no such hook services/T0AAAAAAA/B0BBBBBBB/{KEY}", url_secrets(SLACK),
                     f"no such hook {REDACTED}", id="slack-path-whole"),
        pytest.param(f"bad key {KEY}", url_secrets(SLACK), f"bad key {REDACTED}", id="slack-key-alone"),
        pytest.param(f"topic {TOPIC} is reserved; topics like {TOPIC}x are not", url_secrets(f"https://ntfy.sh/{TOPIC}"),
                     f"topic {REDACTED} is reserved; topics like {REDACTED}x are not", id="ntfy-topic"),
        pytest.param("see https://docs.example/auth?token=abc#x for help", Secrets(),
                     f"see https://docs.example/{REDACTED} for help", id="any-url-cut-to-origin"),
        pytest.param("go to https://u:pw@other.example:444/", Secrets(), "go to https://other.example:444", id="userinfo"),
        pytest.param(f"Bearer {TOKEN} is not valid", Secrets(exact=(TOKEN,)), f"Bearer {REDACTED} is not valid", id="token"),
        pytest.param("connection refused", url_secrets("http://127.0.0.1:9/t"), "connection refused", id="short-path-kept-apart"),
        pytest.param("the alerts topic", url_secrets("https://ntfy.sh/alerts"), f"the {REDACTED} topic", id="plain-word"),
        pytest.param("my-alerts-x", url_secrets("https://ntfy.sh/alerts"), "my-alerts-x", id="inside-a-longer-word"),
    ],
)
def test_redact_takes_out_the_secrets_and_cuts_urls_to_their_origin(text, secrets, shown):
    assert redact(text, secrets) == shown


def test_an_endpoint_that_echoes_the_token_and_the_path_is_shown_without_either(endpoint, tmp_path):
    path = f"/hooks/{KEY}"
    endpoint.behaviour[path] = "echo"
    settings = NotifierSettings(type="webhook", number=1, url=endpoint.url(path), token_file=private_token(tmp_path, TOKEN))
    got = builtin.send_once(settings, notice_for()[1])
    assert got.outcome is Outcome.FAILED
    assert endpoint.on(path)[0].headers["Authorization"] == f"Bearer {TOKEN}"  # it was sent, and echoed…
    assert got.detail == f"HTTP 401: unauthorized: Bearer {REDACTED} may not post to /{REDACTED}"  # …and not shown

    config = tmp_path / "config.toml"
    config.write_text(f'[[notify]]\ntype = "webhook"\nurl = "{endpoint.url(path)}"\ntoken_file = "{settings.token_file}"\n')
    for args in (("--json",), ()):
        done = afd("notify", "test", "--config", str(config), *args)
        assert done.returncode == 1, done.stderr
        assert "HTTP 401" in done.stdout and TOKEN not in done.stdout + done.stderr and KEY not in done.stdout + done.stderr
    [row] = json.loads(afd("notify", "test", "--config", str(config), "--json").stdout)["notifiers"]
    assert row["name"] == f"webhook http://127.0.0.1:{endpoint.port}"


def test_a_redirect_location_is_shown_by_its_origin_only(endpoint):
    endpoint.behaviour["/hook"] = ("redirect", f"https://elsewhere.example/capture/{KEY}")
    got = builtin.send_once(NotifierSettings(type="webhook", number=1, url=endpoint.url()), notice_for()[1])
    assert got.detail == f"HTTP 302 redirect to https://elsewhere.example/{REDACTED}; redirects are not followed"


def test_config_show_redacts_notifier_urls_unless_asked(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(f'[[notify]]\ntype = "webhook"\nurl = "{SLACK}"\n\n[[notify]]\ntype = "ntfy"\nurl = "https://ntfy.sh/{TOPIC}"\n')
    plain = afd("config", "show", "--config", str(config))
    shown = json.loads(afd("config", "show", "--config", str(config), "--json").stdout)
    assert plain.returncode == 0, plain.stderr
    assert KEY not in plain.stdout and TOPIC not in plain.stdout and "hooks.slack.com" in plain.stdout
    assert shown["notify[1]"]["value"]["url"] == url_shown(SLACK) == f"https://hooks.slack.com/{REDACTED}"
    assert shown["notify[2]"]["value"]["url"] == f"https://ntfy.sh/{REDACTED}"
    whole = json.loads(afd("config", "show", "--config", str(config), "--json", "--show-secrets").stdout)
    assert whole["notify[1]"]["value"]["url"] == SLACK and whole["notify[2]"]["value"]["url"] == f"https://ntfy.sh/{TOPIC}"
    assert KEY in afd("config", "show", "--config", str(config), "--show-secrets").stdout


def test_a_bad_url_is_reported_without_its_path(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(f'[[notify]]\ntype = "webhook"\nurl = "ftp://hooks.example/services/{KEY}"\n')
    done = afd("config", "check", "--config", str(config))
    assert done.returncode == 1 and KEY not in done.stdout
    assert done.stdout.strip().endswith(f':3: notify[1].url: must be an http:// or https:// URL with a host, got "ftp://hooks.example/{REDACTED}"')


# --- plain http ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "refused"),
    [
        pytest.param('type = "ntfy"\nurl = "http://ntfy.example.org/alerts"', True, id="ntfy-remote"),
        pytest.param('type = "webhook"\nurl = "http://hooks.example/x"', True, id="webhook-remote"),
        pytest.param('type = "webhook"\nurl = "http://hooks.example/x"\ntoken_file = "{token}"', True, id="token-remote"),
        pytest.param('type = "webhook"\nurl = "http://10.0.0.7:8080/"', True, id="lan-address"),
        pytest.param('type = "webhook"\nurl = "https://hooks.example/x"\ntoken_file = "{token}"', False, id="https"),
        pytest.param('type = "ntfy"\nurl = "http://127.0.0.1:8080/alerts"\ntoken_file = "{token}"', False, id="loopback-v4"),
        pytest.param('type = "ntfy"\nurl = "http://localhost:8080/alerts"', False, id="localhost"),
        pytest.param('type = "webhook"\nurl = "http://[::1]:8080/hook"', False, id="loopback-v6"),
    ],
)
def test_a_secret_over_plain_http_to_another_host_is_a_config_error_with_its_line(tmp_path, table, refused):
    token = private_token(tmp_path)
    config = tmp_path / "config.toml"
    config.write_text(f'poll_interval = "2s"\n\n[[notify]]\n{table.format(token=token)}\n')
    done = afd("config", "check", "--config", str(config))
    if not refused:
        assert done.returncode == 0, done.stdout
        return
    assert done.returncode == 1
    [line] = done.stdout.splitlines()
    assert line.startswith(f"{config}:5: notify[1].url: plain http to ")
    assert "use https://" in line and ("bearer token" in line) == ("token_file" in table)
    with pytest.raises(ConfigError):
        load_config(config)


# --- hostile endpoints and programs -----------------------------------------------------------


def test_a_200_whose_reply_is_cut_by_the_deadline_is_unconfirmed_and_not_retried(endpoint):
    endpoint.behaviour["/hook"] = "trickle"
    settings = NotifierSettings(type="webhook", number=1, url=endpoint.url(), timeout=1.5, retry_for=30, min_interval=0)
    got = builtin.send_once(settings, notice_for()[1])
    assert got.outcome is Outcome.UNCONFIRMED and not got.sent
    assert re.fullmatch(r"HTTP 200(: x+)?, then the reply was cut off \(afd's 1.5s deadline\): unconfirmed, not retried "
                        r"\(a second try could deliver it twice\)", got.detail), got.detail

    reports = Reports()
    lane = Courier(settings, builtin.SENDERS["webhook"], reports)
    try:
        lane.offer(*notice_for(message="needs you: one"))
        lane.offer(*notice_for(message="needs you: two"))
        wait_for(lambda: len(endpoint.requests) == 3 and reports, timeout=30, message="both tried once, one report")
    finally:
        endpoint.release.set()
        lane.close(5)
    assert len(endpoint.requests) == 3  # one each: nothing was sent twice
    [(kind, message, data)] = reports  # the second is not reported again
    assert kind == "notify.unconfirmed" and "may or may not have been told" in message and data["detail"].startswith("HTTP 200")


def test_afd_notify_test_says_unconfirmed_and_fails(endpoint, tmp_path):
    endpoint.behaviour["/hook"] = "trickle"
    config = tmp_path / "config.toml"
    config.write_text(f'[[notify]]\ntype = "webhook"\nurl = "{endpoint.url()}"\ntimeout = "1s"\n')
    done = afd("notify", "test", "--config", str(config))
    endpoint.release.set()
    assert done.returncode == 1
    assert done.stdout.startswith(f"notify[1] webhook http://127.0.0.1:{endpoint.port}: UNCONFIRMED: HTTP 200")
    assert "then the reply was cut off (afd's 1s deadline)" in done.stdout


def test_a_garbled_status_line_keeps_its_letters_as_the_endpoint_sent_them(endpoint):
    endpoint.behaviour["/hook"] = "garbled"
    got = builtin.send_once(NotifierSettings(type="webhook", number=1, url=endpoint.url()), notice_for()[1])
    assert got.outcome is Outcome.RETRY
    assert got.detail == "not an HTTP answer: 'HTTP/1.1 20'"


@pytest.mark.parametrize(
    ("text", "lowered"),
    [
        pytest.param("Connection reset by peer", "connection reset by peer", id="sentence"),
        pytest.param("HTTP/1.1 20", "HTTP/1.1 20", id="status-line"),
        pytest.param("TLS handshake", "TLS handshake", id="acronym"),
        pytest.param("IPv6 is off", "IPv6 is off", id="mixed-case"),
        pytest.param("A value is missing", "a value is missing", id="article"),
        pytest.param("Expected '=' after a key", "expected '=' after a key", id="toml"),
        pytest.param("Python3.11 said", "Python3.11 said", id="version"),
        pytest.param("", "", id="empty"),
    ],
)
def test_only_an_ordinary_capitalised_first_word_is_lowered(text, lowered):
    assert lowered_first_word(text) == lowered


def test_a_toml_error_is_said_in_lower_case_and_an_acronym_is_kept(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("poll_interval = \n")
    done = afd("config", "check", "--config", str(config))
    assert done.returncode == 1 and ": invalid TOML: invalid value" in done.stdout, done.stdout


PRINTER = """#!{python}
import os, sys
parent = os.getppid()

def rss():
    for line in open(f"/proc/{{parent}}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024

def files():
    # Regular files afd holds open (a temp file for the output would be one).
    found = []
    for fd in os.listdir(f"/proc/{{parent}}/fd"):
        try:
            target = os.readlink(f"/proc/{{parent}}/fd/{{fd}}")
        except OSError:
            continue
        if target.startswith("/") and not target.startswith(("/dev/", "/proc/")) and "site-packages" not in target:
            found.append(target)
    return found

sys.stdin.read()
print("first line of a chatty program")
before = rss()
chunk = b"y" * 65536
for i in range(1600):  # 100 MiB
    sys.stdout.buffer.write(chunk)
    if i == 800:
        held = files()
sys.stdout.flush()
with open({report!r}, "w") as out:
    out.write(repr({{"grew": rss() - before, "files": held}}))
"""


def test_a_command_that_prints_100_mib_is_read_through_a_pipe_and_costs_afd_no_memory_or_disk(tmp_path):
    report = tmp_path / "report"
    script = tmp_path / "chatty"
    script.write_text(PRINTER.format(python=sys.executable, report=str(report)))
    script.chmod(0o700)
    config = tmp_path / "config.toml"
    config.write_text(f'[[notify]]\ntype = "command"\nargv = ["{script}"]\ntimeout = "120s"\n')
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "afd", "notify", "test", "--config", str(config)],
                          capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "notify[1] command chatty: sent: exit 0: first line of a chatty program\n"
    seen = eval(report.read_text())  # written by the program above
    assert seen["files"] == [], seen  # no file of afd's took the output
    assert seen["grew"] < 16 * 2**20, seen  # and afd's memory did not grow with it
    assert list(Path(tmp_path).glob("tmp*")) == []
