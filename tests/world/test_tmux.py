"""afd.tmux against a real tmux server on a private socket."""

from __future__ import annotations

import os
import secrets
import shlex
import signal
from pathlib import Path

import pytest

from afd.kit.text import capture_rows
from afd.world import tmux
from harness import wait_for

pytestmark = pytest.mark.tmux


def _server(tmux_server) -> tmux.ServerRef:
    return tmux.ServerRef(socket_name=tmux_server.name)


def _printing_pane(server: tmux.ServerRef, session: str, cwd: Path, text: str) -> str:
    """A new session whose pane prints `text` (a file's content, verbatim) and then sleeps."""
    source = cwd / f"{session}.txt"
    source.write_text(text)
    started = tmux.new_session(server, session, str(cwd), ["sh", "-c", f"cat {shlex.quote(str(source))}; exec sleep 600"])
    assert started.ok, started.error
    return started.value


def _screen(server, pane_id: str) -> str:
    result = tmux.capture_panes(server, [pane_id])[pane_id]
    return result.text if result.presence is tmux.Presence.PRESENT else ""


def test_server_ref_argv_picks_the_socket():
    assert tmux.ServerRef(socket_name="x").argv()[-2:] == ["-L", "x"]
    assert tmux.ServerRef(socket_path="/tmp/s").argv()[-2:] == ["-S", "/tmp/s"]
    assert "-L" not in tmux.ServerRef().argv() and "-S" not in tmux.ServerRef().argv()
    with pytest.raises(ValueError):
        tmux.ServerRef(socket_name="x", socket_path="/tmp/s")


@pytest.mark.parametrize(
    ("given", "env", "chosen"),
    [
        pytest.param(("x", None), {"TMUX": "/tmp/tmux-1/y,1,0"}, tmux.ServerRef(socket_name="x"), id="L-wins-over-TMUX"),
        pytest.param((None, "/s"), {"TMUX": "/tmp/tmux-1/y,1,0"}, tmux.ServerRef(socket_path="/s"), id="S-wins"),
        pytest.param((None, None), {"TMUX": "/tmp/tmux-1/y,1,0"}, tmux.ServerRef(socket_path="/tmp/tmux-1/y"),
                     id="inside-a-pane-TMUX-names-it"),
        pytest.param((None, None), {"TMUX": ",1,0"}, tmux.ServerRef(), id="TMUX-without-a-path"),
        pytest.param((None, None), {}, tmux.ServerRef(), id="else-the-default"),
    ],
)
def test_the_server_is_chosen_by_tmuxs_own_rule(given, env, chosen):
    assert tmux.ServerRef.chosen(*given, env=env) == chosen


def test_a_servers_socket_is_where_tmux_puts_it(tmp_path):
    uid = os.getuid()
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert tmux.ServerRef().socket({}) == f"/tmp/tmux-{uid}/default"
    assert tmux.ServerRef(socket_name="x").socket({"TMUX_TMPDIR": str(tmp_path / "link")}) == f"{real}/tmux-{uid}/x"
    assert tmux.ServerRef(socket_path="rel/s").socket({}) == os.path.abspath("rel/s")


def test_list_panes_with_no_server_running_is_a_normal_empty_answer():
    inventory = tmux.list_panes(tmux.ServerRef(socket_name=f"afd-test-none-{secrets.token_hex(6)}"))
    assert inventory == tmux.Inventory(
        server_running=False, answered=True, socket_path=None, server_pid=None, panes=(), error=None
    )


def test_list_panes_on_a_server_without_sessions_is_running_and_empty(tmux_server):
    inventory = tmux.list_panes(_server(tmux_server))
    assert (inventory.server_running, inventory.answered, inventory.panes, inventory.error) == (True, True, (), None)
    assert inventory.socket_path == str(tmux_server.socket_path)
    assert inventory.server_pid is not None


