"""One real agent CLI in a private tmux pane, offline, on the mock API.

A `Rig` owns everything one test starts: a loopback-only namespace, the mock
API in it, a tmux server whose panes live in it, throwaway HOME /
CLAUDE_CONFIG_DIR / CODEX_HOME with first-start dialogs answered in advance,
and — at `close()` — the end of every process it started, Codex's detached
`codex app-server` daemon included (by pid: it outlives the pane and SIGTERM).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import shapes
from netns import Namespace, open_namespace

from harness import TmuxServer, process_alive, wait_for

MOCK = Path(__file__).with_name("mock_api.py")
CODEX_PORT = 8000
# Long enough that no token the CLI checks looks expired, in ms like the CLI writes it.
FAR_FUTURE_MS = 4102444800000
API_KEY = "sk-ant-api03-afd-test-key-0000000000000000000000000000000000000000-AAAAAAAA"


def _ci_marker(name: str) -> bool:
    """A variable by which a program tells it runs under CI (`CI`, `CI_*`, `CONTINUOUS_INTEGRATION`, …)."""
    return name in ("CI", "CONTINUOUS_INTEGRATION", "BUILD_NUMBER", "RUN_ID") or name.startswith("CI_")


# OpenCode and Copilot (offline) talk to an OpenAI-compatible chat endpoint, which the mock calls `chat`.
API_OF = {"opencode": "chat", "copilot": "chat"}


@dataclass
class AgentPane:
    rig: Rig
    pane: str
    agent: str
    home: Path
    cwd: Path

    @property
    def api(self) -> str:
        """The mock's name for the API this agent calls (`requests.jsonl`'s `api`)."""
        return API_OF.get(self.agent, self.agent)

    def capture(self) -> str:
        return self.rig.tmux.capture(self.pane)

    def wait_for_screen(self, predicate, timeout: float = 30.0, message: str = "screen") -> str:
        shown: list[str] = [""]

        def check() -> str | None:
            shown[0] = self.capture()
            return shown[0] if predicate(shown[0]) else None

        try:
            return wait_for(check, timeout=timeout, interval=0.2, message=f"{message} in {self.agent} pane {self.pane}")
        except AssertionError as exc:
            screen = "\n".join(row for row in shown[0].splitlines() if row.strip())
            raise AssertionError(f"{exc}; the pane shows:\n{screen}") from None

    def wait_for_text(self, needle: str, timeout: float = 30.0) -> str:
        return self.wait_for_screen(lambda s: needle in s, timeout=timeout, message=repr(needle))

    def type(self, text: str, *, submits: bool = True) -> None:
        """Type ``text`` and Enter, the way a user would (never while a modal is up: it takes keys as choices).

        ``submits``: the text goes to the model, so wait until the mock saw the call.
        """
        before = len(self.rig.requests(self.api))
        self.rig.tmux.send_keys(self.pane, text, literal=True)
        # Keys sent before the composer is back (after /new, /clear) are lost;
        # and Enter in the same burst as the text reads as a pasted newline.
        self.wait_for_text(text, timeout=15)
        for _ in range(3):
            self.rig.tmux.send_keys(self.pane, "Enter")
            if not submits:
                return
            try:
                wait_for(lambda: len(self.rig.requests(self.api)) > before, timeout=8, interval=0.2)
                return
            except AssertionError:
                continue  # an Enter while the CLI was still starting up is dropped; an extra one on an empty composer is not
        screen = "\n".join(row for row in self.capture().splitlines() if row.strip())
        raise AssertionError(f"{self.agent} in pane {self.pane} never sent {text!r} to the mock API; the pane shows:\n{screen}")

    def captures(self, count: int = 2, gap: float = 0.7) -> list[str]:
        """``count`` captures ``gap`` s apart, oldest first: what afd's polls would see."""
        shots = [self.capture()]
        for _ in range(count - 1):
            time.sleep(gap)
            shots.append(self.capture())
        return shots

    def key(self, *keys: str) -> None:
        self.rig.tmux.send_keys(self.pane, *keys)


