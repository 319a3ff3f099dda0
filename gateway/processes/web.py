"""The `web` process: the Bolt app behind gunicorn (gthread workers) on $PORT.

Why gunicorn + WSGI rather than uvicorn + ASGI: every listener does blocking work by design
(redis-py and RQ's enqueue are synchronous), so threads are the honest concurrency model here;
gthread keeps them off any event loop, and Bolt's sync App is the best-trodden Bolt path.
"""

from __future__ import annotations

import gc
import io
import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from gunicorn import glogging
from gunicorn.app.base import BaseApplication
from prometheus_client import CONTENT_TYPE_LATEST, multiprocess
from redis.exceptions import RedisError
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_sdk.signature import SignatureVerifier

from gateway.app import build_app
from gateway.authz import warn_if_nobody_approves
from gateway.processes.logs import configure_logging
from gateway.request_shape import body_problem, media_type_problem, signed
from gateway.slack_identity import SlackIdentity
from jobs import metrics
from jobs.metrics_export import exposition, multiprocess_mode
from jobs.redis_connect import RedisTarget, connect
from jobs.settings import Settings

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
WEB_WORKERS = int(os.environ.get("WEB_CONCURRENCY", "2"))  # one per core on the reference machine
WEB_THREADS = 8  # listeners wait on Redis, not the CPU
# Slack's largest requests (a message event full of blocks, a modal's submission) are tens of
# KB; a body is held in memory whole (Bolt wants a str), so anything bigger is refused unread.
MAX_BODY_BYTES = 1024 * 1024
KIND_KEY = "threadline.request_kind"  # set once the request is signed and readable
READY_TIMEOUT_S = 0.2  # a balancer's probe must not wait longer on a Redis that is away
NOT_READY = "not ready: Redis does not answer, so nothing Slack sends could be recorded"

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def wsgi_app(settings: Settings, identity: SlackIdentity | None = None) -> WSGIApp:
    events = _EventsEndpoint(settings, identity or SlackIdentity(settings))
    target = RedisTarget.of(settings)
    redis = connect(target)
    return routes(events, ready=redis_answers(target), scrape=lambda: exposition(redis))


def routes(
    events: WSGIApp, ready: Callable[[], bool] = lambda: True, scrape: Callable[[], bytes] = exposition
) -> WSGIApp:
    """`POST /slack/events` to `events`; `/healthz` (the process answers) and `/readyz` (it can
    take Slack's requests: `ready()`, else 503) for load balancers; `GET /metrics` (Prometheus:
    every web worker's metrics, and the queues); 404 for anything else."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO")
        if path == EVENTS_PATH and environ.get("REQUEST_METHOD") == "POST":
            return events(environ, start_response)
        if path == "/healthz":
            return _text(start_response, "200 OK", "ok")
        if path == "/readyz":
            if ready():
                return _text(start_response, "200 OK", "ready")
            return _text(start_response, "503 Service Unavailable", NOT_READY)
        if path == "/metrics" and environ.get("REQUEST_METHOD") == "GET":
            start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
            return [scrape()]
        return _text(start_response, "404 Not Found", "not found")

    return app


def redis_answers(target: RedisTarget) -> Callable[[], bool]:
    """Whether Redis answers a PING within READY_TIMEOUT_S (every input is recorded there)."""
    redis = connect(target, socket_timeout_s=READY_TIMEOUT_S, connect_timeout_s=READY_TIMEOUT_S)

    def ready() -> bool:
        try:
            return bool(redis.ping())
        except RedisError:
            return False

    return ready


class _EventsEndpoint:
    """POST /slack/events: Bolt's adapter, behind checks that run cheapest and least trusting first.

    The size and framing come from the headers, before a byte of the body is read; the signature
    is checked on the raw bytes before anything parses them (so unsigned input is never parsed);
    then the body is parsed once the way Bolt will parse it, with limits, and refused if Bolt
    could not use it.
    """

    def __init__(self, settings: Settings, identity: SlackIdentity) -> None:
        redis = connect(RedisTarget.of(settings))
        self.handler = SlackRequestHandler(build_app(settings, redis, identity))
        self.verifier = SignatureVerifier(settings.SLACK_SIGNING_SECRET or "")

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        started = time.perf_counter()
        try:
            return self._answer(environ, start_response)
        finally:
            kind = environ.get(KIND_KEY, "refused")
            metrics.REQUEST_SECONDS.labels(kind).observe(time.perf_counter() - started)

    def _answer(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        refused = _framing_refused(environ.get("CONTENT_LENGTH") or "")
        if refused is not None:
            return _plain(start_response, *refused)
        body = _read_body(environ)
        if not signed(self.verifier, body, environ):
            return _plain(start_response, "401 Unauthorized", "invalid request signature")
        content_type = environ.get("CONTENT_TYPE", "")
        problem = media_type_problem(content_type)
        if problem is not None:
            return _plain(start_response, "415 Unsupported Media Type", problem)
        problem = body_problem(body, content_type)
        if problem is None:
            environ[KIND_KEY] = request_kind(body, content_type)
            try:
                return self.handler(environ, start_response)
            except Exception as error:  # Bolt choking on a shape Slack never sends
                problem = f"the request could not be read ({type(error).__name__})"
                log.warning("%s", problem, exc_info=True)
        return _plain(start_response, "400 Bad Request", f"invalid payload: {problem}")


def request_kind(body: bytes, content_type: str) -> str:
    """What Slack sent, for the ack-latency metric: events come as JSON, the rest as a form
    (slash commands name their `command`; buttons, shortcuts and modals send a `payload`)."""
    if content_type.startswith("application/json"):
        return "event"
    fields = {pair.split(b"=", 1)[0] for pair in body.split(b"&")}
    if b"payload" in fields:
        return "interaction"
    return "command" if b"command" in fields else "other"


def _framing_refused(content_length: str) -> tuple[str, str] | None:
    """Answered from the headers alone. gunicorn then discards what was sent of the body (at
    most 64 KiB, within 5 s) or closes the connection: nobody holds it in memory."""
    if not content_length:  # chunked, or no length said: its size is unknown until read
        return "411 Length Required", "a Content-Length is required"
    if not content_length.isdigit():  # gunicorn refuses these itself; kept for any other server
        return "400 Bad Request", "the Content-Length is not a number"
    if int(content_length) > MAX_BODY_BYTES:
        return "413 Content Too Large", f"the body is larger than {MAX_BODY_BYTES} bytes"
    return None


def _read_body(environ: dict[str, Any]) -> bytes:
    """Read the declared length once and put it back, so Bolt's adapter reads the same bytes."""
    body: bytes = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return body


