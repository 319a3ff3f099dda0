"""The `web` process: the Bolt app behind gunicorn (gthread workers) on $PORT.

Why gunicorn + WSGI rather than uvicorn + ASGI: every listener does blocking work by design
(redis-py and RQ's enqueue are synchronous), so threads are the honest concurrency model here;
gthread keeps them off any event loop, and Bolt's sync App is the best-trodden Bolt path.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from gunicorn.app.base import BaseApplication
from slack_bolt.adapter.wsgi import SlackRequestHandler

from gateway.app import build_app
from jobs.runtime import redis_from_url
from jobs.settings import Settings

EVENTS_PATH = "/slack/events"
WEB_WORKERS = int(os.environ.get("WEB_CONCURRENCY", "2"))  # one per core on the reference machine
WEB_THREADS = 8  # listeners wait on Redis, not the CPU

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def wsgi_app(settings: Settings) -> WSGIApp:
    handler = SlackRequestHandler(build_app(settings, redis_from_url(settings.REDIS_URL or "")))

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == EVENTS_PATH and environ.get("REQUEST_METHOD") == "POST":
            return handler(environ, start_response)
        if environ.get("PATH_INFO") == "/healthz":
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"ok\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found\n"]

    return app


class _Gunicorn(BaseApplication):
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        self.cfg.set("bind", f"0.0.0.0:{self.settings.PORT}")
        self.cfg.set("workers", WEB_WORKERS)
        self.cfg.set("worker_class", "gthread")
        self.cfg.set("threads", WEB_THREADS)
        self.cfg.set("accesslog", None)
        self.cfg.set("graceful_timeout", 10)

    def load(self) -> WSGIApp:
        return wsgi_app(self.settings)


def serve(settings: Settings) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _Gunicorn(settings).run()
