"""What a scrape answers: the metrics of every process sharing PROMETHEUS_MULTIPROC_DIR (or of
this process alone), and, where asked, the queues' depth and oldest job read from Redis then.

Queue depth is read at scrape time rather than polled: it costs nothing between scrapes and is
never stale. It is a fact of Redis, not of a process, so only one endpoint (web's) reports it.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator
from datetime import datetime

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from redis import Redis
from redis.exceptions import RedisError

from jobs import metrics
from jobs.queues import SLACK_QUEUE, TURNS_QUEUE
from jobs.redis_text import text

log = logging.getLogger(__name__)

QUEUES = (TURNS_QUEUE, SLACK_QUEUE)
MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's own variable


class QueueCollector(Collector):
    """`threadline_queue_jobs` and `threadline_queue_oldest_job_age_seconds` per RQ queue."""

    def __init__(self, redis: Redis, queues: Iterable[str] = QUEUES) -> None:
        self.redis = redis
        self.queues = tuple(queues)

    def collect(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily("threadline_queue_jobs", "Jobs waiting on the queue", labels=["queue"])
        age = GaugeMetricFamily(
            "threadline_queue_oldest_job_age_seconds",
            "Age of the job at the head of the queue (0 when it is empty)",
            labels=["queue"],
        )
        try:
            for name, (length, age_s) in zip(self.queues, self._read(), strict=True):
                depth.add_metric([name], length)
                age.add_metric([name], age_s)
        except RedisError:  # a scrape must still answer with the rest
            log.warning("reading the queues for metrics failed", exc_info=True)
            metrics.redis_error("scrape")
            return
        yield depth
        yield age

    def _read(self) -> list[tuple[int, float]]:
        pipe = self.redis.pipeline(transaction=False)
        for name in self.queues:
            pipe.llen(f"rq:queue:{name}")
            pipe.lindex(f"rq:queue:{name}", 0)  # RQ pushes on the right and pops on the left
        answers = pipe.execute()
        heads = [text(head) if head else None for head in answers[1::2]]
        pipe = self.redis.pipeline(transaction=False)
        for head in heads:
            if head:
                pipe.hget(f"rq:job:{head}", "enqueued_at")
            else:
                pipe.echo("")  # keeps the answers in step with the queues
        enqueued = pipe.execute()
        now = time.time()
        return [(int(length), _age(when, now)) for length, when in zip(answers[::2], enqueued, strict=True)]


def _age(enqueued_at: bytes | None, now: float) -> float:
    if not enqueued_at:
        return 0.0
    try:
        return max(0.0, now - datetime.fromisoformat(text(enqueued_at)).timestamp())  # RQ: UTC, with Z
    except ValueError:
        return 0.0


def multiprocess_mode() -> bool:
    return bool(os.environ.get(MULTIPROC_DIR))


def exposition(redis: Redis | None = None) -> bytes:
    """The text exposition format of `scrape_registry(redis)`, read now."""
    return generate_latest(scrape_registry(redis))


def scrape_registry(redis: Redis | None = None) -> Collector:
    """Every process's metrics (this process's alone outside multiprocess mode), and the queues
    when `redis` is given: each collection reads them afresh, so it can be served for good."""
    if not multiprocess_mode() and redis is None:
        return REGISTRY
    registry = CollectorRegistry()
    if multiprocess_mode():
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # untyped upstream
    else:
        registry.register(_Everything())
    if redis is not None:
        registry.register(QueueCollector(redis))
    return registry


class _Everything(Collector):
    """This process's own metrics, for a registry that adds the queues to them."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()
