"""The sd_notify datagrams afd sends, received on a real datagram socket."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest

from afd.daemon import notify


@pytest.fixture
def notify_socket(monkeypatch):
    """A bound datagram socket in a short temp dir, named by NOTIFY_SOCKET."""
    base = Path(tempfile.mkdtemp(prefix="afdn-", dir="/tmp"))
    path = base / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(10)  # a guard against a hang, not an assertion on time
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    yield sock
    sock.close()
    shutil.rmtree(base, ignore_errors=True)


def received(sock: socket.socket) -> list[str]:
    return sock.recv(4096).decode().split("\n")


@pytest.mark.parametrize(
    ("send", "expected"),
    [
        pytest.param(notify.ready, ["READY=1"], id="ready"),
        pytest.param(notify.watchdog, ["WATCHDOG=1"], id="watchdog"),
        pytest.param(notify.stopping, ["STOPPING=1"], id="stopping"),
        pytest.param(lambda: notify.status("3 sessions, 1 limited"), ["STATUS=3 sessions, 1 limited"], id="status"),
        pytest.param(lambda: notify.notify("READY=1", "STATUS=up"), ["READY=1", "STATUS=up"], id="several-lines"),
    ],
)
def test_each_message_arrives_as_one_exact_datagram(notify_socket, send, expected):
    assert send() is True
    assert received(notify_socket) == expected


def test_reloading_carries_the_monotonic_time(notify_socket):
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    assert notify.reloading() is True
    lines = received(notify_socket)
    assert lines[0] == "RELOADING=1"
    key, _, value = lines[1].partition("=")
    assert key == "MONOTONIC_USEC"
    assert int(value) >= before
    assert len(lines) == 2


def test_status_with_newlines_stays_one_assignment(notify_socket):
    notify.status("two\nlines\r\nhere")
    assert received(notify_socket) == ["STATUS=two lines here"]


def test_abstract_socket_name_with_at_sign_works(monkeypatch):
    name = f"afd-test-notify-{secrets.token_hex(6)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(10)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert notify.ready() is True
        assert sock.recv(4096) == b"READY=1"


@pytest.mark.parametrize(
    "value",
    [pytest.param(None, id="unset"), pytest.param("", id="empty")],
)
def test_without_notify_socket_every_call_is_a_silent_no_op(monkeypatch, value, capsys):
    if value is None:
        monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    else:
        monkeypatch.setenv("NOTIFY_SOCKET", value)
    results = [notify.ready(), notify.watchdog(), notify.status("x"), notify.reloading(), notify.stopping()]
    assert results == [False] * 5
    assert capsys.readouterr() == ("", "")


def test_a_socket_nobody_listens_on_returns_false_instead_of_raising(monkeypatch, tmp_path):
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "nobody"))
    assert notify.ready() is False


@pytest.mark.parametrize(
    ("usec", "pid", "expected"),
    [
        pytest.param("30000000", "self", 30.0, id="ours"),
        pytest.param("30000000", None, 30.0, id="no-pid-given"),
        pytest.param("30000000", "other", None, id="another-process"),
        pytest.param(None, None, None, id="unset"),
        pytest.param("0", "self", None, id="zero"),
        pytest.param("soon", "self", None, id="garbage"),
        pytest.param("500000", "self", 0.5, id="fraction"),
    ],
)
def test_watchdog_interval(monkeypatch, usec, pid, expected):
    for key, value in (("WATCHDOG_USEC", usec), ("WATCHDOG_PID", pid)):
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            value = {"self": str(os.getpid()), "other": str(os.getpid() + 1)}.get(value, value)
            monkeypatch.setenv(key, value)
    assert notify.watchdog_interval() == expected