def test_list_panes_parses_every_field(tmux_server, tmp_path):
    server = _server(tmux_server)
    odd_dir = tmp_path / "a dir with spaces\tand a tab\nand a newline ü"
    odd_dir.mkdir()
    first = tmux.new_session(server, "main", str(tmp_path), ["sleep", "600"])
    assert first.ok, first.error
    tmux_server.run("split-window", "-d", "-t", first.value, "-c", str(odd_dir), "exec sleep 601")
    tmux_server.run("new-window", "-d", "-t", "main:", "-c", str(tmp_path), "--", "sh", "-c", "exec sleep 602", "x\ty")
    inventory = tmux.list_panes(server)
    assert inventory.answered and inventory.server_running and inventory.error is None
    assert inventory.socket_path == str(tmux_server.socket_path)
    by_location = {p.location: p for p in inventory.panes}
    assert sorted(by_location) == ["main:0.0", "main:0.1", "main:1.0"]

    top = by_location["main:0.0"]
    assert top.pane_id == first.value
    assert (top.current_command, top.cwd, top.dead, top.in_mode) == ("sleep", str(tmp_path), False, False)
    assert top.pane_pid > 1 and top.width > 0 and top.height > 0 and top.window_activity > 0
    assert top.fingerprint == (top.window_activity, top.cursor_x, top.cursor_y, top.history_size)

    split = by_location["main:0.1"]
    assert split.cwd == str(odd_dir)
    assert (split.session_name, split.window_index, split.pane_index) == ("main", 0, 1)

    window = by_location["main:1.0"]
    assert "x\\ty" in window.start_command  # tmux quotes the start command; the tab arrives escaped
    assert len({p.pane_id for p in inventory.panes}) == 3


def test_a_pane_listed_unchanged_is_the_same_answer_and_a_changed_one_is_read_again(tmux_server, tmp_path):
    server = _server(tmux_server)
    first = tmux.new_session(server, "main", str(tmp_path), ["sleep", "600"])
    assert first.ok, first.error
    tmux_server.run("split-window", "-d", "-t", first.value, "exec sleep 601")
    before = {p.location: p for p in tmux.list_panes(server, details=False).panes}
    tmux_server.run("rename-session", "-t", "main", "renamed")
    tmux_server.run("new-window", "-d", "-t", "renamed:", "exec sleep 602")
    tmux_server.run("resize-pane", "-t", before["main:0.1"].pane_id, "-y", "5")
    after = {p.pane_id: p for p in tmux.list_panes(server, details=False).panes}

    assert sorted(p.location for p in after.values()) == ["renamed:0.0", "renamed:0.1", "renamed:1.0"]
    resized = after[before["main:0.1"].pane_id]
    assert resized.height == 5 != before["main:0.1"].height
    assert {p.start_command for p in after.values()} == {None}  # not asked for
    # A listing with details asks for other fields: no pane of the short listing stands in for one.
    detailed = tmux.list_panes(server).panes
    assert all(p.start_command is not None and p.cwd is not None for p in detailed)
    again = {p.pane_id: p for p in tmux.list_panes(server).panes}
    assert all(again[p.pane_id] is p for p in detailed)  # nothing changed: the same answers, not parsed again


def test_list_panes_reports_a_dead_pane(tmux_server, tmp_path):
    server = _server(tmux_server)
    started = tmux.new_session(server, "d", str(tmp_path), ["sleep", "600"])
    assert tmux.set_pane_option(server, started.value, "remain-on-exit", "on").ok
    tmux_server.run("respawn-pane", "-k", "-t", started.value, "true")
    pane = wait_for(lambda: [p for p in tmux.list_panes(server).panes if p.dead], timeout=20.0, message="the pane to die")[0]
    assert pane.pane_id == started.value


