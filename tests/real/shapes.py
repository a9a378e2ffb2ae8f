"""What the real APIs answer, as the mock's answer files (see mock_api.py).

Each function returns one answer: ``{"status", "headers", "body"}`` or
``{"status", "headers", "events", "delay"}``. The header and body shapes are
the ones that make Claude Code 2.1.332 and Codex 0.171.0 draw each screen.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

# --- Claude (POST /v1/messages, server-sent events) ----------------------------


def claude_answer(text: str = "Done.", *, chunks: int = 6, delay: float = 0.4, headers: dict | None = None) -> dict:
    """A streamed reply, ``chunks`` pieces ``delay`` s apart (the spinner shows meanwhile)."""
    words = text.split(" ")
    step = max(1, len(words) // chunks)
    pieces = [" ".join(words[i:i + step]) + " " for i in range(0, len(words), step)]
    message = {
        "id": "msg_mock", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    events = [{"type": "message_start", "message": message},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}]
    events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}} for p in pieces]
    events += [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 20}},
        {"type": "message_stop"},
    ]
    return {"kind": "answer", "status": 200, "headers": headers or {}, "events": events, "delay": delay}


WINDOWS = {"five_hour": "5h", "seven_day": "7d", "seven_day_opus": "7d_opus", "seven_day_sonnet": "7d_sonnet"}


def claude_unified(status: str, reset: int, claim: str, utilization: float | None = None) -> dict:
    headers = {
        "anthropic-ratelimit-unified-status": status,
        "anthropic-ratelimit-unified-reset": str(reset),
        "anthropic-ratelimit-unified-representative-claim": claim,
    }
    if utilization is not None:  # the approaching notice reads the window's own headers
        window = f"anthropic-ratelimit-unified-{WINDOWS.get(claim, claim)}"
        headers |= {
            f"{window}-utilization": str(utilization),
            f"{window}-reset": str(reset),
            f"{window}-status": status,
            f"{window}-surpassed-threshold": str(int(utilization * 10) / 10),
        }
    return headers


def claude_limit(reset: int, claim: str = "five_hour") -> dict:
    """The plan's wall: a 429 the unified headers call `rejected` (``claim``: five_hour, seven_day, …)."""
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}
    return {"kind": "limit", "status": 429, "headers": claude_unified("rejected", reset, claim), "body": body}


def claude_wall(headers: dict, *, error_type: str = "rate_limit_error", message: str = "Rate limited",
                status: int = 429, details: dict | None = None) -> dict:
    """A refusal with any unified headers: the spend, credit, org and admin walls (see claude_family)."""
    body = {"type": "error", "error": {"type": error_type, "message": message, **({"details": details} if details else {})}}
    return {"kind": "limit", "status": status, "headers": {"x-should-retry": "false", **headers}, "body": body}


U = "anthropic-ratelimit-unified-"


