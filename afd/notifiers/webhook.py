"""The `webhook` notifier: the event as JSON, POSTed to a URL."""

from __future__ import annotations

import json

from afd.config.notifiers import NotifierSettings
from afd.model import Notice
from afd.notifiers import answer, http
from afd.notifiers.answer import Answer
from afd.notifiers.secret import TokenProblem, bearer


def send(settings: NotifierSettings, notice: Notice) -> Answer:
    try:
        auth = bearer(settings.token_file)
    except TokenProblem as exc:
        return answer.failed(str(exc))
    body = json.dumps(notice.payload, ensure_ascii=False).encode()
    return http.post(settings.url or "", body, {"Content-Type": "application/json", **auth}, settings.timeout)
