"""The `command` notifier: a program of the user's, the event's JSON on its stdin. No shell.

The program runs in a session of its own, so a timeout ends it and
anything it started. Its output comes through a pipe of which the first
OUTPUT_LIMIT bytes are kept for the answer; the rest is read and dropped as
it comes, so a chatty program neither blocks on a full pipe nor costs
memory or disk, however much it prints.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time

from afd.config.notifiers import NotifierSettings
from afd.model import Notice
from afd.notifiers import answer
from afd.notifiers.answer import Answer

OUTPUT_LIMIT = 4096
CHUNK = 65536


def send(settings: NotifierSettings, notice: Notice) -> Answer:
    argv = [os.path.expanduser(a) if i == 0 else a for i, a in enumerate(settings.argv)]
    data = json.dumps(notice.payload, ensure_ascii=False).encode() + b"\n"
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True,
        )
    except FileNotFoundError:
        return answer.failed(f"{argv[0]}: no such program")
    except PermissionError:
        return answer.failed(f"{argv[0]}: not executable")
    except OSError as exc:
        return answer.failed(f"{argv[0]}: {exc.strerror or exc}")
    try:
        kept = _converse(proc, data, time.monotonic() + settings.timeout)
    finally:
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()
    if kept is None:
        _kill_group(proc)
        return answer.retry(f"{argv[0]} did not finish within {settings.timeout:g}s; stopped")
    said = kept.decode("utf-8", "replace").strip()
    first = said.splitlines()[0][:200] if said else ""
    detail = f"exit {proc.returncode}" + (f": {first}" if first else "")
    return answer.sent(detail) if proc.returncode == 0 else answer.retry(detail)


def _converse(proc: subprocess.Popen, data: bytes, deadline: float) -> bytes | None:
    """Write `data` to the program and read its output until it exits: the first OUTPUT_LIMIT bytes, or None at the deadline.

    One thread, one selector: the input is written as the pipe takes it (a
    program that reads nothing must not block afd), the output is read as it
    comes and only its start is kept. Once the program has exited, what its
    pipe still holds is read, and a child it left holding the pipe open is
    not waited for.
    """
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    kept = bytearray()
    os.set_blocking(stdin.fileno(), False)
    os.set_blocking(stdout.fileno(), False)
    left = memoryview(data)

    def read_some() -> bool:
        """Read what the pipe holds now; False at its end."""
        while True:
            try:
                chunk = os.read(stdout.fileno(), CHUNK)
            except BlockingIOError:
                return True
            if not chunk:
                return False
            if len(kept) < OUTPUT_LIMIT:
                kept.extend(chunk[:OUTPUT_LIMIT - len(kept)])
            if time.monotonic() > deadline:
                return True

    with selectors.DefaultSelector() as sel:
        sel.register(stdout, selectors.EVENT_READ)
        sel.register(stdin, selectors.EVENT_WRITE)
        while True:
            wait = deadline - time.monotonic()
            if wait <= 0:
                return None
            for key, _ in sel.select(min(wait, 0.2)) if sel.get_map() else ():
                if key.fileobj is stdin:
                    try:
                        left = left[os.write(stdin.fileno(), left):]
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:
                        left = left[:0]  # it stopped reading: what it did not take is its business
                    if not left:
                        sel.unregister(stdin)
                        stdin.close()
                elif not read_some():
                    sel.unregister(stdout)
            if proc.poll() is not None:
                read_some()
                return bytes(kept)
            if not sel.get_map():
                try:
                    proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    return None
                return bytes(kept)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
