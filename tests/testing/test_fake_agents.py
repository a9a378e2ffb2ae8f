"""The fake agents: what they take in, what they do, what they draw, and what `afd detect` makes of it.

Behaviour is read from each fake's JSON-lines log, never from timing. The
bridge tests at the end put every banner family through a real tmux pane and
`afd detect`, the same path the supervisor's captures take.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from afd.testing import banners
from afd.testing.fake_agent import author, parse_invocation
from afd.testing.scenario import Scenario, load_scenario
from harness import FakePane, commits_by, git, process_alive, start_fake, wait_for

AGENTS = ("claude", "codex", "devin")
QUICK = {"work_seconds": 0.1}


# --- pure parts: command lines, scenarios, banner text -------------------------


@pytest.mark.parametrize(
    "agent,args,prompt,resume,headless",
    [
        ("claude", ["fix the test"], "fix the test", False, False),
        ("claude", ["--continue"], None, True, False),
        ("claude", ["-c", "and then"], "and then", True, False),
        ("claude", ["--model", "opus", "go"], "go", False, False),
        ("claude", ["-p", "summarise"], "summarise", False, True),
        ("codex", ["resume", "--last"], None, True, False),
        ("codex", ["-c", "model=o3", "fix it"], "fix it", False, False),
        ("codex", ["exec", "say hi"], "say hi", False, True),
        ("devin", ["--continue"], None, True, False),
        ("devin", ["split the module"], "split the module", False, False),
    ],
    ids=lambda v: repr(v) if isinstance(v, list) else None,
)
def test_command_line_is_read_like_the_real_cli(agent, args, prompt, resume, headless):
    got = parse_invocation(agent, args)
    assert (got.prompt, got.resume, got.headless) == (prompt, resume, headless)


def test_scenario_from_toml_with_an_agent_table_and_env_overrides(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        'limit_after_prompts = 2\nbanner = "claude.weekly"\n'
        '[banner_params]\nreset = "Jul 31, 2am"\n'
        '[agents.codex]\nlimit_after_prompts = 5\nbanner = "codex.usage-limit"\n',
        encoding="utf-8",
    )
    claude = load_scenario("claude", path, env={})
    codex = load_scenario("codex", path, env={"AFD_FAKE_IGNORE_SIGTERM": "true", "AFD_FAKE_WORK_SECONDS": "2.5"})
    assert (claude.limit_after_prompts, claude.banner, claude.banner_params) == (2, "claude.weekly", {"reset": "Jul 31, 2am"})
    assert (codex.limit_after_prompts, codex.banner, codex.ignore_sigterm, codex.work_seconds) == (
        5, "codex.usage-limit", True, 2.5
    )


def test_scenario_with_an_unknown_key_is_refused(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"limit_afterprompts": 1}), encoding="utf-8")
    with pytest.raises(ValueError, match="limit_afterprompts"):
        load_scenario("claude", path, env={})


def test_every_family_renders_with_its_defaults():
    for family_id, fam in banners.FAMILIES.items():
        rows = banners.render(family_id)
        assert rows and all(isinstance(r, str) for r in rows), family_id
        assert family_id.startswith(fam.agent + ".")


@pytest.mark.parametrize(
    "params,sentence",
    [
        ({"form": "in", "reset": "3 hours 2 minutes"}, "■ You've hit your usage limit. Try again in 3 hours 2 minutes."),
        ({"form": "at", "reset": "2:51 PM", "prefix": "🖐 "}, "🖐 You've hit your usage limit. Try again at 2:51 PM."),
        ({"form": "later"}, "■ You've hit your usage limit. Try again later."),
        ({"form": "none"}, "■ You've hit your usage limit."),
        (
            {"form": "at", "reset": "Feb 23rd, 2027 1:07 AM", "lead": "admin"},
            "■ You've hit your usage limit. To get more access now, send a request to your admin "
            "or try again at Feb 23rd, 2027 1:07 AM.",
        ),
        ({"form": "none", "lead": "admin", "prefix": ""}, "You've hit your usage limit. To get more access now, send a request to your admin."),
    ],
    ids=["in", "at-hand", "later", "none", "admin-dated", "admin-no-time"],
)
def test_codex_usage_limit_sentence(params, sentence):
    assert banners.codex_sentence(params) == sentence
    assert banners.render("codex.usage-limit", params) == [sentence]


def test_codex_banner_wraps_at_column_zero_even_inside_a_word():
    rows = banners.render("codex.usage-limit", {"form": "at", "reset": "2:51 PM", "lead": "admin", "break_after": ["try a"]})
    assert rows == [
        "■ You've hit your usage limit. To get more access now, send a request to your admin or try a",
        "gain at 2:51 PM.",
    ]
    rows = banners.render("codex.usage-limit", {"width": 30})
    assert all(len(r) <= 30 for r in rows) and " ".join(rows) == banners.codex_sentence(banners.family("codex.usage-limit").defaults)


def test_claude_banner_wraps_onto_indented_rows():
    rows = banners.render("claude.hit-limit", {"width": 40})
    assert rows == ["  ⎿  You've hit your limit · resets 11pm", "     (America/Anchorage)"]


# --- the fakes in real panes ---------------------------------------------------


@pytest.mark.parametrize("agent", AGENTS)
def test_first_prompt_as_argument_is_worked_and_committed_as_the_agent(tmux_server, worktree, agent):
    wt = worktree(f"afd/{agent}")
    base = git(wt, "rev-parse", "HEAD")
    fake = start_fake(tmux_server, agent, cwd=wt, prompt="fix the test", scenario=QUICK)
    work = fake.wait_for_event("work")
    assert fake.events("input")[0] | {"t": 0} == {
        "event": "input", "t": 0, "pid": fake.pid, "agent": agent, "text": "fix the test", "via": "argument", "queued": False
    }
    assert commits_by(wt, agent, f"{base}..HEAD") == [work["commit"]]
    name, email = author(agent)
    assert git(wt, "log", "-1", "--format=%an <%ae>|%s") == f"{name} <{email}>|{agent}: fix the test"
    assert (wt / work["file"]).read_text(encoding="utf-8") == "- fix the test\n"


@pytest.mark.parametrize("agent", AGENTS)
def test_typed_input_is_a_new_prompt(tmux_server, git_repo, agent):
    fake = start_fake(tmux_server, agent, cwd=git_repo, scenario=QUICK)
    fake.wait_ready()
    fake.type("add a changelog entry")
    work = fake.wait_for_event("work")
    [typed] = fake.events("input")
    assert (typed["text"], typed["via"]) == ("add a changelog entry", "typed")
    assert work["prompt"] == "add a changelog entry"


@pytest.mark.parametrize("agent", AGENTS)
def test_bracketed_paste_keeps_newlines_and_submits_on_enter(tmux_server, git_repo, agent):
    fake = start_fake(tmux_server, agent, cwd=git_repo, scenario=QUICK)
    fake.wait_ready()
    brief = "You are taking over this branch.\nRead git log first.\nThen carry on."
    fake.paste(brief)
    got = fake.wait_for_event("input")
    assert (got["text"], got["via"]) == (brief, "paste")
    assert fake.events("paste")[0]["text"] == brief


def test_input_typed_while_working_is_queued_for_the_next_turn(tmux_server, git_repo):
    fake = start_fake(tmux_server, "claude", cwd=git_repo, prompt="first", scenario={"work_seconds": 60})
    fake.wait_for_event("work_start", prompt="first")
    fake.type("second")
    assert fake.wait_for_event("input", text="second")["queued"] is True
    assert [w["prompt"] for w in fake.events("work_start")] == ["first"]


@pytest.mark.parametrize(
    "agent,args",
    [("claude", ["--continue"]), ("codex", ["resume", "--last"]), ("devin", ["--continue"])],
    ids=["claude", "codex", "devin"],
)
@pytest.mark.parametrize("succeeds", [True, False], ids=["resume-works", "resume-still-limited"])
def test_resume_flags_are_understood(tmux_server, git_repo, agent, args, succeeds):
    fake = start_fake(tmux_server, agent, cwd=git_repo, args=args, scenario={"resume_succeeds": succeeds, **QUICK})
    fake.wait_ready()
    assert fake.events("start")[0]["resume"] is True
    if succeeds:
        fake.type("continue")
        assert fake.wait_for_event("work")["prompt"] == "continue"
        assert fake.events("limit") == []
    else:
        assert fake.wait_for_event("limit")["reason"] == "resume still limited"


def test_prompt_at_the_wall_shows_the_banner_again_and_does_no_work(tmux_server, git_repo):
    fake = start_fake(tmux_server, "codex", cwd=git_repo, prompt="one", scenario={"limit_after_prompts": 1, **QUICK})
    fake.wait_for_event("limit")
    fake.type("two")
    fake.wait_for_event("limit", reason="prompt while limited")
    assert [w["prompt"] for w in fake.events("work")] == ["one"]


def test_limit_after_seconds_appears_while_idle(tmux_server, git_repo):
    fake = start_fake(tmux_server, "devin", cwd=git_repo, scenario={"limit_after_seconds": 0.3})
    assert fake.wait_for_event("limit")["banner"] == "devin.quota"
    fake.wait_for_screen(lambda s: "Quota exhausted" in s)


def test_exits_on_its_own_after_n_prompts(tmux_server, git_repo):
    fake = start_fake(tmux_server, "claude", cwd=git_repo, prompt="only", scenario={"exit_after_prompts": 1, "exit_code": 3, **QUICK})
    assert fake.wait_for_event("exit")["code"] == 3
    wait_for(lambda: not tmux_server.pane_exists(fake.pane), message="the pane to close")


def test_sigterm_is_logged_and_ignored_when_the_scenario_says_so(tmux_server, git_repo):
    fake = start_fake(tmux_server, "claude", cwd=git_repo, scenario={"ignore_sigterm": True})
    fake.wait_ready()
    os.kill(fake.pid, signal.SIGTERM)
    assert fake.wait_for_event("signal")["ignored"] is True
    fake.type("still here")
    fake.wait_for_event("input", text="still here")
    assert process_alive(fake.pid)
    os.kill(fake.pid, signal.SIGKILL)


def test_sigterm_ends_a_fake_that_does_not_ignore_it(tmux_server, git_repo):
    fake = start_fake(tmux_server, "codex", cwd=git_repo)
    fake.wait_ready()
    os.kill(fake.pid, signal.SIGTERM)
    assert fake.wait_for_event("exit")["code"] == 143
    wait_for(lambda: not process_alive(fake.pid), message="the fake to exit")


def test_child_outlives_the_fake_and_its_pane(tmux_server, git_repo):
    fake = start_fake(tmux_server, "claude", cwd=git_repo, scenario={"spawn_child": True})
    child = fake.wait_for_event("child")["child_pid"]
    fake.wait_ready()
    tmux_server.run("kill-pane", "-t", fake.pane)
    fake.wait_for_event("exit", reason="SIGHUP")
    wait_for(lambda: not process_alive(fake.pid), message="the fake to exit")
    assert process_alive(child)
    os.kill(child, signal.SIGKILL)


def test_headless_print_mode_answers_once_and_exits(tmux_server, git_repo):
    fake = start_fake(tmux_server, "claude", cwd=git_repo, args=["-p"], prompt="summarise", in_shell=True, scenario=QUICK)
    assert fake.wait_for_event("exit")["code"] == 0
    assert fake.events("work")[0]["prompt"] == "summarise"
    fake.wait_for_screen(lambda s: "Done. Committed" in s and s.rstrip().endswith("$"))


def test_working_screen_changes_and_idle_screen_does_not(tmux_server, git_repo):
    fake = start_fake(tmux_server, "claude", cwd=git_repo, prompt="slow", scenario={"work_seconds": 30})
    first = fake.wait_for_screen(lambda s: "esc to interrupt" in s, message="the spinner")
    fake.wait_for_screen(lambda s: s != first, message="the spinner to move")
    os.kill(fake.pid, signal.SIGKILL)

    idle = start_fake(tmux_server, "claude", cwd=git_repo, prompt="quick", scenario=QUICK)
    idle.wait_idle(works=1)
    before = idle.capture()
    tmux_server.send_keys(idle.pane, "Escape")
    idle.wait_for_event("key", key="esc")
    assert idle.capture() == before


@pytest.mark.parametrize(
    "agent,ui,markers",
    [
        ("claude", "modern", ["❯ ", "  ⏵⏵ accept edits on (shift+tab to cycle)", "─" * 40]),
        ("claude", "boxed", ["│ > ", "  ? for shortcuts", "╭" + "─" * 40]),
        ("codex", "modern", ["› Ask Codex to do anything", "  ? for shortcuts", "82% context left", ">_ OpenAI Codex"]),
        ("devin", "modern", ["❭ Ask Devin to build features, fix bugs, or work on your code", "% remaining (resets in"]),
    ],
    ids=["claude-modern", "claude-boxed", "codex", "devin"],
)
def test_idle_screen_has_the_cli_chrome(tmux_server, git_repo, agent, ui, markers):
    fake = start_fake(tmux_server, agent, cwd=git_repo, scenario={"ui": ui})
    fake.wait_ready()
    screen = fake.wait_for_screen(lambda s: markers[0] in s)
    for marker in markers:
        assert marker in screen


# --- the bridge: banners in real panes through `afd detect` ---------------------

NOW = "2026-07-13T09:00:00Z"  # the captures are judged at this instant, with TZ=UTC


def afd_detect(agent: str, captures: list[str], tmp_path: Path) -> dict:
    files = []
    for i, text in enumerate(captures, start=1):
        path = tmp_path / f"capture-{i}.txt"
        path.write_text(text, encoding="utf-8")
        files.append(str(path))
    proc = subprocess.run(
        [sys.executable, "-m", "afd", "detect", "--agent", agent, "--now", NOW, "--json", *files],
        env={**os.environ, "TZ": "UTC"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    try:
        return json.loads(proc.stdout)
    except ValueError:
        pytest.fail(f"afd detect gave no JSON (exit {proc.returncode}): {proc.stderr.strip() or proc.stdout!r}")


def settled_captures(fake: FakePane, last_text: str, polls: int = 2) -> list[str]:
    """``polls`` captures of an idle pane, each taken after the fake's loop has gone round once more."""
    fake.wait_for_screen(lambda s: last_text in s and "esc to interrupt" not in s, message=repr(last_text))
    captures = [fake.capture()]
    for n in range(1, polls):
        fake.server.send_keys(fake.pane, "Escape")
        wait_for(lambda: len(fake.events("key")) >= n, message="the fake to read a key")  # noqa: B023 (waited for here)
        captures.append(fake.capture())
    return captures


