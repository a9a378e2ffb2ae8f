"""Measure afd's poll cost and memory on a private tmux server, as ratios from one run.

    .venv/bin/python scripts/bench.py [--panes 50] [--polls 100]

Starts its own tmux server (`-L afd-bench-<pid>`), fills it with panes that
run a stand-in `claude` showing a static limit screen, and measures:

* one chained `capture-pane` of every pane against one `capture-pane` call
  per pane (the design's reason for chaining);
* a whole supervisor poll (inventory, identity, capture, detection, gates,
  store) per pane;
* detector time per capture;
* resident memory growth over many polls.

The server is killed and its socket removed at the end, even on failure.
"""

from __future__ import annotations

import argparse
import os
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from afd import tmux
from afd.config import Config
from afd.loader import load_plugins
from afd.model import Clock
from afd.store import Store
from afd.supervisor import Supervisor
from afd.text import capture_rows

SCREEN = r'''#!/usr/bin/env python3
import sys, time
print("> " + " ".join(sys.argv[1:]))
for i in range(20):
    print(f"⏺ Update(src/module_{i}.py)")
    print(f"  ⎿  Updated src/module_{i}.py with {i} additions")
print("  ⎿  You've hit your limit · resets 11pm (America/Anchorage)")
print("─" * 60)
print("❯ ")
print("─" * 60)
print("  ⏵⏵ accept edits on (shift+tab to cycle)")
sys.stdout.flush()
time.sleep(3600)
'''


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def timed(fn, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--panes", type=int, default=50)
    parser.add_argument("--polls", type=int, default=100)
    args = parser.parse_args()

    name = f"afd-bench-{os.getpid()}-{secrets.token_hex(3)}"
    work = Path(tempfile.mkdtemp(prefix="afd-bench-"))
    os.environ["XDG_STATE_HOME"] = str(work / "state")
    os.environ["XDG_CONFIG_HOME"] = str(work / "cfg")
    bin_dir = work / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(SCREEN)
    (bin_dir / "claude").chmod(0o755)
    server = tmux.ServerRef(socket_name=name)
    base = ["tmux", "-L", name]
    try:
        subprocess.run([*base, "-f", "/dev/null", "new-session", "-d", "-s", "bench", "-x", "120", "-y", "50",
                        f"{bin_dir}/claude 'bench pane 0'"], check=True)
        for i in range(1, args.panes):
            subprocess.run([*base, "new-window", "-d", "-t", "bench", f"{bin_dir}/claude 'bench pane {i}'"], check=True)
        time.sleep(1.5)
        inv = tmux.list_panes(server)
        ids = [p.pane_id for p in inv.panes]
        print(f"{len(ids)} panes on {name}")

        list_s = timed(lambda: tmux.list_panes(server), 20)
        chained_s = timed(lambda: tmux.capture_panes(server, ids), 20)
        single_s = timed(
            lambda: [subprocess.run([*base, "capture-pane", "-p", "-J", "-t", p], capture_output=True) for p in ids], 5
        )

        plugins = load_plugins(None, entry_points=False)
        texts = tmux.capture_panes(server, ids)
        rows = capture_rows(texts[ids[0]].text or "")
        clock = Clock(now=datetime.now(timezone.utc), local_zone=timezone.utc)
        detect_s = timed(lambda: plugins.detect("claude", rows, clock), 2000)

        store = Store(work / "state" / "afd" / "state.db")
        sup = Supervisor(Config(poll_interval=0.01), plugins, store, server)
        sup.poll()
        sup.poll()
        limited = sum(1 for r in store.list_sessions() if r.state == "limited")
        rss_before = rss_kib()
        poll_times = []
        for _ in range(args.polls):
            start = time.perf_counter()
            sup.poll()
            poll_times.append(time.perf_counter() - start)
        rss_after = rss_kib()
        store.close()
        poll_times.sort()
        median = poll_times[len(poll_times) // 2]

        print(f"list-panes (one call, all panes):           {list_s * 1000:7.2f} ms")
        print(f"capture, one chained call for all panes:    {chained_s * 1000:7.2f} ms")
        print(f"capture, one call per pane:                 {single_s * 1000:7.2f} ms")
        print(f"  ratio per-pane / chained:                 {single_s / chained_s:7.1f}x")
        print(f"detector (claude) per capture:              {detect_s * 1e6:7.1f} µs")
        print(f"whole supervisor poll, median:              {median * 1000:7.2f} ms  ({median * 1000 / len(ids):.2f} ms/pane)")
        print(f"  poll / chained capture alone:             {median / chained_s:7.1f}x")
        print(f"sessions limited after two polls:           {limited}/{len(ids)}")
        print(f"RSS before/after {args.polls} polls:           {rss_before} KiB / {rss_after} KiB ({(rss_after - rss_before):+d} KiB)")
        return 0
    finally:
        subprocess.run([*base, "kill-server"], capture_output=True)
        sock = Path(f"/tmp/tmux-{os.getuid()}") / name
        sock.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
