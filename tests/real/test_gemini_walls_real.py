"""Real Gemini CLI (an API key) drawing every wall family its bundle holds (walls-gemini-0.61.0.txt), in one start.

Gemini CLI decides its wall from the API's error (classifyGoogleError):
the message's `Please retry in Ns`, a RetryInfo's delay, a QuotaFailure's
per-day quota, the free tier's `limit: 0`. Each terminal quota error opens
its dialog in the composer's place (part of the wall); the test answers
Stop, and the error it leaves in the history is judged too. A reset the
dialog draws as a time of day is to the minute; one in the history
(`Please retry in 10177.564s`) is read against the capture.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import shapes
from families import Expect, answered_at, around, judge

COMPOSER = "Type your message or @path/to/file"
MINUTE = timedelta(minutes=1)
QUOTA = shapes.quota_failure
LIMIT_ZERO = ("You exceeded your current quota, please check your plan and billing details. For more information on this "
              "error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: "
              "generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro\n"
              "Please retry in 35.53s.")

# case → (the mock's answer, the words its dialog shows, the wait it names (None: none), the dialog's needs_human,
#         the words the error it leaves shows, that error's needs_human)
FAMILIES = {
    "decimal-seconds": (shapes.gemini_error(429, "You exceeded your current quota. Please retry in 10177.564s."),
                        "Access resets at", timedelta(seconds=10177.564), False, "10177.564s", False),
    "retry-info": (shapes.gemini_error(429, "Resource has been exhausted (e.g. check quota).",
                                       details=[shapes.retry_info("7200s")]),
                   "Access resets at", timedelta(hours=2), False, "Suggested retry after 7200s", False),
    "daily-quota": (shapes.gemini_error(429, "Quota exceeded for quota metric.",
                                        details=[QUOTA("GenerateRequestsPerDayPerProjectPerModel")]),
                    "Usage limit reached", None, True, "exhausted your daily quota", False),
    "free-tier-limit-zero": (shapes.gemini_error(429, LIMIT_ZERO, details=[
                                 QUOTA("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"), shapes.retry_info("35s")]),
                             "Usage limit reached", None, True, "please check your plan", True),
}

# Not a wall: a model not found (its dialog: `It seems like you don't have access to gemini-2.5-pro.`). The capacity
# (`high demand`) dialog cannot be drawn with an API key: with one model in its chain, Gemini CLI
# retries a MODEL_CAPACITY_EXHAUSTED 429 in a tight loop and never opens it (its text is checked
# from the bundle's words in tests/plugins/test_detect_bundle_walls_new.py).
LOOK_ALIKES = {
    "model-not-found": (shapes.gemini_error(404, "models/gemini-2.5-pro is not found for API version v1beta.",
                                            api_status="NOT_FOUND"), "have access to"),
}


def stop(pane) -> None:
    """Answer its dialog Stop (chosen by its text, the options differ between dialogs)."""
    chosen = ("● 2. Stop", "● 3. Stop")
    for _ in range(3):
        pane.key("Down")
        try:
            pane.wait_for_screen(lambda s: any(c in s for c in chosen), timeout=3, message="Stop chosen")
            break
        except AssertionError:
            continue
    pane.key("Enter")
    pane.wait_for_screen(lambda s: "╭" not in s.split("✕")[-1], timeout=20, message="the dialog answered")


@pytest.mark.slow
def test_every_gemini_wall_family_in_one_start(rig, shop, tmp_path):
    pane = rig.start_gemini(shop)
    pane.wait_for_text(COMPOSER, timeout=60)
    for case, (answer, words, wait, dialog_human, left, left_human) in FAMILIES.items():
        prompt = f"next: {case}"
        rig.answer("gemini", answer)
        pane.type(prompt)
        pane.wait_for_text(words, timeout=60)
        due = answered_at(rig, "gemini", prompt) if wait else None
        # The dialog draws a time of day to the minute; the error names the wait, read against the capture.
        reset = around(due, wait, MINUTE) if due else None
        judge(pane, f"{case}-dialog", Expect(True, reset, dialog_human),
              f"real Gemini CLI 0.61.0 (API key): {answer['status']} {answer['body']}", tmp_path)
        stop(pane)
        pane.wait_for_text(left, timeout=30)
        judge(pane, f"{case}-stopped", Expect(True, reset, left_human), "the same, its dialog answered Stop", tmp_path)

    for case, (answer, words) in LOOK_ALIKES.items():
        rig.answer("gemini", answer)
        pane.type(f"next: {case}")
        pane.wait_for_text(words, timeout=60)
        judge(pane, f"{case}-dialog", Expect(False), f"real Gemini CLI 0.61.0: {answer['status']} {answer['body']}",
              tmp_path)
        stop(pane)
        judge(pane, f"{case}-stopped", Expect(False), "the same, its dialog answered Stop", tmp_path)

    rig.answer("gemini", shapes.gemini_answer("You exceeded your current quota means the usage limit was reached; "
                                              "it resets daily.", delay=0.1))
    pane.type("next: explain the quota error")
    pane.wait_for_text("resets daily", timeout=60)
    judge(pane, "quota-words-in-an-answer", Expect(False), "an answer that quotes the walls' words", tmp_path)
    rig.answer("gemini", shapes.gemini_answer("Noted.", delay=0.1))
    pane.type("Usage limit reached for all Pro models. You have exhausted your daily quota on this model.")
    pane.wait_for_text("Noted.", timeout=60)
    judge(pane, "wall-words-typed-by-the-user", Expect(False), "the user typing a wall's words, answered", tmp_path)