def limited_at(agent: str, family_id: str, params: dict, ui: str, server, cwd) -> FakePane:
    scenario = {"limit_after_prompts": 1, "banner": family_id, "banner_params": params, "ui": ui, **QUICK}
    return start_fake(server, agent, cwd=cwd, prompt="fix the failing test", scenario=scenario)


# (agent, family, params, ui, limited, reset_at)
BANNER_CASES = {
    "claude-legacy-new-york": ("claude", "claude.legacy", {}, "boxed", True, "2026-07-13T18:00:00Z"),
    "claude-legacy-local-zone": ("claude", "claude.legacy", {"zone": ""}, "boxed", True, "2026-07-13T14:00:00Z"),
    "claude-5-hour": ("claude", "claude.limit-reached", {}, "boxed", True, "2026-07-14T02:00:00Z"),
    "claude-session-bullet": ("claude", "claude.limit-reached", {"window": "Session", "reset": "8pm"}, "boxed", True, "2026-07-13T20:00:00Z"),
    "claude-opus-weekly-dated": ("claude", "claude.limit-reached", {"window": "Opus weekly", "reset": "Oct 31, 9am"}, "boxed", True, "2026-10-31T09:00:00Z"),
    "claude-hit-limit-anchorage": ("claude", "claude.hit-limit", {}, "modern", True, "2026-07-14T07:00:00Z"),
    "claude-hit-limit-wrapped": ("claude", "claude.hit-limit", {"width": 40}, "modern", True, "2026-07-14T07:00:00Z"),
    "claude-session-bogota": ("claude", "claude.session", {}, "modern", True, "2026-07-13T20:00:00Z"),
    "claude-weekly-no-zone": ("claude", "claude.weekly", {}, "modern", True, "2026-09-15T19:00:00Z"),
    "claude-weekly-utc": ("claude", "claude.weekly", {"reset": "Jul 31, 2am", "zone": "UTC"}, "modern", True, "2026-07-31T02:00:00Z"),
    "claude-extra-usage": ("claude", "claude.extra-usage", {}, "modern", True, "2026-07-13T15:00:00Z"),
    "claude-menu": ("claude", "claude.rate-limit-options", {}, "modern", True, "2026-07-13T17:50:00Z"),
    "claude-menu-footer-wait-selected": ("claude", "claude.rate-limit-options", {"footer": True, "selected": 2}, "modern", True, "2026-07-13T17:50:00Z"),
    "claude-auto-continue": ("claude", "claude.auto-continue", {}, "modern", True, "2026-07-13T22:00:00Z"),
    "claude-approaching-is-not-a-limit": ("claude", "claude.approaching", {}, "modern", False, None),
    "claude-limit-reset-is-not-a-limit": ("claude", "claude.limit-reset", {}, "modern", False, None),
    "codex-in-hours": ("codex", "codex.usage-limit", {}, "modern", True, "2026-07-13T12:02:00Z"),
    "codex-in-days": ("codex", "codex.usage-limit", {"reset": "4 days 20 hours 9 minutes"}, "modern", True, "2026-07-18T05:09:00Z"),
    "codex-at-time": ("codex", "codex.usage-limit", {"form": "at", "reset": "2:51 PM"}, "modern", True, "2026-07-13T14:51:00Z"),
    "codex-at-past-date": ("codex", "codex.usage-limit", {"form": "at", "reset": "Jun 18th, 2026 8:41 AM"}, "modern", True, "2026-06-18T08:41:00Z"),
    "codex-admin-dated": ("codex", "codex.usage-limit", {"form": "at", "reset": "Feb 23rd, 2027 1:07 AM", "lead": "admin"}, "modern", True, "2027-02-23T01:07:00Z"),
    "codex-plus-at-time": ("codex", "codex.usage-limit", {"form": "at", "reset": "2:51 PM", "lead": "plus"}, "modern", True, "2026-07-13T14:51:00Z"),
    "codex-later": ("codex", "codex.usage-limit", {"form": "later"}, "modern", True, None),
    "codex-no-time": ("codex", "codex.usage-limit", {"form": "none"}, "modern", True, None),
    "codex-hand-prefix": ("codex", "codex.usage-limit", {"prefix": "🖐 "}, "modern", True, "2026-07-13T12:02:00Z"),
    "codex-error-lead-in": ("codex", "codex.usage-limit", {"prefix": "Error: "}, "modern", True, "2026-07-13T12:02:00Z"),
    "codex-wrapped-between-words": ("codex", "codex.usage-limit", {"form": "at", "reset": "Jun 18th, 2026 8:41 AM", "width": 40}, "modern", True, "2026-06-18T08:41:00Z"),
    "codex-wrapped-mid-word": ("codex", "codex.usage-limit", {"form": "at", "reset": "2:51 PM", "lead": "admin", "break_after": ["try a"]}, "modern", True, "2026-07-13T14:51:00Z"),
    "codex-heads-up-is-not-a-limit": ("codex", "codex.heads-up", {}, "modern", False, None),
    "codex-429-is-not-a-limit": ("codex", "codex.retry-429", {}, "modern", False, None),
    "devin-quota-exhausted": ("devin", "devin.quota", {}, "modern", True, None),
    "devin-quota-exhausted-bare": ("devin", "devin.quota", {"message": ""}, "modern", True, None),
}


