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
from datetime import UTC, datetime

from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from redis import Redis
from redis.exceptions import RedisError
from rq.job import Job

from jobs import metrics
from jobs.queues import SERIALIZER, SLACK_QUEUE, TURNS_QUEUE, queue

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
        """Each queue's length and the age of its head job, through RQ's own API."""
        queues = [queue(self.redis, name) for name in self.queues]
        heads = [next(iter(each.get_job_ids(0, 1)), None) for each in queues]
        enqueued = iter(Job.fetch_many([head for head in heads if head], self.redis, serializer=SERIALIZER))
        now = time.time()
        figures = []
        for each, head in zip(queues, heads, strict=True):
            job = next(enqueued) if head else None
            figures.append((each.count, _age(job.enqueued_at if job else None, now)))
        return figures


def _age(enqueued_at: datetime | None, now: float) -> float:
    if enqueued_at is None:
        return 0.0
    when = enqueued_at if enqueued_at.tzinfo else enqueued_at.replace(tzinfo=UTC)  # RQ's are UTC
    return max(0.0, now - when.timestamp())


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