def test_capture_panes_splits_one_chained_call_exactly(tmux_server, tmp_path):
    server = _server(tmux_server)
    texts = {
        "one": "first pane\nline two\n",
        # A pane that prints what looks like afd's marker must not move the split.
        "two": "@@afd-begin %0\n@@afd-0123456789abcdef-0 1 %0\nstill pane two\n",
        "three": "%12 %% %s strftime bait\nthird\n",
    }
    panes = {name: _printing_pane(server, name, tmp_path, text) for name, text in texts.items()}
    for name, pane_id in panes.items():
        last = texts[name].splitlines()[-1]
        wait_for(lambda p=pane_id, last=last: last in _screen(server, p), timeout=20.0, message=f"pane {name} to print")

    results = tmux.capture_panes(server, list(panes.values()))
    assert list(results) == list(panes.values())
    for name, pane_id in panes.items():
        result = results[pane_id]
        assert result.presence is tmux.Presence.PRESENT and result.error is None
        assert capture_rows(result.text) == texts[name].splitlines()
        assert result.server_pid == tmux.list_panes(server).server_pid


def test_capture_keeps_every_row_of_the_screen(tmux_server, tmp_path):
    server = _server(tmux_server)
    pane_id = _printing_pane(server, "rows", tmp_path, "top\n")
    wait_for(lambda: "top" in _screen(server, pane_id), timeout=20.0, message="the pane to print")
    height = next(p.height for p in tmux.list_panes(server).panes if p.pane_id == pane_id)
    assert len(tmux.capture_panes(server, [pane_id])[pane_id].text.split("\n")) == height


def test_pane_killed_between_list_and_capture_is_gone_and_others_are_captured(tmux_server, tmp_path):
    server = _server(tmux_server)
    panes = [_printing_pane(server, f"s{i}", tmp_path, f"pane {i}\n") for i in range(4)]
    for i, pane_id in enumerate(panes):
        wait_for(lambda p=pane_id, i=i: f"pane {i}" in _screen(server, p), timeout=20.0, message=f"pane {i} to print")
    listed = [p.pane_id for p in tmux.list_panes(server).panes]
    assert sorted(listed) == sorted(panes)
    assert tmux.kill_pane(server, panes[1]).ok
    assert tmux.kill_pane(server, panes[2]).ok

    results = tmux.capture_panes(server, panes)
    assert [results[p].presence for p in panes] == [
        tmux.Presence.PRESENT,
        tmux.Presence.GONE,
        tmux.Presence.GONE,
        tmux.Presence.PRESENT,
    ]
    assert capture_rows(results[panes[0]].text) == ["pane 0"]
    assert capture_rows(results[panes[3]].text) == ["pane 3"]
    assert results[panes[1]].text is None and "can't find pane" in results[panes[1]].error


def test_capture_of_a_pane_id_that_never_existed_is_gone(tmux_server, tmp_path):
    server = _server(tmux_server)
    real = _printing_pane(server, "r", tmp_path, "real\n")
    wait_for(lambda: "real" in _screen(server, real), timeout=20.0, message="the pane to print")
    results = tmux.capture_panes(server, ["%999", real])
    assert results["%999"].presence is tmux.Presence.GONE
    assert capture_rows(results[real].text) == ["real"]


def test_capture_against_a_killed_server_answers_without_raising(tmux_server, tmp_path):
    server = _server(tmux_server)
    pane_id = _printing_pane(server, "k", tmp_path, "bye\n")
    tmux_server.kill()
    result = tmux.capture_panes(server, [pane_id])[pane_id]
    assert result.presence in (tmux.Presence.GONE, tmux.Presence.UNKNOWN)
    assert result.text is None and result.error
    assert tmux.list_panes(server).server_running is False
    assert tmux.pane_exists(server, pane_id) is tmux.Presence.GONE
    assert tmux.kill_pane(server, pane_id).outcome is tmux.Outcome.GONE