@pytest.mark.parametrize("case", list(BANNER_CASES), ids=list(BANNER_CASES))
def test_banner_family_in_a_real_pane_through_afd_detect(tmux_server, git_repo, tmp_path, case):
    agent, family_id, params, ui, limited, reset_at = BANNER_CASES[case]
    fake = limited_at(agent, family_id, params, ui, tmux_server, git_repo)
    rows = fake.wait_for_event("limit")["rows"]
    captures = settled_captures(fake, rows[-1].strip())
    got = afd_detect(agent, captures, tmp_path)
    assert (got["limited"], got["reset_at"]) == (limited, reset_at), got
    assert got["has_reset_time"] is (reset_at is not None)
    if limited:
        assert got["hit"] and got["anchored"] and got["stable"], got


def test_headless_banner_in_a_shell_pane_through_afd_detect(tmux_server, git_repo, tmp_path):
    fake = start_fake(
        tmux_server, "claude", cwd=git_repo, args=["-p"], prompt="summarise the open issues", in_shell=True,
        scenario={"limit_now": True},
    )
    assert fake.wait_for_event("exit")["code"] == 1
    screen = fake.wait_for_screen(lambda s: "usage limit reached|" in s and s.rstrip().endswith("$"))
    got = afd_detect("claude", [screen, fake.capture()], tmp_path)
    assert (got["limited"], got["reset_at"]) == (True, "2026-07-13T11:00:00Z"), got