def claude_family(name: str, reset: int) -> dict:
    """The response that makes Claude Code 2.1.332 (signed in to Max, as an org admin) draw wall ``name``."""
    rejected = {f"{U}status": "rejected"}
    session = {f"{U}representative-claim": "five_hour", f"{U}reset": str(reset)}
    credits = {f"{U}overage-status": "rejected", f"{U}overage-reset": str(reset)}
    table = {
        # "You've hit your monthly spend limit · raise it at …" (no reset: a person raises it)
        "spend-cap": {**rejected, f"{U}overage-status": "rejected",
                      f"{U}overage-disabled-reason": "org_level_disabled_until"},
        # the same, and the session window's own reset beside it
        "spend-cap-with-session-reset": {**rejected, **session, f"{U}overage-disabled-reason": "org_level_disabled_until"},
        # "You're out of usage credits · resets …" (usage-based plans: "Your org is out of usage · add funds …")
        "out-of-credits": {**rejected, **credits, f"{U}overage-disabled-reason": "out_of_credits"},
        # usage-based plans: "You've hit your individual usage limit · resets …" (elsewhere the spend cap's words)
        "individual-usage-limit": {**rejected, **credits, f"{U}overage-disabled-reason": "org_spend_cap_reached"},
        # usage-based plans: "You've hit your org's monthly usage limit · resets …"
        "org-usage-limit": {**rejected, **credits, f"{U}overage-disabled-reason": "org_level_disabled_until"},
        # "You've hit your team's pooled group budget · resets …"
        "group-pool": {**rejected, **credits, f"{U}overage-scope": "group_pool"},
        # "Your seat type doesn't include usage credits"
        "seat-type": {**rejected, f"{U}overage-status": "rejected", f"{U}overage-disabled-reason": "seat_tier_level_disabled"},
        # "Your usage allocation has been disabled by your admin · …"
        "allocation-disabled": {**rejected, f"{U}overage-status": "rejected",
                                f"{U}overage-disabled-reason": "member_level_disabled"},
        # "Your group's usage limit is set to $0 · …"
        "group-zero": {**rejected, f"{U}overage-status": "rejected", f"{U}overage-disabled-reason": "group_zero_credit_limit"},
        # "This service is disabled for your org"
        "service-disabled": {**rejected, f"{U}overage-status": "rejected",
                             f"{U}overage-disabled-reason": "org_service_level_disabled"},
        # "Usage is paused for your organization. For help, please contact support."
        "usage-paused": {**rejected, f"{U}overage-daily-cap-paused": "true"},
        # "You've hit your Opus limit · resets …"
        "opus-limit": {**rejected, f"{U}representative-claim": "seven_day_opus", f"{U}reset": str(reset)},
    }
    if name == "model-requires-credits":  # a usage-credits-only model (Fable) with the credits used up
        return claude_wall({**rejected, f"{U}overage-status": "rejected", f"{U}overage-disabled-reason": "out_of_credits"},
                           details={"error_code": "credits_required", "disabled_reason": "out_of_credits"})
    if name == "fable-limit":  # the Fable model's included allowance, used up
        return claude_wall({**rejected, f"{U}representative-claim": "seven_day_overage_included", f"{U}reset": str(reset)})
    if name == "credit-balance":  # an API key's organization without credits
        return claude_wall({}, status=400, error_type="invalid_request_error",
                           message="Your credit balance is too low to access the Anthropic API. "
                                   "Please go to Plans & Billing to upgrade or purchase credits.")
    if name == "workspace-api-limit":  # an API key's workspace at the usage limit set for it
        when = time.strftime("%Y-%m-%d at %H:%M UTC", time.gmtime(reset))
        return claude_wall({}, status=400, error_type="invalid_request_error",
                           message=f"You have reached your specified workspace API usage limits. "
                                   f"You will regain access on {when}.")
    if name == "extra-usage":  # the server's own words about extra usage, in a 400
        return claude_wall({}, status=400, error_type="invalid_request_error",
                           message="You're out of extra usage. Add more at claude.ai/settings/usage and keep going.")
    if name == "gateway":  # a gateway's own words, printed as they come (no claim, no overage status)
        day = time.strftime("%b %-d", time.gmtime(reset))  # the CLI redraws this date as its own reset time
        return claude_wall({f"{U}reset": str(reset)}, error_type="billing_error",
                           message=f"spend limit reached · resets {day} · request an increase at "
                                   "https://go.corp.example.com/claude-limits")
    return claude_wall(table[name])


def claude_profile(**organization) -> dict:
    """The OAuth profile with the organization's fields changed (``billing_type="usage_based"``)."""
    from mock_api import PROFILE

    return {**PROFILE, "organization": {**PROFILE["organization"], **organization}}


def claude_warning(reset: int, claim: str = "five_hour", utilization: float = 0.92) -> dict:
    """A normal answer that says the plan is nearly used up."""
    answer = claude_answer("Here is the answer.", headers=claude_unified("allowed_warning", reset, claim, utilization))
    return {**answer, "kind": "warning"}


def claude_throttle() -> dict:
    """A 429 without the unified headers: the service limiting requests, not the plan."""
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}
    return {"kind": "throttle", "status": 429, "headers": {"retry-after": "1"}, "body": body}