@dataclass
class Rig:
    scratch: Path
    claude_bin: Path | None
    codex_bin: Path | None
    ca: tuple[Path, Path, Path]
    socket_prefix: str = "afd-test-"
    gemini_bin: Path | None = None
    opencode_bin: Path | None = None
    copilot_bin: Path | None = None
    ns: Namespace | None = None
    mock: subprocess.Popen | None = None
    tmux: TmuxServer | None = None
    homes: list[Path] = field(default_factory=list)

    @property
    def mock_dir(self) -> Path:
        return self.scratch / "mock"

    def start(self) -> None:
        self.mock_dir.mkdir(parents=True, exist_ok=True)
        self.ns = open_namespace(self.scratch)
        shapes.write_answer(self.mock_dir, "claude", shapes.claude_answer())
        shapes.write_answer(self.mock_dir, "codex", shapes.codex_answer())
        shapes.write_answer(self.mock_dir, "gemini", shapes.gemini_answer())
        shapes.write_answer(self.mock_dir, "chat", shapes.chat_answer())
        _, cert, key = self.ca
        self.mock = subprocess.Popen(
            self.ns.command([sys.executable, str(MOCK), str(self.mock_dir), "--http-port", str(CODEX_PORT),
                             "--cert", str(cert), "--key", str(key)]),
            stdout=subprocess.DEVNULL,
            stderr=open(self.scratch / "mock.err", "wb"),
        )
        wait_for(lambda: (self.mock_dir / "ready").exists() or self.mock.poll() is not None, message="the mock API")
        if self.mock.poll() is not None:
            raise RuntimeError(f"the mock API did not start: {(self.scratch / 'mock.err').read_text()}")
        # Panes inherit the server's environment: no CI markers, or a CLI that checks them
        # (Gemini CLI) runs non-interactively and exits at once, as under CI=true.
        env = {k: v for k, v in os.environ.items() if k != "TMUX" and not _ci_marker(k)}
        self.tmux = TmuxServer(name=f"{self.socket_prefix}{secrets.token_hex(6)}", env=env, scratch=self.scratch)
        subprocess.run(
            self.ns.command(["tmux", "-L", self.tmux.name, "-f", "/dev/null", "start-server", ";",
                             "set-option", "-g", "exit-empty", "off", ";",
                             # else Claude Code draws a notice about tmux's config above its composer
                             "set-option", "-g", "focus-events", "on"]),
            check=True, capture_output=True, env=env, timeout=10,
        )

    def answer(self, api: str, answer: dict) -> None:
        shapes.write_answer(self.mock_dir, api, answer)

    def requests(self, api: str | None = None) -> list[dict]:
        try:
            lines = (self.mock_dir / "requests.jsonl").read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        entries = []
        for line in lines:
            try:
                entries.append(json.loads(line))
            except ValueError:
                break
        return [e for e in entries if api is None or e["api"] == api]

    # --- agents ---------------------------------------------------------------

    def _home(self, name: str) -> Path:
        home = self.scratch / f"{name}-{len(self.homes)}"
        home.mkdir(parents=True)
        self.homes.append(home)
        return home

    def start_claude(self, cwd: Path, *, subscriber: bool = True, env: dict | None = None,
                     width: int = 120, height: int = 40, plan: str = "max", role: str = "admin",
                     config_dir: str | Path = ".claude") -> AgentPane:
        """Claude Code signed in to a plan (``subscriber``) or with an API key, past its first-start dialogs.

        ``plan``: max, pro, team or enterprise; ``role``: the account's role in its organization (admin, user, …);
        ``config_dir``: its CLAUDE_CONFIG_DIR, under its HOME unless absolute (`.claude` is the default account's).
        """
        home = self._home("claude")
        config = home / config_dir
        config.mkdir(parents=True, exist_ok=True)  # it may hold settings.json already (the user's own)
        seed = {
            "hasCompletedOnboarding": True,
            "lastOnboardingVersion": "2.1.332",
            "theme": "dark",
            "numStartups": 3,
            "autoUpdates": False,
            "hasSeenTasksHint": True,
            "bypassPermissionsModeAccepted": True,
            "projects": {str(cwd): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True,
                                    "allowedTools": []}},
            "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        }
        if subscriber:
            seed["oauthAccount"] = {
                "accountUuid": "00000000-0000-4000-8000-000000000001",
                "emailAddress": "afd-test@example.invalid",
                "organizationUuid": "00000000-0000-4000-8000-000000000002",
                "organizationName": "afd test",
                "organizationRole": role,
                "billingType": "stripe_subscription",
            }
            credentials = {"claudeAiOauth": {
                "accessToken": "sk-ant-oat01-afd-test", "refreshToken": "sk-ant-ort01-afd-test",
                "expiresAt": FAR_FUTURE_MS, "scopes": ["user:inference", "user:profile", "user:sessions:claude_code"],
                "subscriptionType": plan, "rateLimitTier": "default_claude_max_20x",
            }}
            (config / ".credentials.json").write_text(json.dumps(credentials), encoding="utf-8")
        (config / ".claude.json").write_text(json.dumps(seed), encoding="utf-8")
        (home / ".claude.json").write_text(json.dumps(seed), encoding="utf-8")
        pane_env = {
            **self._base_env(home),
            "CLAUDE_CONFIG_DIR": str(config),
            "ANTHROPIC_BASE_URL": "https://api.anthropic.com",
            "NODE_EXTRA_CA_CERTS": str(self.ca[0]),
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            # claude.ai's connectors (MCP servers of the signed-in account) are fetched from the mocked hosts.
            "ENABLE_CLAUDEAI_MCP_SERVERS": "false",
        }
        if not subscriber:
            pane_env["ANTHROPIC_API_KEY"] = API_KEY
        pane = self.tmux.new_pane(str(self.claude_bin), cwd=cwd, env={**pane_env, **(env or {})}, width=width, height=height)
        return AgentPane(self, pane, "claude", home, cwd)

    def start_codex(self, cwd: Path, *, args: tuple[str, ...] = (), home: Path | None = None,
                    width: int = 120, height: int = 40) -> AgentPane:
        """Codex on the mock provider, its folder trusted in advance (``home``: reuse one, e.g. to resume)."""
        if home is None:
            home = self._home("codex")
            codex_home = home / ".codex"
            codex_home.mkdir()
            _write_codex_config(codex_home, cwd)
        env = {**self._base_env(home), "CODEX_HOME": str(home / ".codex"), "AFD_MOCK_KEY": "mock-key"}
        command = " ".join([str(self.codex_bin), *args])
        pane = self.tmux.new_pane(command, cwd=cwd, env=env, width=width, height=height)
        return AgentPane(self, pane, "codex", home, cwd)

    def start_gemini(self, cwd: Path, *, env: dict | None = None, width: int = 120, height: int = 40) -> AgentPane:
        """Gemini CLI with an API key on the mock (GOOGLE_GEMINI_BASE_URL), its first-start questions settled."""
        home = self._home("gemini")
        write_gemini_settings(home)
        pane = self.tmux.new_pane(str(self.gemini_bin), cwd=cwd, env={**self._base_env(home), **GEMINI_ENV, **(env or {})},
                                  width=width, height=height)
        return AgentPane(self, pane, "gemini", home, cwd)

    def start_opencode(self, cwd: Path, *, provider: str = "mock", env: dict | None = None, width: int = 120,
                       height: int = 40) -> AgentPane:
        """OpenCode on the mock's chat endpoint (a custom OpenAI-compatible provider), nothing fetched at start.

        ``provider``: the provider's name; as `opencode` (Zen) or `opencode-go`, OpenCode opens its own
        usage dialogs at their limits. Its TUI draws nothing while it boots (10–30 s here): wait for its
        footer before typing.
        """
        home = self._home("opencode")
        _write_opencode_config(home, provider)
        env = {**self._base_env(home), **OPENCODE_ENV, **{k: str(v) for k, v in _opencode_xdg(home).items()}, **(env or {})}
        pane = self.tmux.new_pane(str(self.opencode_bin), cwd=cwd, env=env, width=width, height=height)
        return AgentPane(self, pane, "opencode", home, cwd)

    def start_copilot(self, cwd: Path, *, signed_in: bool = True, model: str | None = None, env: dict | None = None,
                      args: tuple[str, ...] = (), width: int = 120, height: int = 40) -> AgentPane:
        """GitHub Copilot CLI signed in with a token to GitHub's hosts on the mock (``signed_in``), or
        offline on the mock's chat endpoint as its own provider (BYOK), where GitHub's walls never show.

        ``model``: a model GitHub's list offers beside the mock's own, chosen (COPILOT_MODEL): off Auto,
        Copilot asks to switch to it at a rate limit."""
        home = self._home("copilot")
        if model is not None:
            (self.mock_dir / "fixed.json").write_text(json.dumps(shapes.copilot_models(model)), encoding="utf-8")
            env = {"COPILOT_MODEL": model, **(env or {})}
        (home / ".copilot").mkdir()
        write_copilot_settings(home / ".copilot")
        env = {**self._base_env(home), **(COPILOT_GITHUB_ENV if signed_in else COPILOT_BYOK_ENV),
               "COPILOT_HOME": str(home / ".copilot"), "NODE_EXTRA_CA_CERTS": str(self.ca[0]),
               "SSL_CERT_FILE": str(self.ca[0]), **(env or {})}
        command = " ".join([str(self.copilot_bin), *args])
        pane = self.tmux.new_pane(command, cwd=cwd, env=env, width=width, height=height)
        return AgentPane(self, pane, "copilot", home, cwd)

    def swap_env(self, cwd: Path) -> dict:
        """What a pane needs for afd to start Claude Code, Codex, Gemini CLI, OpenCode or Copilot CLI in it on
        the mock: a CODEX_HOME, Gemini's key and base URL, OpenCode's XDG folders with its provider, Copilot's
        home and token, and the commands on PATH (Gemini's settings go in the pane's HOME)."""
        home = self._home("swap")
        codex_home = home / ".codex"
        codex_home.mkdir()
        _write_codex_config(codex_home, cwd)
        _write_opencode_config(home)
        copilot_home = home / ".copilot"
        copilot_home.mkdir()
        write_copilot_settings(copilot_home)
        bin_dir = home / "bin"
        bin_dir.mkdir()
        for name, binary in (("codex", self.codex_bin), ("claude", self.claude_bin), ("gemini", self.gemini_bin),
                             ("opencode", self.opencode_bin), ("copilot", self.copilot_bin)):
            if binary is not None:
                (bin_dir / name).symlink_to(binary)
        path = self._base_env(home)["PATH"]
        return {"CODEX_HOME": str(codex_home), "AFD_MOCK_KEY": "mock-key", "PATH": f"{bin_dir}:{path}", **GEMINI_ENV,
                **OPENCODE_ENV, **{k: str(v) for k, v in _opencode_xdg(home).items()},
                **COPILOT_GITHUB_ENV, "COPILOT_HOME": str(copilot_home), "SSL_CERT_FILE": str(self.ca[0])}

    def _base_env(self, home: Path) -> dict:
        return {
            "HOME": str(home),
            "TERM": "tmux-256color",
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "NO_UPDATE_NOTIFIER": "1",
        }

    # --- teardown -------------------------------------------------------------

    def stray_pids(self) -> list[int]:
        """Processes running with one of this rig's homes: the CLIs and anything they detached."""
        homes = {str(h) for h in self.homes}
        pids = []
        for proc in psutil.process_iter(["pid"]):
            try:
                if proc.environ().get("HOME") in homes:
                    pids.append(proc.pid)
            except psutil.Error:
                continue
        return pids

    def close(self) -> None:
        """End everything this rig started, each step even if one before it failed."""
        strays: list[int] = []
        try:
            if self.tmux is not None:
                self.tmux.kill()
        finally:
            strays = self.stray_pids()
            for pid in strays:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if self.mock is not None and self.mock.poll() is None:
                self.mock.kill()
                self.mock.wait(timeout=10)
            if self.ns is not None:
                self.ns.close()
        wait_for(lambda: not any(process_alive(pid) for pid in strays), timeout=15, message="the CLIs' processes to end")