def test_one_capture_of_a_limited_pane_is_not_yet_limited(tmux_server, git_repo, tmp_path):
    fake = limited_at("claude", "claude.session", {}, "modern", tmux_server, git_repo)
    rows = fake.wait_for_event("limit")["rows"]
    got = afd_detect("claude", settled_captures(fake, rows[-1].strip(), polls=1), tmp_path)
    assert got["hit"] is True and got["stable"] is False and got["limited"] is False, got


@pytest.mark.parametrize(
    "agent,family_id", [("claude", "claude.hit-limit"), ("codex", "codex.usage-limit")], ids=["claude", "codex"]
)
def test_a_working_fake_is_not_stable(tmux_server, git_repo, tmp_path, agent, family_id):
    # The agent's own output ends in a real banner, right above its spinner:
    # only the stability gate can tell that it is still working.
    rows = banners.render(family_id)
    fake = start_fake(tmux_server, agent, cwd=git_repo, prompt="look", scenario={"work_output": rows, "work_seconds": 60})
    first = fake.wait_for_screen(lambda s: "esc to interrupt" in s and rows[-1] in s, message="a banner above a spinner")
    second = fake.wait_for_screen(lambda s: s != first, message="the spinner to move")
    got = afd_detect(agent, [first, second], tmp_path)
    assert got["stable"] is False and got["limited"] is False, got


