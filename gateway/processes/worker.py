"""The `worker` process: RQ's own workers, one on the `slack` queue and N on `turns`.

Deliveries get a worker of their own: progress cards, answers and notices of other threads must
not wait behind a turn. `threadline worker` supervises one delivery worker and `--turn-workers`
turn workers as child processes, each turn worker running up to `--turn-concurrency` turns at
once (gateway.processes.concurrent_worker); scale out by running more `worker` processes.

It lives at the top layer because it runs the jobs of every layer: turns and compaction (jobs/)
and deliveries to Slack (gateway.delivery). Their modules, the tool schemas and httpx's transport
are loaded here once, and every job of the process reuses them.
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import threading
import time
from collections.abc import Callable

from redis.exceptions import ConnectionError as RedisConnectionError

import gateway.delivery.job
import jobs.compaction_job
import jobs.turn.runner
from gateway.processes.concurrent_worker import ConcurrentWorker
from gateway.processes.cpu_priority import lower_priority_to
from gateway.processes.lifeline import SUPERVISOR_PID, die_with_parent
from gateway.processes.logs import configure_logging
from gateway.processes.metrics_port import check_metrics_port, serve_metrics
from gateway.processes.together import Command, run_together
from jobs import due_jobs, janitor, metrics, retention, runtime
from jobs.metrics_export import scrape_registry
from jobs.queues import SERIALIZER, SLACK_QUEUE, TURNS_QUEUE, queue
from jobs.redis_connect import RedisTarget, connect
from jobs.settings import Settings
from jobs.storage import publish_storage
from jobs.turn.host import host

PRELOADED_JOB_MODULES = (jobs.turn.runner, jobs.compaction_job, gateway.delivery.job)
# httpx loads its async transport stack lazily on the first request: loaded at start instead.
LAZY_TRANSPORT_MODULES = ("httpcore", "h11", "anyio._backends._asyncio")

log = logging.getLogger(__name__)


Chore = tuple[float, Callable[[], object]]  # how often, and the work


def _every(every_s: float, stop: threading.Event, chore: str, work: Callable[[], object]) -> None:
    """`work()` every `every_s` until `stop`, first at once. Each worker process runs these
    beside RQ's loop (the shared ones take a lock in Redis), so no extra process is needed; a
    failure (Redis away for a moment) is logged and the next round tries again."""
    while True:
        try:
            work()
        except Exception as error:
            metrics.redis_error_if(error, chore)
            log.warning("%s failed", chore, exc_info=True)
        if stop.wait(every_s):
            return


def _chores(target: RedisTarget, settings: Settings, role: str) -> dict[str, Chore]:
    """What each worker process does beside its jobs: its name, how often, and the work."""
    every_s = settings.JANITOR_INTERVAL_SECONDS
    janitor_redis, due_redis, retention_redis = connect(target), connect(target), connect(target)
    due_queues = [queue(due_redis, name) for name in (SLACK_QUEUE, TURNS_QUEUE)]

    def release_due() -> None:  # moves due `enqueue_at` jobs to their queues (see jobs.due_jobs)
        for each in due_queues:
            due_jobs.release_due_jobs(due_redis, each)

    chores: dict[str, Chore] = {
        "janitor": (every_s, lambda: janitor.sweep(janitor_redis, every_s)),
        "due_jobs": (due_jobs.TICK_S, release_due),
        # a thread of its own: removing large workspaces must not hold up finding dead workers
        "retention": (every_s, lambda: retention.sweep(retention_redis, settings)),
    }
    if role == "turns":  # which AGENT_WORKDIR storage it sees, for `threadline doctor` (jobs.storage)
        storage_redis = connect(target)
        chores["storage"] = (
            every_s,
            lambda: publish_storage(storage_redis, settings.AGENT_WORKDIR, ttl_s=int(3 * every_s) + 1),
        )
    return chores


# `--worker-class` / THREADLINE_WORKER_CLASS are kept for deployments that set them: `simple`
# is the one class; `fork` (RQ's forking Worker, retired) runs it too, with a warning.
WORKER_CLASSES = ("simple", "fork")
FORK_RETIRED = (
    "--worker-class fork is retired: this worker runs the concurrent worker (every job on the "
    "process's one event loop); --turn-concurrency 1 runs one turn per process"
)


ROLE_QUEUES = {"delivery": (SLACK_QUEUE,), "turns": (TURNS_QUEUE,)}


def supervise(
    main: Callable[[list[str]], int],
    turn_workers: int,
    passthrough: list[str],
    *,
    drain_s: float,
    metrics_port: int | None = None,
) -> int:
    """Run the delivery worker and the turn workers as children; stop all when one stops.
    Stopping gives them `drain_s` to hand their turns back (a second SIGTERM: at once).
    With `metrics_port`, serve the children's metrics there: the sum of what each wrote to the
    directory `gateway.processes.metrics_dir` prepared (multiprocess mode). Each child is forked
    and runs `main` (the CLI's) on its worker's arguments."""

    def role(name: str) -> Command:
        return lambda: main(["worker", *passthrough, "--role", name])

    commands = {"delivery": role("delivery")}
    commands.update({f"turns-{index}": role("turns") for index in range(turn_workers)})
    env = {**os.environ, SUPERVISOR_PID: str(os.getpid())}
    started = None
    if metrics_port is not None:
        check_metrics_port(metrics_port)
        started = lambda: serve_metrics(metrics_port, scrape_registry())  # noqa: E731
    return run_together(commands, env=env, stop_grace_s=drain_s, started=started)


def work(
    settings: Settings,
    *,
    role: str,
    burst: bool = False,
    worker_class: str = "simple",
    turn_concurrency: int | None = None,
    metrics_port: int | None = None,
) -> None:
    """One RQ worker of `role` until it is asked to stop; with `metrics_port` (a worker run
    alone), it serves its own metrics there."""
    supervisor = int(os.environ[SUPERVISOR_PID]) if SUPERVISOR_PID in os.environ else None
    if supervisor is not None:
        die_with_parent(supervisor)
    lower_priority_to(settings.WORKER_NICENESS, supervisor_pid=supervisor)
    configure_logging(settings)
    if metrics_port is not None:
        serve_metrics(metrics_port, scrape_registry())
    # RQ blocks on BLPOP for minutes, so this connection must not have a short socket timeout.
    runtime.settings()  # parsed once here, inherited by every forked job
    if not settings.LLM_BASE_URL:
        log.warning("LLM_BASE_URL is not set: turns use the built-in demo model (scripted)")
    if settings.approval_waived_tools:
        waived = ", ".join(sorted(settings.approval_waived_tools))
        log.warning("APPROVAL_WAIVED_TOOLS: %s run without a person's approval", waived)
    runtime.build_model(settings)
    jobs.turn.runner.tool_setup()
    for name in LAZY_TRANSPORT_MODULES:
        importlib.import_module(name)
    target = RedisTarget.of(settings)
    redis = connect(target, socket_timeout_s=None)
    queues = [queue(redis, name) for name in ROLE_QUEUES[role]]
    stop = threading.Event()
    for chore, (every_s, work) in _chores(target, settings, role).items():
        threading.Thread(target=_every, args=(every_s, stop, chore, work), name=chore, daemon=True).start()
    if worker_class == "fork":
        log.warning(FORK_RETIRED)
    if role == "turns":
        concurrency = turn_concurrency or settings.TURN_CONCURRENCY
    else:
        concurrency = settings.DELIVERY_CONCURRENCY
    host().role = role
    # What is loaded by now lives as long as the process: out of the collector's full walks,
    # which ran on the turns' loop and stalled it 0.1-0.2 s each under 200 turns (bench.concurrency).
    gc.freeze()
    names = ", ".join(each.name for each in queues)
    log.info("%s worker started (pid %d) on %s, %d at once", role, os.getpid(), names, concurrency)
    try:
        work_through_outages(
            lambda: ConcurrentWorker(
                queues, connection=redis, serializer=SERIALIZER, concurrency=concurrency
            ),
            burst=burst,
        )
    finally:
        stop.set()
        log.info("%s worker stopped (pid %d)", role, os.getpid())


REDIS_WAIT_CAP_S = 5.0


def work_through_outages(new_worker: Callable[[], ConcurrentWorker], *, burst: bool = False) -> None:
    """RQ's work loop until it is asked to stop (SIGTERM, SIGINT) or, in burst mode, runs dry.

    RQ rides out a lost connection only while it waits for a job: a Redis restart or failover
    that lands on any other step (marking itself idle, a heartbeat) ends its loop, and its
    teardown may raise as well. That must not take the worker, and with it every other worker
    of this `worker` process, down: it starts a fresh RQ worker once Redis answers.
    """
    while True:
        worker = started_once_redis_answers(new_worker)
        try:
            worker.work(burst=burst, with_scheduler=False)
        except RedisConnectionError:
            metrics.redis_error("rq_worker")
            log.warning("Redis went away while RQ's worker stopped", exc_info=True)
        if burst or worker.stopping:
            return
        log.warning("RQ's work loop ended without a stop request; working again once Redis answers")


def started_once_redis_answers(new_worker: Callable[[], ConcurrentWorker]) -> ConcurrentWorker:
    """`new_worker()`, tried until Redis answers: RQ names its connection as the worker is made."""
    pause = 0.1
    while True:
        try:
            return new_worker()
        except RedisConnectionError as error:
            metrics.redis_error("rq_worker")
            log.warning("Redis does not answer (%s): waiting for Redis to start RQ's worker", error)
            time.sleep(pause)
            pause = min(pause * 2, REDIS_WAIT_CAP_S)