GEMINI_ENV = {
    "GEMINI_API_KEY": "mock-key",
    "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{CODEX_PORT}",
    "COLORTERM": "truecolor",  # else a warning about colours is printed into the history
}


OPENCODE_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_TERMINAL_TITLE": "1",
    "COLORTERM": "truecolor",
}


COPILOT_COMMON_ENV = {
    "COPILOT_AUTO_UPDATE": "false",
    "COPILOT_ALLOW_ALL": "true",  # exactly "true": the folder is trusted without asking
    "COLORTERM": "truecolor",
}
COPILOT_BYOK_ENV = {
    **COPILOT_COMMON_ENV,
    "COPILOT_OFFLINE": "true",
    "COPILOT_PROVIDER_BASE_URL": f"http://127.0.0.1:{CODEX_PORT}/v1",
    "COPILOT_PROVIDER_API_KEY": "mock-key",
    "COPILOT_MODEL": "mock-model",
}
COPILOT_GITHUB_ENV = {**COPILOT_COMMON_ENV, "COPILOT_GITHUB_TOKEN": "gho_afdtest00000000000000000000000000000000",
                      "COPILOT_MODEL": "gpt-4.1"}  # not Auto, which asks the API to pick one first


def _opencode_xdg(home: Path) -> dict[str, Path]:
    """OpenCode keeps its config, sessions (SQLite) and caches under the XDG folders, which the test's
    own environment sets for afd: these point them into ``home``."""
    return {"XDG_CONFIG_HOME": home / ".config", "XDG_DATA_HOME": home / ".local" / "share",
            "XDG_STATE_HOME": home / ".local" / "state", "XDG_CACHE_HOME": home / ".cache"}