DOCUMENTS = {
    "claude": [
        "# afd",
        "afd notices banners such as",
        "  You've hit your limit · resets 11pm (America/Anchorage)",
        "and waits for the reset.",
    ],
    "codex": [
        "limit_patterns: override the banner, e.g. codex = \"You've hit your usage limit\"",
        "■ You've hit your usage limit. Try again in 3 hours 2 minutes.",
    ],
}


@pytest.mark.parametrize("agent", list(DOCUMENTS))
def test_a_document_with_banner_text_on_screen_is_not_a_limit(tmux_server, git_repo, tmp_path, agent):
    (git_repo / "docs").mkdir()
    (git_repo / "docs" / "limits.md").write_text("\n".join(DOCUMENTS[agent]) + "\n", encoding="utf-8")
    fake = start_fake(tmux_server, agent, cwd=git_repo, prompt="show the docs", scenario={"show_file": "docs/limits.md", **QUICK})
    fake.wait_idle(works=1)
    got = afd_detect(agent, settled_captures(fake, "Done. Committed"), tmp_path)
    assert got["limited"] is False, got


def test_a_healthy_idle_devin_is_not_limited(tmux_server, git_repo, tmp_path):
    fake = start_fake(tmux_server, "devin", cwd=git_repo, prompt="split the pricing module", scenario=QUICK)
    fake.wait_idle(works=1)
    got = afd_detect("devin", settled_captures(fake, "Done. Committed"), tmp_path)
    assert (got["hit"], got["limited"]) == (False, False), got


def test_scenario_dataclass_round_trips_through_the_fake(tmux_server, git_repo):
    scenario = Scenario(limit_now=True, banner="codex.usage-limit", banner_params={"form": "later"})
    fake = start_fake(tmux_server, "codex", cwd=git_repo, scenario=scenario)
    assert fake.wait_for_event("limit")["rows"] == ["■ You've hit your usage limit. Try again later."]
