"""The `worker` process: RQ's own worker on the `slack` and `turns` queues.

It lives at the top layer because it composes both job modules. They, the tool schemas and
httpx's transport are loaded here once: with SimpleWorker (the default) every job reuses them,
and with the forking Worker each fork starts with them loaded instead of paying ~0.3 s per job.
"""

from __future__ import annotations

import importlib
import logging
import threading

from redis import Redis
from rq import SimpleWorker, Worker

import gateway.delivery
import jobs.compaction_job
import jobs.turn
from jobs import janitor, runtime
from jobs.queues import SERIALIZER, SLACK_QUEUE, TURNS_QUEUE, queue
from jobs.runtime import redis_from_url
from jobs.settings import Settings

PRELOADED_JOB_MODULES = (jobs.turn, jobs.compaction_job, gateway.delivery)
# httpx loads its async transport stack lazily on the first request; a fork that does that
# pays ~70 ms per job, so the parent loads it once.
LAZY_TRANSPORT_MODULES = ("httpcore", "h11", "anyio._backends._asyncio")


def _janitor(redis: Redis, stop: threading.Event, every_s: float) -> None:
    """Every worker process sweeps (one at a time, under a lock), so no extra process is needed."""
    while True:
        try:
            janitor.sweep(redis, every_s)
        except Exception:  # Redis away for a moment: the next sweep tries again
            logging.getLogger(__name__).warning("janitor sweep failed", exc_info=True)
        if stop.wait(every_s):
            return


WORKER_CLASSES: dict[str, type[Worker] | type[SimpleWorker]] = {"fork": Worker, "simple": SimpleWorker}


def work(settings: Settings, *, burst: bool = False, worker_class: str = "fork") -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # RQ blocks on BLPOP for minutes, so this connection must not have a short socket timeout.
    runtime.settings()  # parsed once here, inherited by every forked job
    if not settings.LLM_BASE_URL:
        logging.getLogger(__name__).warning(
            "LLM_BASE_URL is not set: turns use the built-in demo model (scripted)"
        )
    runtime.build_model(settings)
    jobs.turn.tool_setup()
    for name in LAZY_TRANSPORT_MODULES:
        importlib.import_module(name)
    redis = Redis.from_url(settings.REDIS_URL or "")
    queues = [queue(redis, SLACK_QUEUE), queue(redis, TURNS_QUEUE)]  # deliveries first: they are short
    stop = threading.Event()
    threading.Thread(
        target=_janitor,
        args=(redis_from_url(settings.REDIS_URL or ""), stop, settings.JANITOR_INTERVAL_SECONDS),
        daemon=True,
    ).start()
    try:
        worker = WORKER_CLASSES[worker_class](queues, connection=redis, serializer=SERIALIZER)
        worker.work(burst=burst, with_scheduler=True)
    finally:
        stop.set()
