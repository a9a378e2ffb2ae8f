"""The `ntfy` notifier: a POST to a topic URL, the sentence as the body, title/priority/tags as headers.

ntfy's publish API (https://docs.ntfy.sh/publish/): the body is the
message; `Title`, `Priority` (1-5) and `Tags` (comma-separated, emoji
shortcodes become emoji) are headers.
"""

from __future__ import annotations

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
    body = notice.text + (f"\n{notice.where}" if notice.where else "")
    tags = settings.tags or notice.tags
    headers = {
        "Title": http.header_value(notice.title),
        "Priority": str(settings.priority or notice.priority),
        "Content-Type": "text/plain; charset=utf-8",
        **({"Tags": http.header_value(",".join(tags))} if tags else {}),
        **auth,
    }
    return http.post(settings.url or "", body.encode(), headers, settings.timeout)