def _text(start_response: Callable[..., Any], status: str, text: str) -> list[bytes]:
    start_response(status, [("Content-Type", "text/plain")])
    return [f"{text}\n".encode()]


def _plain(start_response: Callable[..., Any], status: str, text: str) -> list[bytes]:
    data = json.dumps({"ok": False, "error": text}).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


class _GunicornLogs(glogging.Logger):  # type: ignore[misc]  # gunicorn ships no type information
    """gunicorn's own lines (workers starting, a worker timing out) go through threadline's
    handler like every other line, so LOG_FORMAT=json stays one object per line."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for logger in (self.error_log, self.access_log):
            logger.handlers.clear()
            logger.propagate = True


class _Gunicorn(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type information
    def __init__(self, settings: Settings, identity: SlackIdentity) -> None:
        self.settings = settings
        self.identity = identity  # known in the master, so forked workers need not ask again
        super().__init__()

    def load_config(self) -> None:
        self.cfg.set("bind", f"0.0.0.0:{self.settings.PORT}")
        self.cfg.set("workers", WEB_WORKERS)
        self.cfg.set("worker_class", "gthread")
        self.cfg.set("threads", WEB_THREADS)
        self.cfg.set("keepalive", self.settings.WEB_KEEPALIVE_SECONDS)
        self.cfg.set("accesslog", None)
        self.cfg.set("logger_class", _GunicornLogs)
        self.cfg.set("graceful_timeout", 10)
        self.cfg.set("post_worker_init", _freeze_what_loading_made)
        self.cfg.set("child_exit", _forget_worker)

    def load(self) -> WSGIApp:
        return wsgi_app(self.settings, self.identity)


def _freeze_what_loading_made(_worker: object) -> None:
    """Keep the app's own objects (modules, Bolt, pydantic schemas) out of every later collection.

    They live as long as the process, yet a full collection walks all of them: with threadline's
    imports that was a 30-50 ms pause of every thread, a few times a minute under load.
    """
    gc.collect()
    gc.freeze()


def _forget_worker(_arbiter: object, worker: Any) -> None:
    """A gunicorn worker exited: its live gauges go (its counters stay in the sum)."""
    if multiprocess_mode():
        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]  # untyped upstream


def serve(settings: Settings) -> None:
    """Serve until stopped; SettingsError (one line) first when Slack refuses the bot token."""
    configure_logging(settings)
    warn_if_nobody_approves(settings)
    identity = SlackIdentity(settings)
    identity.check_at_start()
    _Gunicorn(settings, identity).run()
