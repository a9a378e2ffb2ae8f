"""What one delivery attempt came to: sent, failed for now, or failed for good."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Outcome(enum.Enum):
    SENT = "sent"
    RETRY = "retry"  # may work later: refused, timed out, 5xx, 429
    FAILED = "failed"  # will not work by trying again: a redirect, a 4xx, a missing program
    # A 2xx status line, then the reply was cut: the endpoint may have taken it. Never retried,
    # since a second try could deliver it twice; never called sent, since it may not have been.
    UNCONFIRMED = "unconfirmed"


@dataclass(frozen=True, slots=True)
class Answer:
    outcome: Outcome
    detail: str  # one line: "HTTP 200", "connection refused", "redirected to https://… (not followed)"

    @property
    def sent(self) -> bool:
        return self.outcome is Outcome.SENT


def sent(detail: str) -> Answer:
    return Answer(Outcome.SENT, detail)


def retry(detail: str) -> Answer:
    return Answer(Outcome.RETRY, detail)


def failed(detail: str) -> Answer:
    return Answer(Outcome.FAILED, detail)


def unconfirmed(detail: str) -> Answer:
    return Answer(Outcome.UNCONFIRMED, detail)