def test_a_server_that_does_not_answer_is_unknown_not_gone(tmux_server, tmp_path):
    server = _server(tmux_server)
    pane_id = _printing_pane(server, "t", tmp_path, "x\n")
    server_pid = tmux.server_info(server).pid
    os.kill(server_pid, signal.SIGSTOP)  # a hung server: the socket is there, nobody answers
    try:
        inventory = tmux.list_panes(server, timeout=0.5)
        capture = tmux.capture_panes(server, [pane_id], timeout=0.5)[pane_id]
        presence = tmux.pane_exists(server, pane_id, timeout=0.5)
        killed = tmux.kill_pane(server, pane_id, timeout=0.5)
    finally:
        os.kill(server_pid, signal.SIGCONT)
    assert (inventory.answered, inventory.error is not None) == (False, True)
    assert (capture.presence, capture.text) == (tmux.Presence.UNKNOWN, None)
    assert "did not answer" in capture.error
    assert presence is tmux.Presence.UNKNOWN
    assert killed.outcome is tmux.Outcome.UNKNOWN


def test_capture_on_a_server_whose_sessions_all_closed_is_gone(tmux_server, tmp_path):
    server = _server(tmux_server)
    pane_id = _printing_pane(server, "only", tmp_path, "x\n")
    assert tmux.kill_pane(server, pane_id).ok
    assert tmux.list_panes(server).server_running  # exit-empty off: the server stays up with nothing in it
    assert tmux.capture_panes(server, [pane_id])[pane_id].presence is tmux.Presence.GONE


def test_capture_of_no_panes_runs_nothing(tmux_server):
    assert tmux.capture_panes(_server(tmux_server), []) == {}


def test_capture_rejects_a_target_that_is_not_a_pane_id(tmux_server):
    with pytest.raises(ValueError):
        tmux.capture_panes(_server(tmux_server), ["main:0.0; kill-server"])


def test_server_info_and_pane_exists(tmux_server, tmp_path):
    server = _server(tmux_server)
    info = tmux.server_info(server)
    assert (info.running, info.answered, info.socket_path) == (True, True, str(tmux_server.socket_path))
    pane_id = tmux.new_session(server, "e", str(tmp_path), ["sleep", "600"]).value
    assert tmux.pane_exists(server, pane_id) is tmux.Presence.PRESENT
    assert tmux.pane_exists(server, pane_id, server_pid=info.pid) is tmux.Presence.PRESENT
    assert tmux.pane_exists(server, pane_id, server_pid=info.pid + 1) is tmux.Presence.GONE
    assert tmux.pane_exists(server, "%999") is tmux.Presence.GONE
    stopped = tmux.server_info(tmux.ServerRef(socket_name=f"afd-test-none-{secrets.token_hex(6)}"))
    assert (stopped.running, stopped.answered) == (False, True)


def test_new_session_with_a_taken_name_fails_without_changing_anything(tmux_server, tmp_path):
    server = _server(tmux_server)
    assert tmux.new_session(server, "dup", str(tmp_path), ["sleep", "600"]).ok
    again = tmux.new_session(server, "dup", str(tmp_path), ["sleep", "600"])
    assert again.outcome is tmux.Outcome.FAILED and "duplicate session" in again.error
    assert len(tmux.list_panes(server).panes) == 1


def test_new_session_passes_environment_and_cwd(tmux_server, tmp_path):
    server = _server(tmux_server)
    pane_id = tmux.new_session(
        server, "env", str(tmp_path), ["sh", "-c", 'echo "[$AFD_X] $(pwd)"; exec sleep 600'], env={"AFD_X": "a b"}
    ).value
    wait_for(lambda: f"[a b] {tmp_path}" in _screen(server, pane_id), timeout=20.0, message="the pane to print its environment")


def test_send_text_pastes_multiline_text_then_enter(tmux_server, tmp_path):
    server = _server(tmux_server)
    out = tmp_path / "typed.txt"
    pane_id = tmux.new_session(server, "in", str(tmp_path), ["sh", "-c", f"cat > {shlex.quote(str(out))}"]).value
    assert tmux.send_text(server, pane_id, 'line one\nline "two" $HOME').ok
    wait_for(lambda: out.exists() and out.read_text().endswith("\n") and "two" in out.read_text(), timeout=20.0, message="the text to arrive")
    assert out.read_text().replace("\r", "\n").split("\n")[:2] == ["line one", 'line "two" $HOME']
    assert tmux.send_text(server, "%999", "x").outcome is tmux.Outcome.GONE
    assert "afd-" not in tmux_server.run("list-buffers").stdout  # no paste buffer left behind