# --- Codex (POST /v1/responses, server-sent events) ----------------------------


def codex_answer(text: str = "Done.", *, chunks: int = 6, delay: float = 0.4, headers: dict | None = None) -> dict:
    words = text.split(" ")
    step = max(1, len(words) // chunks)
    pieces = [" ".join(words[i:i + step]) + " " for i in range(0, len(words), step)]
    item = {"type": "message", "id": "msg_mock", "role": "assistant", "status": "in_progress", "content": []}
    done = {**item, "status": "completed", "content": [{"type": "output_text", "text": "".join(pieces), "annotations": []}]}
    response = {"id": "resp_mock", "object": "response", "status": "in_progress", "output": []}
    events = [
        {"type": "response.created", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
    ]
    events += [{"type": "response.output_text.delta", "item_id": "msg_mock", "output_index": 0, "content_index": 0,
                "delta": p} for p in pieces]
    events += [
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {**response, "status": "completed", "output": [done],
         "usage": {"input_tokens": 10, "output_tokens": 20, "total_tokens": 30,
                   "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}},
    ]
    return {"kind": "answer", "status": 200, "headers": headers or {}, "events": events, "delay": delay}


def codex_usage_headers(used_percent: float, reset: int, window_minutes: int = 300) -> dict:
    return {
        "x-codex-primary-used-percent": str(used_percent),
        "x-codex-primary-window-minutes": str(window_minutes),
        "x-codex-primary-reset-at": str(reset),
    }


def codex_error(status: int, error: dict, headers: dict | None = None, kind: str = "limit") -> dict:
    return {"kind": kind, "status": status, "headers": headers or {}, "body": {"error": error}}


def codex_limit(plan_type: str = "plus", reset: int | None = None, headers: dict | None = None) -> dict:
    """The plan's wall (``reset`` None: no time to try again at)."""
    error = {"type": "usage_limit_reached", "message": "The usage limit has been reached", "plan_type": plan_type}
    if reset is not None:
        error["resets_at"] = reset
    return codex_error(429, error, headers)


def codex_model_limit(reset: int, limit_id: str = "codex-spark", name: str = "GPT-5.3-Codex-Spark") -> dict:
    """The wall of one model's own limit: ``x-codex-active-limit`` names it, its headers give its name and window."""
    headers = {
        "x-codex-active-limit": limit_id,
        f"x-{limit_id}-limit-name": name,
        f"x-{limit_id}-primary-used-percent": "100",
        f"x-{limit_id}-primary-window-minutes": "300",
        f"x-{limit_id}-primary-reset-at": str(reset),
    }
    return codex_limit("pro", reset, headers)


def codex_workspace(reached_type: str, plan_type: str = "business") -> dict:
    """A workspace's wall: ``reached_type`` one of workspace_{owner,member}_{credits_depleted,usage_limit_reached}."""
    return codex_limit(plan_type, None, {"x-codex-rate-limit-reached-type": reached_type})


def codex_billing(error_type: str = "insufficient_quota", headers: dict | None = None) -> dict:
    message = {"insufficient_quota": "You exceeded your current quota.", "usage_not_included": "Not included."}
    return codex_error(429, {"type": error_type, "message": message.get(error_type, error_type)}, headers, "billing")


def codex_throttle(retry_after: int = 1) -> dict:
    """A generic 429 the CLI retries (``retry_after`` s apart): not the plan's wall."""
    error = {"type": "rate_limit_exceeded", "code": "rate_limit_exceeded",
             "message": f"Rate limit reached for gpt-5.3-codex on tokens per min (TPM). Please try again in {retry_after}s."}
    return codex_error(429, error, {"retry-after": str(retry_after)}, "throttle")


def write_answer(directory: Path, api: str, answer: dict) -> None:
    """Make ``answer`` the mock's reply to every later ``api`` call (atomic: no half-read file)."""
    path = Path(directory) / f"{api}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(answer), encoding="utf-8")
    os.replace(tmp, path)


# --- Gemini (POST /v1beta/models/M:streamGenerateContent?alt=sse) ---------------


def gemini_answer(text: str = "Done.", *, chunks: int = 6, delay: float = 0.4) -> dict:
    """A streamed reply: data-only server-sent events, each a GenerateContentResponse chunk."""
    words = text.split(" ")
    step = max(1, len(words) // chunks)
    pieces = [" ".join(words[i:i + step]) + " " for i in range(0, len(words), step)]
    events = [{"candidates": [{"content": {"role": "model", "parts": [{"text": p}]}, "index": 0}]} for p in pieces]
    events[-1]["candidates"][0]["finishReason"] = "STOP"
    events[-1]["usageMetadata"] = {"promptTokenCount": 10, "candidatesTokenCount": 20, "totalTokenCount": 30}
    return {"kind": "answer", "status": 200, "headers": {}, "events": events, "delay": delay}


def gemini_limit(retry_seconds: int) -> dict:
    """A 429 whose message asks to retry in more than five minutes: Gemini CLI's terminal quota error (its wall)."""
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                      "message": f"You exceeded your current quota. Please retry in {retry_seconds}s."}}
    return {"kind": "limit", "status": 429, "headers": {}, "body": body}


def gemini_throttle(retry_seconds: int = 2) -> dict:
    """A 429 that asks to retry in seconds: retried by the CLI itself, not a wall."""
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                      "message": f"Resource exhausted. Please retry in {retry_seconds}s."}}
    return {"kind": "throttle", "status": 429, "headers": {}, "body": body}


def gemini_daily_quota() -> dict:
    """A 429 whose QuotaFailure names a per-day quota: the wall with no reset time."""
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded for quota metric.",
                      "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                                   "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_requests",
                                                   "quotaId": "GenerateRequestsPerDayPerProjectPerModel"}]}]}}
    return {"kind": "daily-quota", "status": 429, "headers": {}, "body": body}