def _write_opencode_config(home: Path, provider: str = "mock") -> None:
    """One provider, the mock's OpenAI-compatible chat endpoint, and its one model chosen."""
    folder = home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": f"{provider}/mock-model",
        "provider": {provider: {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Mock",
            "options": {"baseURL": f"http://127.0.0.1:{CODEX_PORT}/v1", "apiKey": "mock-key"},
            "models": {"mock-model": {"name": "Mock Model"}},
        }},
    }
    (folder / "opencode.json").write_text(json.dumps(config), encoding="utf-8")


def write_copilot_settings(copilot_home: Path) -> None:
    """One fixed model, not Auto (which asks the API to pick one first), and what cannot work offline off.

    Its built-in MCP servers (github-mcp-server, githubiq), its memory and its remote sessions are services of
    api.githubcopilot.com, which the mock serves only for the model API: the MCP handshake fails there
    ("Failed to connect to MCP server") after retries a loaded machine stretched past a minute before the
    first turn. Switched off, not outwaited.
    """
    settings = {"model": "gpt-4.1", "disabledMcpServers": ["github-mcp-server", "githubiq"], "autoUpdate": False,
                "memory": False, "remoteSessions": False}
    (copilot_home / "settings.json").write_text(json.dumps(settings), encoding="utf-8")


def write_gemini_settings(home: Path) -> None:
    """API-key auth chosen, no folder-trust question, one fixed model (not the router, which asks a model first)."""
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "general": {"disableAutoUpdate": True},
        "privacy": {"usageStatisticsEnabled": False},
        "model": {"name": "gemini-2.5-pro"},
        "ui": {"hideTips": True},
    }
    (folder / "settings.json").write_text(json.dumps(settings), encoding="utf-8")


def _write_codex_config(codex_home: Path, cwd: Path) -> None:
    """Codex on the mock provider, ``cwd`` trusted in advance."""
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.3-codex"\n'
        'model_provider = "mock"\n'
        'check_for_update_on_startup = false\n\n'
        "[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "http://127.0.0.1:{CODEX_PORT}/v1"\n'
        'env_key = "AFD_MOCK_KEY"\n'
        'wire_api = "responses"\n\n'
        f'[projects."{cwd}"]\n'
        'trust_level = "trusted"\n',
        encoding="utf-8",
    )
