"""Start one real CLI on the mock API in a private tmux pane and keep it up, to look at it by hand.

    sudo .venv/bin/python tests/real/session.py claude [--api-key]
    sudo .venv/bin/python tests/real/session.py codex

It prints how to attach (`tmux -L NAME attach`) and where the mock's answer
files are; change the answers with shapes.py, e.g.

    python -c 'import sys; sys.path[:0] = ["tests/real"]; import shapes, time; \
      shapes.write_answer("MOCK_DIR", "claude", shapes.claude_limit(int(time.time()) // 60 * 60 + 7200))'

and capture a screen for tests/data/real with `tmux -L NAME capture-pane -p -J -t %0`.
Ctrl-C (or SIGTERM) ends everything it started.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import install  # noqa: E402
from netns import can_create, make_ca  # noqa: E402
from rig import Rig  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run one real agent CLI offline on the mock API, by hand.")
    parser.add_argument("agent", choices=("claude", "codex", "gemini", "opencode", "copilot"), help="which CLI to start")
    parser.add_argument("--api-key", action="store_true", help="claude: sign in with an API key, not to a plan")
    args = parser.parse_args(argv)
    why = can_create()
    if why:
        print(f"session: {why}", file=sys.stderr)
        return 1
    bins = {p.agent: install.binary(p) for p in install.pins() if install.installed(p)}
    if args.agent not in bins:
        print("session: the pinned CLIs are not installed; run scripts/real-agents install", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # end cleanly on SIGTERM too
    scratch = Path(tempfile.mkdtemp(prefix="afd-real-"))
    rig = Rig(scratch=scratch, claude_bin=bins.get("claude"), codex_bin=bins.get("codex"),
              gemini_bin=bins.get("gemini"), opencode_bin=bins.get("opencode"), copilot_bin=bins.get("copilot"),
              ca=make_ca(scratch / "ca"), socket_prefix="afd-real-")
    try:
        rig.start()
        shop = scratch / "shop"
        shop.mkdir()
        subprocess.run(["git", "init", "-q", str(shop)], check=True)
        if args.agent == "claude":
            pane = rig.start_claude(shop, subscriber=not args.api_key)
        elif args.agent == "codex":
            pane = rig.start_codex(shop)
        else:
            pane = getattr(rig, f"start_{args.agent}")(shop)
        print(f"attach:    tmux -L {rig.tmux.name} attach   (pane {pane.pane})")
        print(f"answers:   {rig.mock_dir}/{args.agent}.json   requests: {rig.mock_dir}/requests.jsonl")
        print("Ctrl-C ends it all.", flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        rig.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
