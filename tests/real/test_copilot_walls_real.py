"""Real GitHub Copilot CLI drawing every wall family its runtime holds (walls-copilot-1.0.102.txt), in one start.

Copilot words each wall itself from the API's status, `error.code` and
`retry-after`; the mock answers each prompt with the next one. Off Auto (a
chosen model), it opens its `Switch to auto mode?` dialog under the weekly,
model and rate_limited walls: part of the wall, not output after it; Esc
dismisses it before the next prompt. A reset drawn relative (`in 2 hours`)
is read against the capture, within the minute the screen rounds to.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
import shapes
from families import Expect, answered_at, around, judge

HOME_HINT = "/ commands"
DIALOG = "Switch to auto mode?"
MINUTE = timedelta(minutes=1)

# case → (the mock's answer, the words to wait for, the wait it names (None: no reset), needs_human, a dialog opens)
FAMILIES = {
    "session-rate-limit-off-auto": (shapes.copilot_rate_limit("user_global_rate_limited", 7200),
                                    "session rate limit", timedelta(hours=2), False, False),
    "weekly-rate-limit-dialog": (shapes.copilot_rate_limit("user_weekly_rate_limited", 3 * 86400),
                                 DIALOG, timedelta(days=3), False, True),
    "model-rate-limit-dialog": (shapes.copilot_rate_limit("user_model_rate_limited", 5400),
                                DIALOG, timedelta(hours=1, minutes=30), False, True),
    "integration-rate-limit-dialog": (shapes.copilot_rate_limit("integration_rate_limited", 3600),
                                      DIALOG, timedelta(hours=1), False, True),
    "rate-limited-long-dialog": (shapes.copilot_rate_limit("rate_limited", 3 * 3600),
                                 DIALOG, timedelta(hours=3), False, True),
    "credits-used-up": (shapes.copilot_payment("quota_exceeded"), "included AI credits", None, True, False),
    "session-spending-limit": (shapes.copilot_payment("session_quota_exceeded"), "spending limit for this session",
                               None, True, False),
    "additional-usage-limit": (shapes.copilot_payment("additional_spend_limit_reached"), "additional usage limit",
                               None, True, False),
    "payment-required": (shapes.copilot_payment(), "402 Payment Required", None, True, False),
    "server-billing-message": (shapes.copilot_payment(message="Your Copilot budget for this month is used up. "
                                                              "Ask an owner of your enterprise to raise it."),
                               "budget for this month", None, True, False),
}


@pytest.mark.slow
def test_every_copilot_wall_family_in_one_start(rig, shop, tmp_path):
    pane = rig.start_copilot(shop, model="claude-sonnet-5")
    pane.wait_for_text(HOME_HINT, timeout=60)
    for case, (answer, words, wait, needs_human, dialog) in FAMILIES.items():
        prompt = f"next: {case}"
        rig.answer("chat", answer)
        pane.type(prompt)
        pane.wait_for_text(words, timeout=60)
        # A wait is drawn to the minute: relative (`in 1 hour 30 minutes`) or, past a day, as a date and time.
        reset = None if wait is None else around(answered_at(rig, "chat", prompt, 429), wait, MINUTE)
        expect = Expect(True, reset, needs_human)
        judge(pane, case, expect, f"real Copilot CLI 1.0.102 off Auto: {answer['status']} {answer['body']}", tmp_path)
        if dialog:
            pane.key("Escape")
            pane.wait_for_screen(lambda s: DIALOG not in s, timeout=15, message="the dialog dismissed")
            judge(pane, f"{case}-dismissed", expect, "the same wall after Esc dismissed its dialog", tmp_path)

    # Its retries used up on a short rate_limited: the same wall, `in under a minute`.
    rig.answer("chat", shapes.copilot_rate_limit("rate_limited", 2))
    pane.type("next: retries-exhausted")
    pane.wait_for_text("under a minute", timeout=90)
    now = datetime.now(timezone.utc)
    judge(pane, "rate-limited-retries-exhausted", Expect(True, (now, now + 2 * MINUTE)),
          "real Copilot CLI 1.0.102 off Auto: rate_limited 429s, retry-after 2, until it gives up", tmp_path)
    pane.key("Escape")
    pane.wait_for_screen(lambda s: DIALOG not in s, timeout=15, message="the dialog dismissed")

    # Look-alikes: the words in an answer, and typed by the user, are no wall.
    rig.answer("chat", shapes.chat_answer("The quota exceeded error means you've hit your session rate limit; "
                                          "402 Payment Required comes from the billing API.", delay=0.1))
    pane.type("next: explain the quota error")
    pane.wait_for_text("billing API", timeout=60)
    judge(pane, "quota-words-in-an-answer", Expect(False), "an answer that quotes the walls' words", tmp_path)
    rig.answer("chat", shapes.chat_answer("Noted.", delay=0.1))
    pane.type("You've hit your session rate limit. Please wait for your limit to reset in 2 hours.")
    pane.wait_for_text("Noted.", timeout=60)
    judge(pane, "wall-words-typed-by-the-user", Expect(False), "the user typing a wall's words, answered", tmp_path)
