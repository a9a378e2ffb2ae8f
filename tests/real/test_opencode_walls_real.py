"""Real OpenCode drawing every wall family its bundle holds (walls-opencode-1.18.33.txt), in one start.

OpenCode runs here as its own Go provider (`opencode-go`, pointed at the
mock), so it opens its usage dialogs too. Its retried walls show in the
status row below its input box (the countdown read from `retry-after` in
seconds, as an HTTP date, or from `retry-after-ms`); when it gives up, the
provider's message stays in the history under the same `┃` bar as the
prompt it answers, which the manifest tells from its input box by shape.
A wall it waits out is interrupted (Esc twice) before the next prompt.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
import shapes
from families import Expect, answered_at, around, judge

HOME_HINT = "ctrl+p commands"
MINUTE = timedelta(minutes=1)


def interrupt(pane) -> None:
    """Esc closes a dialog; Esc twice stops a retry it waits out."""
    for _ in range(3):
        pane.key("Escape")
        time.sleep(0.4)
    pane.wait_for_screen(lambda s: "retrying" not in s, timeout=20, message="the retry stopped")


@pytest.mark.slow
def test_every_opencode_wall_family_in_one_start(rig, shop, tmp_path):
    pane = rig.start_opencode(shop, provider="opencode-go")
    pane.wait_for_text(HOME_HINT, timeout=90)

    # Go's limit: the status row words its reset (`It will reset in 4 hours 22 minutes`), and its dialog opens.
    rig.answer("chat", shapes.opencode_go_limit(15720))
    pane.type("next: go limit")
    pane.wait_for_text("Go limit reached", timeout=60)
    due = answered_at(rig, "chat", "next: go limit", 429)
    judge(pane, "go-limit-dialog", Expect(True, around(due, timedelta(seconds=15720), MINUTE)),
          "real OpenCode 1.18.33 as opencode-go: 429 GoUsageLimitError, retry-after 15720", tmp_path)
    interrupt(pane)

    # Zen's free tier: `Free usage exceeded, subscribe to Go [retrying in 59m 59s …]`, its dialog over the history.
    rig.answer("chat", shapes.opencode_free_limit({"retry-after": "3600"}))
    pane.type("next: free limit")
    pane.wait_for_text("Free usage exceeded", timeout=60)
    due = answered_at(rig, "chat", "next: free limit", 429)
    judge(pane, "free-limit-row", Expect(True, around(due, timedelta(hours=1), MINUTE)),
          "real OpenCode 1.18.33 as opencode-go: 429 FreeUsageLimitError, retry-after 3600", tmp_path)
    interrupt(pane)

    # A plain rate limit whose retry-after is an HTTP date two hours ahead: the countdown is the reset.
    when = time.time() + 7200
    rig.answer("chat", shapes.chat_error(429, "Rate limit reached for requests", error_type="rate_limit_error",
                                         code="rate_limit_exceeded", headers={"retry-after": shapes.http_date(when)}))
    pane.type("next: rate limit until a date")
    pane.wait_for_text("[retrying in 1h", timeout=60)
    reset = datetime.fromtimestamp(when, timezone.utc)
    judge(pane, "rate-limited-http-date", Expect(True, (reset - 2 * MINUTE, reset + 2 * MINUTE)),
          "real OpenCode 1.18.33: 429, retry-after as an HTTP date two hours ahead", tmp_path)
    interrupt(pane)

    # Given up: the provider's message under the prompt it answers.
    quota = ("You exceeded your current quota, please check your plan and billing details. For more information "
             "on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.")
    given_up = {
        "insufficient-quota-after-retries": (shapes.chat_error(429, quota, error_type="insufficient_quota",
                                                               code="insufficient_quota",
                                                               headers={"retry-after-ms": "200"}), "check your plan"),
        "insufficient-credits-402": (shapes.chat_error(402, "Insufficient credits. Add more at "
                                                            "https://openrouter.ai/settings/credits", code=402),
                                     "Insufficient credits"),
        "zen-credit-balance-402": (shapes.chat_error(402, "Insufficient balance. Add credits at "
                                                          "https://opencode.ai/workspace/wrk_01AFD/billing to keep "
                                                          "using Zen models.", error_type="CreditsError"),
                                   "Insufficient balance"),
    }
    for case, (answer, words) in given_up.items():
        rig.answer("chat", answer)
        pane.type(f"next: {case}")
        pane.wait_for_text(words, timeout=60)
        judge(pane, case, Expect(True, None, needs_human=True), f"real OpenCode 1.18.33: {answer['status']} "
              f"{answer['body']['error']['message'][:60]}", tmp_path)

    # Look-alikes: a model not found, the words in an answer, the words typed by the user.
    rig.answer("chat", shapes.chat_error(404, "The model `mock-model` does not exist or you do not have access to it.",
                                         error_type="invalid_request_error", code="model_not_found"))
    pane.type("next: a model not found")
    pane.wait_for_text("does not exist", timeout=60)
    judge(pane, "model-not-found", Expect(False), "real OpenCode 1.18.33: 404 model_not_found", tmp_path)
    rig.answer("chat", shapes.chat_answer("Insufficient credits and exceeded quota errors come from the billing "
                                          "API; the usage limit resets monthly.", delay=0.1))
    pane.type("next: explain the billing errors")
    pane.wait_for_text("resets monthly", timeout=60)
    judge(pane, "quota-words-in-an-answer", Expect(False), "an answer that quotes the walls' words", tmp_path)
    rig.answer("chat", shapes.chat_answer("Noted.", delay=0.1))
    pane.type("Insufficient credits. Add more at https://openrouter.ai/settings/credits")
    pane.wait_for_text("Noted.", timeout=60)
    judge(pane, "wall-words-typed-by-the-user", Expect(False), "the user typing a wall's words, answered", tmp_path)
