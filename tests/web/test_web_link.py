"""How the dashboard's answers map afd's: 400 bad request, 409 refused, 503 down, 504 not confirmed in time."""

from __future__ import annotations

import threading

import pytest

from afd.daemon.control import ControlServer, Stream
from afd.errors import EXIT_FAIL, EXIT_USAGE, UserError
from afd.web.link import UNCONFIRMED, DaemonLink, Refused


@pytest.fixture
def daemon_socket(xdg_dirs):
    """A control server answering from `handle`, served on a thread; yields (path, set_handler, publish)."""
    handlers = {}
    server = ControlServer(xdg_dirs["XDG_RUNTIME_DIR"] / "c.sock", lambda cmd, args: handlers[cmd](**args))
    server.start()
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [server.serve_pending(0.05) for _ in iter(stop.is_set, True)], daemon=True)
    thread.start()
    try:
        yield server.path, handlers
    finally:
        stop.set()
        thread.join(5)
        server.close()


def refused(call) -> Refused:
    with pytest.raises(Refused) as caught:
        call()
    return caught.value


def test_a_usage_error_is_400_and_a_refusal_409_with_afds_line(daemon_socket):
    path, handlers = daemon_socket

    def usage():
        raise UserError("no session named 'x' (sessions: none)", EXIT_USAGE)

    def refusal():
        raise UserError("cannot resume s: the session is not at a usage limit (it is idle)", EXIT_FAIL)

    handlers.update(usage=usage, refusal=refusal)
    link = DaemonLink(path)
    assert (r := refused(lambda: link.ask("usage"))).status == 400 and str(r) == "no session named 'x' (sessions: none)"
    assert (r := refused(lambda: link.ask("refusal"))).status == 409 and str(r).startswith("cannot resume s: ")


def test_a_handoff_that_does_not_settle_in_time_is_504_check_the_ledger(daemon_socket):
    path, handlers = daemon_socket
    handlers["handoff"] = lambda **args: Stream("action-7", {"journal": 7, "state": "pending"})
    r = refused(lambda: DaemonLink(path).ask_and_wait("handoff", {}, settle_timeout=0.3))
    assert r.status == 504 and str(r) == f"{UNCONFIRMED} (journal 7)"
    assert "check the ledger before retrying" in UNCONFIRMED


def test_a_daemon_that_does_not_answer_in_time_is_504_and_none_is_503(daemon_socket, xdg_dirs):
    path, handlers = daemon_socket
    release = threading.Event()
    handlers["slow"] = lambda: release.wait(5)
    try:
        assert refused(lambda: DaemonLink(path, timeout=0.3).ask("slow")).status == 504
    finally:
        release.set()
    assert refused(lambda: DaemonLink(xdg_dirs["XDG_RUNTIME_DIR"] / "none.sock").ask("status")).status == 503