def test_respawn_keeps_the_pane_id(tmux_server, tmp_path):
    server = _server(tmux_server)
    pane_id = tmux.new_session(server, "re", str(tmp_path), ["sleep", "600"]).value
    assert tmux.set_pane_option(server, pane_id, "remain-on-exit", "on").ok
    old_pid = tmux.list_panes(server).panes[0].pane_pid
    assert tmux.respawn_pane(server, pane_id, str(tmp_path), ["sh", "-c", "echo respawned; exec sleep 600"], kill=True).ok
    wait_for(lambda: "respawned" in _screen(server, pane_id), timeout=20.0, message="the respawned process to print")
    (pane,) = tmux.list_panes(server).panes
    assert pane.pane_id == pane_id and pane.pane_pid != old_pid
    # A live pane is not respawned without kill: tmux refuses and nothing changes.
    refused = tmux.respawn_pane(server, pane_id, str(tmp_path), ["true"])
    assert refused.outcome is tmux.Outcome.FAILED
    assert tmux.list_panes(server).panes[0].pane_pid == pane.pane_pid


def test_send_keys_and_kill_pane(tmux_server, tmp_path):
    server = _server(tmux_server)
    pane_id = tmux.new_session(server, "keys", str(tmp_path), ["sh", "-c", "read x; echo got:$x; exec sleep 600"]).value
    assert tmux.send_keys(server, pane_id, "hi", "Enter").ok
    wait_for(lambda: "got:hi" in _screen(server, pane_id), timeout=20.0, message="the keys to arrive")
    assert tmux.kill_pane(server, pane_id).ok
    assert tmux.pane_exists(server, pane_id) is tmux.Presence.GONE
    assert tmux.kill_pane(server, pane_id).outcome is tmux.Outcome.GONE


# --- every argument arrives as one literal argument ------------------------------


def _argv_pane(server, tmp_path, session: str, args: list[str], cwd: Path | None = None, env=None) -> Path:
    """A pane whose program writes each argument it received (and its cwd, and $AFD_V) to a file, one per line."""
    out = tmp_path / f"{secrets.token_hex(4)}.args"
    script = 'pwd > "$0"; printf "%s\\n" "$AFD_V" >> "$0"; for a; do printf "[%s]\\n" "$a" >> "$0"; done; exec sleep 600'
    started = tmux.new_session(server, session, str(cwd or tmp_path), ["sh", "-c", script, str(out), *args], env=env)
    assert started.ok, started.error
    return out


def _read_when_written(out: Path, rows: int) -> list[str]:
    return wait_for(
        lambda: (lines := out.read_text().splitlines() if out.exists() else []) and len(lines) >= rows and lines,
        timeout=20.0,
        message=f"{out.name} to be written",
    )


def test_an_argument_ending_in_a_semicolon_arrives_whole(tmux_server, tmp_path):
    server = _server(tmux_server)
    args = ["fix it;", "ends in \\;", ";", "plain"]
    out = _argv_pane(server, tmp_path, "semi", args)
    assert _read_when_written(out, 2 + len(args))[2:] == [f"[{a}]" for a in args]


def test_a_crafted_argument_list_runs_no_tmux_command(tmux_server, tmp_path):
    server = _server(tmux_server)
    marker = tmp_path / "ran"
    crafted = ["please fix;", "run-shell", f"touch {marker}", ";", "kill-server"]
    out = _argv_pane(server, tmp_path, "crafted", crafted)
    assert _read_when_written(out, 2 + len(crafted))[2:] == [f"[{a}]" for a in crafted]
    assert tmux.list_panes(server).server_running
    assert not marker.exists()


