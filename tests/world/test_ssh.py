"""How afd runs ssh: its options fixed whatever ~/.ssh/config says, a DEST that is an option refused, afd's own key."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from afd.world.ssh import DestError, Transport, authorized_line, check_dest, ensure_key


@pytest.mark.parametrize("dest, port", [("-oProxyCommand=touch /tmp/x", None), ("-p", None), ("", None),
                                        ("host name", None), ("host\nProxyCommand x", None), ("ws", 0),
                                        ("ws", 70000)])
def test_a_dest_that_is_an_option_or_not_one_word_is_refused(dest, port):
    with pytest.raises(DestError):
        check_dest(dest, port)


@pytest.mark.parametrize("dest", ["ws", "me@ws.example.org", "me@[::1]", "alias-from-ssh-config"])
def test_ordinary_dests_pass(dest):
    check_dest(dest, 2222)


def test_the_options_are_fixed_and_dest_comes_after_double_dash(xdg_dirs):
    tmp_path = xdg_dirs["XDG_RUNTIME_DIR"]  # short: a control path must fit a Unix socket's
    t = Transport(key=tmp_path / "k", known_hosts=tmp_path / "kh", control_dir=tmp_path / "c", timeout=7)
    argv = t.argv("me@ws", 2222, ("version",))
    text = " ".join(argv)
    for option in ("BatchMode=yes", "ConnectTimeout=7", "IdentitiesOnly=yes", f'IdentityFile="{tmp_path / "k"}"',
                   "StrictHostKeyChecking=accept-new", "ControlMaster=auto", "ControlPersist=", "ForwardAgent=no",
                   "PermitLocalCommand=no", "RequestTTY=no"):
        assert option in text, option
    assert f'ControlPath="{tmp_path / "c"}/c-' in text
    assert argv[-3:] == ["--", "me@ws", "version"] and argv[argv.index("-p") + 1] == "2222"
    assert t.control_path("me@ws", 2222) != t.control_path("me@ws", 2223)


def test_a_control_path_too_long_for_a_socket_is_a_clear_error(tmp_path):
    t = Transport(key=tmp_path / "k", known_hosts=tmp_path / "kh", control_dir=Path("/tmp/" + "x" * 120))
    with pytest.raises(Exception, match="too long for a Unix socket"):
        t.control_path("ws", None)


def test_afds_own_key_is_ed25519_0600_and_made_once(tmp_path):
    key = tmp_path / "ssh" / "id_ed25519"
    public = ensure_key(key)
    assert public.startswith("ssh-ed25519 ") and key.stat().st_mode & 0o777 == 0o600
    assert ensure_key(key) == public
    assert (tmp_path / "ssh").stat().st_mode & 0o777 == 0o700


def test_the_authorized_line_forces_afd_remote_and_restricts(tmp_path):
    public = ensure_key(tmp_path / "k")
    line = authorized_line(public, ["/opt/afd venv/bin/afd", "remote"])
    assert line == f'command="\'/opt/afd venv/bin/afd\' remote",restrict {public}'
    # ssh-keygen reads it as a valid authorized_keys line.
    path = tmp_path / "authorized_keys"
    path.write_text(line + "\n")
    done = subprocess.run(["ssh-keygen", "-l", "-f", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
