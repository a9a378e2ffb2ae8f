"""A local stand-in for the Anthropic and OpenAI APIs that the real CLIs talk to.

Run inside a loopback-only network namespace, one process per test:

    python mock_api.py DIR [--https-port 443 --cert C --key K] [--http-port 8000]

The answer to every model call is whatever ``DIR/<api>.json`` holds at that
moment (``api`` is ``claude`` for ``/v1/messages``, ``codex`` for
``/v1/responses``, ``gemini`` for ``/v1beta/models/M:generateContent`` and
``…:streamGenerateContent``, ``chat`` for the OpenAI-compatible
``/v1/chat/completions``), so a test scripts the mock by rewriting that file (see
``shapes.py`` for what the real APIs send). An answer is a status, headers,
and either a JSON body or a list of server-sent events sent ``delay``
seconds apart (slow enough for the CLI to draw its spinner). Every request
is appended to ``DIR/requests.jsonl``. The start-up calls Claude Code makes
to its own hosts (hello, OAuth profile, …) get small fixed answers.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MODEL_PATHS = {"/v1/messages": "claude", "/v1/responses": "codex", "/v1/responses/compact": "codex",
               "/v1/chat/completions": "chat", "/chat/completions": "chat"}  # GitHub's Copilot API has no /v1
# Gemini names the model and the method in the path: /v1beta/models/gemini-2.5-pro:streamGenerateContent.
GEMINI_METHODS = (":streamGenerateContent", ":generateContent")

# Claude Code believes it is signed in to a Max plan only when the profile
# says so; only then does it draw the subscriber wall and its menu.
PROFILE = {
    "account": {
        "uuid": "00000000-0000-4000-8000-000000000001",
        "email": "afd-test@example.invalid",
        "full_name": "afd test",
        "display_name": "afd",
        "has_claude_max": True,
        "has_claude_pro": False,
    },
    "organization": {
        "uuid": "00000000-0000-4000-8000-000000000002",
        "name": "afd test",
        "organization_type": "claude_max",
        "billing_type": "stripe_subscription",
        "rate_limit_tier": "default_claude_max_20x",
    },
}
# GitHub Copilot CLI signed in with a token: the account it reads on
# api.github.com (its plan, quotas and where its model API is) and the one
# model the mock offers on api.githubcopilot.com, answered at /chat/completions.
COPILOT_USER = {
    "login": "afd-test",
    "access_type_sku": "plus_monthly_subscriber_quota",
    "analytics_tracking_id": "afd-test",
    "assigned_date": "2026-01-01T00:00:00Z",
    "can_signup_for_limited": False,
    "chat_enabled": True,
    "copilot_plan": "individual_pro",
    "organization_login_list": [],
    "organization_list": [],
    "endpoints": {"api": "https://api.githubcopilot.com"},
    "quota_reset_date": "2027-01-01",
    "quota_snapshots": {
        "chat": {"entitlement": 0, "overage_count": 0, "overage_permitted": False, "percent_remaining": 100.0,
                 "quota_id": "chat", "quota_remaining": 0.0, "remaining": 0, "unlimited": True},
        "completions": {"entitlement": 0, "overage_count": 0, "overage_permitted": False, "percent_remaining": 100.0,
                        "quota_id": "completions", "quota_remaining": 0.0, "remaining": 0, "unlimited": True},
        "premium_interactions": {"entitlement": 300, "overage_count": 0, "overage_permitted": False,
                                 "percent_remaining": 50.0, "quota_id": "premium_interactions",
                                 "quota_remaining": 150.0, "remaining": 150, "unlimited": False},
    },
}
COPILOT_MODELS = {"object": "list", "data": [{
    "id": "gpt-4.1", "name": "GPT-4.1", "object": "model", "vendor": "Azure OpenAI", "version": "gpt-4.1-2025-04-14",
    "preview": False, "is_chat_default": True, "is_chat_fallback": True,
    "model_picker_enabled": True, "model_picker_category": "versatile",
    "billing": {"is_premium": False, "multiplier": 0},
    "policy": {"state": "enabled", "terms": "Enable access to the latest GPT-4.1 model from OpenAI."},
    "supported_endpoints": ["/chat/completions"],
    "capabilities": {"family": "gpt-4.1", "object": "model_capabilities", "tokenizer": "o200k_base", "type": "chat",
                     "limits": {"max_context_window_tokens": 128000, "max_output_tokens": 16384, "max_prompt_tokens": 128000},
                     "supports": {"parallel_tool_calls": True, "streaming": True, "tool_calls": True}},
}]}
# Its Auto model (the default) asks which model to use for the session first.
COPILOT_SESSION = {"selected_model": "gpt-4.1", "session_token": "afd-test-session", "expires_at": 4102444800,
                   "available_models": ["gpt-4.1"]}
FIXED = {"/api/oauth/profile": PROFILE, "/copilot_internal/user": COPILOT_USER, "/models": COPILOT_MODELS,
         "/models/session": COPILOT_SESSION, "/auto": COPILOT_SESSION}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "afd-mock"

    def log_message(self, fmt: str, *args) -> None:  # the JSON log replaces the stderr one
        pass

    def do_GET(self) -> None:
        self._serve(b"")

    def do_HEAD(self) -> None:
        self._send_json(200, {}, {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._serve(self.rfile.read(length) if length else b"")

    def _serve(self, body: bytes) -> None:
        path = self.path.split("?", 1)[0]
        api = MODEL_PATHS.get(path) or ("gemini" if path.endswith(GEMINI_METHODS) else None)
        answer = self._answer(api) if api else {"status": 200, "body": self._fixed(path)}
        self._log(path, api, body, answer)
        if "events" in answer:
            self._send_events(answer)
        else:
            self._send_json(answer.get("status", 200), answer.get("headers", {}), answer.get("body", {}))

    def _fixed(self, path: str) -> object:
        """The start-up answers; ``DIR/profile.json``, when there, replaces the account's profile, and
        ``DIR/fixed.json`` (``{path: answer}``) any other path's (a Copilot account's plan, its models)."""
        if path == "/api/oauth/profile":
            try:
                return json.loads((self.server.root / "profile.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                pass
        try:
            override = json.loads((self.server.root / "fixed.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            override = {}
        if isinstance(override, dict) and path in override:
            return override[path]
        return FIXED.get(path, {})

    def _answer(self, api: str) -> dict:
        try:
            return json.loads((self.server.root / f"{api}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"status": 500, "body": {"error": {"type": "api_error", "message": f"mock: no {api}.json"}}}

    def _log(self, path: str, api: str | None, body: bytes, answer: dict) -> None:
        try:
            request = json.loads(body) if body else None
        except ValueError:
            request = body.decode("utf-8", "replace")
        model = request.get("model") if isinstance(request, dict) else None
        if api == "gemini":
            model = self.path.split("?", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
        entry = {
            "at": time.time(),
            "method": self.command,
            "host": self.headers.get("Host"),
            "path": self.path,
            "api": api,
            "model": model,
            "status": answer.get("status", 200),
            "kind": answer.get("kind"),
            "prompts": _prompts(request),
        }
        with self.server.lock, open(self.server.root / "requests.jsonl", "a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")

    def _send_json(self, status: int, headers: dict, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, str(value))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, answer: dict) -> None:
        self.send_response(answer.get("status", 200))
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for key, value in answer.get("headers", {}).items():
            self.send_header(key, str(value))
        self.end_headers()
        self.close_connection = True
        delay = float(answer.get("delay", 0))
        try:
            for event in answer["events"]:
                if isinstance(event, str):  # a chat stream ends with the bare `data: [DONE]`
                    self.wfile.write(f"data: {event}\n\n".encode())
                    continue
                # Gemini's and the chat API's streams have data lines only; their chunks carry no type.
                head = f"event: {event['type']}\n" if "type" in event else ""
                self.wfile.write(f"{head}data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                if delay:
                    time.sleep(delay)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the CLI gave up on the stream (Esc, exit); nothing to finish


def _prompts(request: object) -> list[str]:
    """The text of the user's turns in a model call (Codex's ``input``, Claude's ``messages``), oldest first."""
    if not isinstance(request, dict):
        return []
    texts = []
    for item in request.get("input") or request.get("messages") or request.get("contents") or []:
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content") if "content" in item else item.get("parts")
        parts = [content] if isinstance(content, str) else [c.get("text") for c in content or [] if isinstance(c, dict)]
        texts += [t for t in parts if isinstance(t, str)]
    return texts


def serve(root: Path, port: int, context: ssl.SSLContext | None) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.root = root
    server.lock = _LOCK
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


_LOCK = threading.Lock()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the mock APIs from DIR until killed.")
    parser.add_argument("dir", type=Path, help="directory with claude.json / codex.json; requests.jsonl is written there")
    parser.add_argument("--http-port", type=int, default=8000, help="plain HTTP port (Codex); 0: any free one")
    parser.add_argument("--https-port", type=int, default=443, help="TLS port (Claude Code and its start-up checks)")
    parser.add_argument("--cert", type=Path, help="server certificate (PEM) for the TLS port")
    parser.add_argument("--key", type=Path, help="its private key (PEM)")
    args = parser.parse_args(argv)
    ports = {"pid": os.getpid(), "http_port": serve(args.dir, args.http_port, None).server_address[1]}
    if args.cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.cert, args.key)
        ports["https_port"] = serve(args.dir, args.https_port, context).server_address[1]
    # Written last: its presence says the mock answers (port 0 picks a free port).
    (args.dir / "ready.tmp").write_text(json.dumps(ports), encoding="utf-8")
    os.replace(args.dir / "ready.tmp", args.dir / "ready")
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