def test_format_text_in_a_path_name_or_environment_is_not_run(tmux_server, tmp_path):
    server = _server(tmux_server)
    marker = tmp_path / "ran"
    odd = tmp_path / "wt #(touch ran) #{pid}"
    odd.mkdir()
    # (A directory name cannot hold the marker's slashes; were it expanded, the pane's cwd would differ.)
    out = _argv_pane(server, tmp_path, f"n#(touch {marker})", ["x"], cwd=odd, env={"AFD_V": f"#(touch {marker})"})
    lines = _read_when_written(out, 3)
    assert lines[:2] == [str(odd), f"#(touch {marker})"]
    names = [p.session_name for p in tmux.list_panes(server).panes]
    assert f"n#(touch {marker})" in names
    respawned = tmux.respawn_pane(server, tmux.list_panes(server).panes[0].pane_id, str(odd), ["sh", "-c", f"pwd > {shlex.quote(str(out))}; exec sleep 600"], kill=True)
    assert respawned.ok, respawned.error
    wait_for(lambda: out.read_text().strip() == str(odd), timeout=20.0, message="the respawned pane to print its cwd")
    assert not marker.exists()


def test_a_one_word_command_is_not_shell_code(tmux_server, tmp_path):
    server = _server(tmux_server)
    marker = tmp_path / "ran"
    started = tmux.new_session(server, "one", str(tmp_path), [f"no-such-agent; touch {marker}"])
    assert started.ok, started.error
    # The pane's program is that whole odd name (not found); a shell would have run `touch`.
    wait_for(lambda: not tmux_server.pane_exists(started.value), timeout=20.0, message="the pane to close")
    assert not marker.exists()


# --- capture in as few calls as tmux's command size allows -------------------------


def test_capture_of_500_panes_is_split_to_fit_and_sees_every_pane(tmux_server, tmp_path):
    server = _server(tmux_server)
    first = tmux.new_session(server, "many", str(tmp_path), ["sh", "-c", "echo pane-ok; exec sleep 600"])
    assert first.ok, first.error
    # Windows made in chains of 100 (each within tmux's size limit), all printing the same line.
    for _ in range(5):
        chain = []
        for _ in range(100):
            chain += ["new-window", "-d", "-t", "many:", "sh -c 'echo pane-ok; exec sleep 600'", ";"]
        tmux_server.run(*chain[:-1])
    panes = [p.pane_id for p in tmux.list_panes(server).panes]
    assert len(panes) == 501
    calls = []
    real_run = tmux._run

    def counting_run(srv, args, timeout, stdin=None):
        calls.append(tmux._packed_size(args))
        return real_run(srv, args, timeout, stdin)

    tmux._run = counting_run
    try:
        def all_printed():
            calls.clear()
            results = tmux.capture_panes(server, panes, timeout=20.0)
            return all(r.presence is tmux.Presence.PRESENT and "pane-ok" in r.text for r in results.values())

        wait_for(all_printed, timeout=60.0, message="every one of 501 panes captured with its text")
    finally:
        tmux._run = real_run
    assert 1 < len(calls) <= 1 + sum(calls) // tmux._COMMAND_BYTES + 1
    assert max(calls) <= tmux._COMMAND_BYTES


def test_a_chain_tmux_refuses_as_too_long_is_split_further(tmux_server, tmp_path, monkeypatch):
    server = _server(tmux_server)
    panes = [_printing_pane(server, f"s{i}", tmp_path, f"pane {i}\n") for i in range(6)]
    for i, p in enumerate(panes):
        wait_for(lambda p=p, i=i: f"pane {i}" in _screen(server, p), timeout=20.0, message="the pane to print")
    # Pretend the limit is far larger than it is: the first chains are refused by tmux itself.
    monkeypatch.setattr(tmux, "_COMMAND_BYTES", 10**6)
    padding = "x" * 4000
    real = tmux._capture_commands
    monkeypatch.setattr(
        tmux,
        "_capture_commands",
        lambda pane_id, marker: [*real(pane_id, marker), ["set-option", "-q", "-p", "-t", pane_id, "@afd-pad", padding]],
    )
    results = tmux.capture_panes(server, panes)
    assert [capture_rows(results[p].text)[0] for p in panes] == [f"pane {i}" for i in range(6)]
