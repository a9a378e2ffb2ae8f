"""The dashboard's routes: the page, its files, and the JSON API it (and any script) uses.

Every answer comes from the daemon through `DaemonLink`; nothing here reads
the store or tmux. The guard in front (afd/web/guard.py) has already checked
the host, the login, `x-afd` and the body's size.
"""

from __future__ import annotations

import asyncio
import json
import time
from importlib.resources import files

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from afd.web.events import EventHub
from afd.web.link import DaemonLink, Refused

STATIC = files("afd.web").joinpath("static")
STATUS_EVENTS = 50
STATUS_MAX_AGE = 0.5  # seconds one status answer serves every page asking meanwhile
KEEPALIVE = 15.0  # seconds between comments on a quiet event stream
MAX_TEXT = 8000  # characters of a brief


class StatusCache:
    """The daemon's status, asked at most once per STATUS_MAX_AGE however many pages refresh."""

    def __init__(self, link: DaemonLink):
        self.link = link
        self._lock = asyncio.Lock()
        self._value: object = None
        self._at = float("-inf")

    async def get(self) -> object:
        async with self._lock:
            if time.monotonic() - self._at >= STATUS_MAX_AGE:
                self._value = await run_in_threadpool(self.link.ask, "status", {"events": STATUS_EVENTS})
                self._at = time.monotonic()
            return self._value


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _ask(call, *args) -> Response:
    try:
        return JSONResponse(await run_in_threadpool(call, *args))
    except Refused as exc:
        return _error(exc.status, str(exc))


async def _json_body(request: Request) -> dict:
    try:
        body = json.loads(await request.body() or b"{}")
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "the request body is not JSON") from None
    except RecursionError:
        # A few KiB of "[[[[…" nest deeper than the parser recurses: bad input, not a crash.
        raise Refused(400, "the request body nests too deeply") from None
    if not isinstance(body, dict):
        raise Refused(400, "the request body must be a JSON object")
    return body


def _text(body: dict, key: str, *, required: bool = False, limit: int = MAX_TEXT) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise Refused(400, f'"{key}" must be a {"non-empty " if required else ""}string')
    if len(value) > limit:
        raise Refused(400, f'"{key}" is over {limit} characters')
    return value


def build_app(link: DaemonLink, hub: EventHub) -> Starlette:
    status = StatusCache(link)

    async def page(request: Request) -> Response:
        return FileResponse(str(STATIC.joinpath("index.html")), media_type="text/html; charset=utf-8")

    async def api_status(request: Request) -> Response:
        try:
            return JSONResponse(await status.get())
        except Refused as exc:
            return _error(exc.status, str(exc))

    async def api_fleet(request: Request) -> Response:
        # The hosts of the fleet with what each last said (afd hosts; docs/fleet.md); read-only, actions stay local.
        return await _ask(link.ask, "hosts.list", {"answers": True})

    async def api_jobs(request: Request) -> Response:
        return await _ask(link.ask, "jobs.list", {})

    async def api_ledger(request: Request) -> Response:
        return await _ask(link.ask, "web.ledger", {"name": request.path_params["name"]})

    async def api_targets(request: Request) -> Response:
        return await _ask(link.ask, "web.targets", {"name": request.path_params["name"]})

    async def api_resume(request: Request) -> Response:
        return await _ask(link.ask, "resume", {"name": request.path_params["name"]})

    async def api_handoff(request: Request) -> Response:
        try:
            body = await _json_body(request)
            to = _text(body, "to", required=True, limit=200)
            brief = _text(body, "brief")
            force = body.get("force", False)
            if not isinstance(force, bool):
                raise Refused(400, '"force" must be true or false')
            args = {"name": request.path_params["name"], "to": to, "brief": brief or None, "force": force, "wait": True}
            result = await run_in_threadpool(link.ask_and_wait, "handoff", args)
        except Refused as exc:
            return _error(exc.status, str(exc))
        if result.get("state") != "done":
            # Started, then rolled back: afd's outcome says why and what it left.
            return _error(409, f"handoff {result.get('outcome') or result.get('state')}")
        return JSONResponse(result)

    async def api_jobs_handoff(request: Request) -> Response:
        try:
            body = await _json_body(request)
            source = _text(body, "from", required=True, limit=200)
            to = _text(body, "to", required=True, limit=200)
            note = _text(body, "note")
            chosen = body.get("jobs", "all")
            if chosen == "all":
                chosen = ["all"]
            if not isinstance(chosen, list) or not chosen or not all(isinstance(j, str) for j in chosen):
                raise Refused(400, '"jobs" must be "all" or a non-empty list of job names')
        except Refused as exc:
            return _error(exc.status, str(exc))
        return await _ask(link.ask, "web.jobs-handoff", {"source": source, "to": to, "selected": chosen, "note": note})

    async def api_events(request: Request) -> Response:
        queue = hub.listen()

        async def stream():
            try:
                yield b"retry: 2000\n\n"
                while True:
                    try:
                        item = await asyncio.wait_for(queue.get(), KEEPALIVE)
                    except TimeoutError:
                        yield b": keepalive\n\n"
                        continue
                    if item is None:
                        return  # the server is stopping
                    ident = f"id: {item['id']}\n" if isinstance(item, dict) and "id" in item else ""
                    yield f"{ident}data: {json.dumps(item, ensure_ascii=False)}\n\n".encode()
            finally:
                hub.forget(queue)

        return StreamingResponse(stream(), media_type="text/event-stream")

    routes = [
        Route("/", page),
        Route("/api/status", api_status),
        Route("/api/events", api_events),
        Route("/api/fleet", api_fleet),
        Route("/api/jobs", api_jobs),
        Route("/api/jobs/handoff", api_jobs_handoff, methods=["POST"]),
        Route("/api/sessions/{name}/ledger", api_ledger),
        Route("/api/sessions/{name}/targets", api_targets),
        Route("/api/sessions/{name}/resume", api_resume, methods=["POST"]),
        Route("/api/sessions/{name}/handoff", api_handoff, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(STATIC)), name="static"),
    ]
    return Starlette(routes=routes)
