"""The `command` notifier: a program of the user's, the event's JSON on its stdin. No shell.

The program runs in a session of its own, so a timeout ends it and
anything it started; its output goes to a file of which only the start is
read, so a chatty program costs no memory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile

from afd.config.notifiers import NotifierSettings
from afd.model import Notice
from afd.notifiers import answer
from afd.notifiers.answer import Answer

OUTPUT_LIMIT = 4096


def send(settings: NotifierSettings, notice: Notice) -> Answer:
    argv = [os.path.expanduser(a) if i == 0 else a for i, a in enumerate(settings.argv)]
    data = json.dumps(notice.payload, ensure_ascii=False).encode() + b"\n"
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True,
            )
        except FileNotFoundError:
            return answer.failed(f"{argv[0]}: no such program")
        except PermissionError:
            return answer.failed(f"{argv[0]}: not executable")
        except OSError as exc:
            return answer.failed(f"{argv[0]}: {exc.strerror or exc}")
        try:
            proc.communicate(data, timeout=settings.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return answer.retry(f"{argv[0]} did not finish within {settings.timeout:g}s; stopped")
        except BrokenPipeError:
            proc.wait()
        out.seek(0)
        said = out.read(OUTPUT_LIMIT).decode("utf-8", "replace").strip()
    first = said.splitlines()[0][:200] if said else ""
    detail = f"exit {proc.returncode}" + (f": {first}" if first else "")
    return answer.sent(detail) if proc.returncode == 0 else answer.retry(detail)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
