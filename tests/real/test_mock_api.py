"""The mock API and the installer's bookkeeping, without a real CLI (no root needed)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import install
import pytest
import shapes
from mock_api import __file__ as MOCK

from harness import wait_for


@pytest.fixture
def mock(tmp_path):
    proc = subprocess.Popen([sys.executable, MOCK, str(tmp_path), "--http-port", "0"], stderr=subprocess.PIPE)
    try:
        ready = wait_for(lambda: (tmp_path / "ready").exists() and json.loads((tmp_path / "ready").read_text()),
                         message="the mock")
        yield tmp_path, f"http://127.0.0.1:{ready['http_port']}"
    finally:
        proc.kill()
        proc.wait(timeout=10)


def post(url: str, body: dict) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as answer:
        return answer.code, dict(answer.headers), answer.read()


def test_each_call_gets_the_answer_scripted_at_that_moment_and_is_logged(mock):
    root, base = mock
    shapes.write_answer(root, "codex", shapes.codex_limit("plus", 1796000000, shapes.codex_usage_headers(100, 1796000000)))
    status, headers, body = post(f"{base}/v1/responses", {"model": "gpt-5.3-codex"})
    assert status == 429 and headers["x-codex-primary-used-percent"] == "100"
    assert json.loads(body)["error"] == {"type": "usage_limit_reached", "message": "The usage limit has been reached",
                                         "plan_type": "plus", "resets_at": 1796000000}

    shapes.write_answer(root, "codex", shapes.codex_answer("All done here.", delay=0))
    status, headers, body = post(f"{base}/v1/responses", {"model": "gpt-5.3-codex"})
    events = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    assert [e["type"] for e in events][0] == "response.created" and events[-1]["type"] == "response.completed"
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta").strip() == "All done here."

    log = [json.loads(line) for line in (root / "requests.jsonl").read_text().splitlines()]
    assert [(e["api"], e["model"], e["status"], e["kind"]) for e in log] == [
        ("codex", "gpt-5.3-codex", 429, "limit"), ("codex", "gpt-5.3-codex", 200, "answer")]


def test_claude_wall_carries_the_unified_headers_and_a_warning_the_window_ones(mock):
    root, base = mock
    shapes.write_answer(root, "claude", shapes.claude_limit(1796000000, "seven_day"))
    status, headers, _ = post(f"{base}/v1/messages?beta=true", {"model": "claude-opus-5-5"})
    assert status == 429
    assert (headers["anthropic-ratelimit-unified-status"], headers["anthropic-ratelimit-unified-reset"],
            headers["anthropic-ratelimit-unified-representative-claim"]) == ("rejected", "1796000000", "seven_day")
    shapes.write_answer(root, "claude", shapes.claude_warning(1796000000, "five_hour", 0.92))
    status, headers, _ = post(f"{base}/v1/messages?beta=true", {"model": "claude-opus-5-5"})
    assert status == 200 and headers["anthropic-ratelimit-unified-status"] == "allowed_warning"
    assert headers["anthropic-ratelimit-unified-5h-utilization"] == "0.92"


def test_a_partial_install_is_not_taken_for_a_finished_one(tmp_path):
    pin = install.Pin("codex", "@openai/codex", "0.171.0", "codex")
    folder = tmp_path / pin.folder
    assert pin.folder == "codex-0.171.0" and not install.installed(pin, tmp_path)
    meta = folder / "node_modules" / "@openai" / "codex" / "package.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"version": "0.171.0"}))
    assert not install.installed(pin, tmp_path)  # no command yet
    install.binary(pin, tmp_path).parent.mkdir(parents=True)
    install.binary(pin, tmp_path).write_text("#!/bin/sh\n")
    assert install.installed(pin, tmp_path)
    meta.write_text(json.dumps({"version": "0.170.0"}))
    assert not install.installed(pin, tmp_path)  # another version is a bump to install