# --- OpenAI-compatible chat (POST /v1/chat/completions, server-sent events) -----


def chat_answer(text: str = "Done.", *, chunks: int = 6, delay: float = 0.4) -> dict:
    """A streamed chat completion: data-only events, then `[DONE]`."""
    words = text.split(" ")
    step = max(1, len(words) // chunks)
    pieces = [" ".join(words[i:i + step]) + " " for i in range(0, len(words), step)]
    base = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 1, "model": "mock-model"}
    events: list = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    events += [{**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    events += [{**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}}, "[DONE]"]
    return {"kind": "answer", "status": 200, "headers": {}, "events": events, "delay": delay}


def chat_rate_limit(retry_after_seconds: int) -> dict:
    """A 429 with `retry-after`: a client that retries by itself waits that long."""
    body = {"error": {"message": "Rate limit reached for requests", "type": "rate_limit_error", "code": "rate_limit_exceeded"}}
    return {"kind": "limit", "status": 429, "headers": {"retry-after": str(retry_after_seconds)}, "body": body}


# --- GitHub's Copilot API (POST https://api.githubcopilot.com/chat/completions) --


def copilot_rate_limit(code: str, retry_after_seconds: int) -> dict:
    """A 429 of GitHub's Copilot API: Copilot CLI words its wall from ``code`` and the wait from `retry-after`.

    ``code``: ``user_global_rate_limited`` (its session wall), ``user_weekly_rate_limited``,
    ``user_model_rate_limited`` (another model goes on); ``rate_limited`` is a throttle it waits out.
    """
    body = {"error": {"message": "Sorry, you have been rate-limited.", "code": code}}
    return {"kind": "limit", "status": 429, "headers": {"retry-after": str(retry_after_seconds)}, "body": body}


def copilot_payment(code: str | None = None, message: str | None = None) -> dict:
    """A 402 of GitHub's Copilot API: Copilot CLI words its billing wall from ``code`` (quota_exceeded,
    session_quota_exceeded, additional_spend_limit_reached); with none it prints ``message`` as the
    server wrote it, or `402 Payment Required`."""
    error = {k: v for k, v in (("code", code), ("message", message)) if v is not None}
    return {"kind": "billing", "status": 402, "headers": {}, "body": {"error": error} if error else {}}


def copilot_models(*ids: str) -> dict:
    """GitHub's model list with these models beside the mock's own: one of them chosen takes Copilot CLI off Auto."""
    from mock_api import COPILOT_MODELS

    base = COPILOT_MODELS["data"][0]
    extra = []
    for model in ids:
        entry = json.loads(json.dumps(base))
        entry.update(id=model, name=model, version=model, is_chat_default=False, is_chat_fallback=False)
        entry["capabilities"]["family"] = model
        extra.append(entry)
    return {"/models": {"object": "list", "data": [base, *extra]}}


def chat_error(status: int, message: str, *, error_type: str = "api_error", code: object = None,
               headers: dict | None = None, extra: dict | None = None) -> dict:
    """An OpenAI-compatible API's error: its status, headers and `error` body (``extra``: more of the body)."""
    error = {"message": message, "type": error_type, **({"code": code} if code is not None else {})}
    return {"kind": "limit", "status": status, "headers": headers or {}, "body": {"error": error, **(extra or {})}}


def opencode_go_limit(retry_after_seconds: int, limit_name: str = "Monthly", workspace: str = "wrk_01AFD") -> dict:
    """OpenCode Go's usage limit: a 429 naming GoUsageLimitError, with the workspace and the limit's name."""
    return chat_error(429, "GoUsageLimitError: usage limit reached", error_type="GoUsageLimitError",
                      headers={"retry-after": str(retry_after_seconds)},
                      extra={"type": "error", "metadata": {"workspace": workspace, "limitName": limit_name}})


def opencode_free_limit(headers: dict) -> dict:
    """OpenCode Zen's free tier used up: a 429 naming FreeUsageLimitError."""
    return chat_error(429, "FreeUsageLimitError: free usage limit reached", error_type="FreeUsageLimitError",
                      headers=headers, extra={"type": "error"})


def http_date(epoch: float) -> str:
    """`retry-after` as an HTTP date."""
    from email.utils import formatdate

    return formatdate(epoch, usegmt=True)


def gemini_error(status: int, message: str, *, details: list | None = None, api_status: str = "RESOURCE_EXHAUSTED") -> dict:
    """A Gemini API error: Gemini CLI classifies it by its status, message and details (RetryInfo, QuotaFailure, ErrorInfo)."""
    body = {"error": {"code": status, "status": api_status, "message": message, **({"details": details} if details else {})}}
    return {"kind": "limit", "status": status, "headers": {}, "body": body}


def retry_info(delay: str) -> dict:
    return {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}


def quota_failure(quota_id: str, metric: str = "generativelanguage.googleapis.com/generate_content_free_tier_requests") -> dict:
    return {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": metric, "quotaId": quota_id}]}


def error_info(reason: str, domain: str = "googleapis.com") -> dict:
    return {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": domain}


def claude_usage_headers(five_hour: float, five_reset: int, seven_day: float, seven_reset: int) -> dict:
    """What a subscriber's answer carries of both windows: utilisation (0–1) and reset, status allowed."""
    return {
        f"{U}status": "allowed",
        f"{U}representative-claim": "five_hour",
        f"{U}reset": str(five_reset),
        f"{U}5h-utilization": str(five_hour),
        f"{U}5h-reset": str(five_reset),
        f"{U}5h-status": "allowed",
        f"{U}7d-utilization": str(seven_day),
        f"{U}7d-reset": str(seven_reset),
        f"{U}7d-status": "allowed",
    }


def codex_both_windows(primary: float, primary_reset: int, secondary: float, secondary_reset: int) -> dict:
    """Codex's usage headers for its 5-hour (primary) and weekly (secondary) windows."""
    return {
        **codex_usage_headers(primary, primary_reset),
        "x-codex-secondary-used-percent": str(secondary),
        "x-codex-secondary-window-minutes": "10080",
        "x-codex-secondary-reset-at": str(secondary_reset),
    }
