"""The `threadline` command: `web`, `worker` and friends, each checking its settings first."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable

from gateway.processes.lifeline import SUPERVISOR_PID
from gateway.processes.metrics_dir import (
    keep_metrics_in_memory,
    prepare_metrics_dir,
    remove_temporary_metrics_dir,
)
from jobs.settings import Settings, SettingsError

WEB_SETTINGS = ("SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN", "REDIS_URL")
SOCKET_SETTINGS = ("SLACK_APP_TOKEN", "SLACK_BOT_TOKEN", "REDIS_URL")
WORKER_SETTINGS = ("SLACK_BOT_TOKEN", "REDIS_URL")  # no LLM_BASE_URL: the demo model answers


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except SettingsError as error:
        print(error, file=sys.stderr)
        return 2


def _web(args: argparse.Namespace) -> int:
    if args.socket:
        keep_metrics_in_memory()  # one process: nothing to add up, nothing left in files
        from gateway.processes.socket_mode import serve_socket

        serve_socket(Settings.load().require(*SOCKET_SETTINGS))
        return 0
    settings = Settings.load().require(*WEB_SETTINGS)
    # Before prometheus_client is imported: gunicorn's workers share it.
    prepare_metrics_dir(f"web-{settings.PORT}")
    from gateway.processes.web import serve

    serve(settings)
    return 0


def _manifest(args: argparse.Namespace) -> int:
    from gateway.manifest import manifest_json

    print(manifest_json(Settings.load(), request_url=args.url, socket=args.socket, name=args.name))
    return 0


def _worker(args: argparse.Namespace) -> int:
    metrics_port = _keep_worker_metrics(args, Settings.load().METRICS_PORT)
    from gateway.processes.worker import supervise, work
    from jobs.turn.tools import check_approval_settings

    settings = check_approval_settings(Settings.load().require(*WORKER_SETTINGS))
    if args.role == "all":
        if args.worker_class == "fork":  # said once here; the children run the one class
            from gateway.processes.logs import configure_logging
            from gateway.processes.worker import FORK_RETIRED

            configure_logging(settings)
            logging.getLogger("gateway.processes.worker").warning(FORK_RETIRED)
        # The children run the one class (whatever THREADLINE_WORKER_CLASS they inherit).
        passthrough = ["--worker-class", "simple"] + (["--burst"] if args.burst else [])
        if args.turn_concurrency is not None:
            passthrough += ["--turn-concurrency", str(args.turn_concurrency)]
        drain_s = settings.WORKER_DRAIN_SECONDS
        return supervise(main, args.turn_workers, passthrough, drain_s=drain_s, metrics_port=metrics_port)
    work(
        settings,
        role=args.role,
        burst=args.burst,
        worker_class=args.worker_class,
        turn_concurrency=args.turn_concurrency,
        metrics_port=metrics_port,
    )
    _exit_without_finalizing()
    return 0


def _keep_worker_metrics(args: argparse.Namespace, metrics_port: int | None) -> int | None:
    """Where this worker process keeps its metric values, settled before prometheus_client is
    imported; the port it serves them on, if it is the one to serve them. A supervisor's RQ
    workers inherit its choice and serve nothing. Values recorded in other processes (the
    supervisor's RQ workers) go to files; else to memory."""
    if args.role != "all" and SUPERVISOR_PID in os.environ:
        return None
    if metrics_port is not None and args.role == "all":
        prepare_metrics_dir(f"worker-{metrics_port}")
    else:
        keep_metrics_in_memory()
    return metrics_port


def _exit_without_finalizing() -> None:
    """A worker whose work has ended (turns handed back, RQ's registry left) exits at once: the
    interpreter's own finalization, garbage collections over every loaded model and schema, takes
    over a second that a deploy or a supervisor stopping its workers would wait for."""
    logging.shutdown()
    remove_temporary_metrics_dir()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _run(args: argparse.Namespace) -> int:
    from gateway.processes.together import run_together
    from jobs.turn.tools import check_approval_settings

    settings = check_approval_settings(
        Settings.load().require(*dict.fromkeys(WEB_SETTINGS + WORKER_SETTINGS))
    )
    me = [sys.executable, "-m", "gateway.processes.cli"]
    # The worker drains its turns (WORKER_DRAIN_SECONDS) before it exits: wait for it a little longer.
    grace_s = settings.WORKER_DRAIN_SECONDS + 1
    return run_together({"web": [*me, "web"], "worker": [*me, "worker"]}, stop_grace_s=grace_s)


def _doctor(args: argparse.Namespace) -> int:
    from gateway.doctor import run_doctor

    return run_doctor(Settings.load())


def _purge(args: argparse.Namespace) -> int:
    from gateway.purge import purge_older_than, purge_thread
    from jobs.redis_connect import RedisTarget, connect

    settings = Settings.load()
    redis = connect(RedisTarget.of(settings))
    if args.thread is not None:
        return purge_thread(redis, settings, args.thread, force=args.force)
    return purge_older_than(redis, settings, args.older_than)


def _status(args: argparse.Namespace) -> int:
    from gateway.status_report import print_status
    from jobs.redis_connect import RedisTarget, connect
    from jobs.usage import prices

    settings = Settings.load()
    redis = connect(RedisTarget.of(settings))
    return print_status(redis, as_json=args.json, thread=args.thread, priced=prices(settings))


def _sandbox(args: argparse.Namespace) -> int:
    from gateway.sandbox.embedded_redis import EmbeddedRedisError
    from gateway.sandbox.run import run_sandbox

    try:
        return run_sandbox(args.port, say=lambda line: print(line, flush=True))
    except EmbeddedRedisError as error:
        print(f"threadline: {error}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="threadline", description="A Slack gateway for a coding agent.")
    commands = parser.add_subparsers(required=True, metavar="command")
    web = commands.add_parser("web", help="serve POST /slack/events on $PORT (or Socket Mode)")
    web.add_argument("--socket", action="store_true", help="connect over Socket Mode (SLACK_APP_TOKEN)")
    web.set_defaults(run=_web)
    worker = commands.add_parser("worker", help="run RQ workers for the turns and slack queues")
    worker.add_argument("--burst", action="store_true", help="exit when the queues are empty")
    worker.add_argument(
        "--worker-class",
        choices=("fork", "simple"),
        default=os.environ.get("THREADLINE_WORKER_CLASS", "simple"),
        help="simple (the one class); fork is retired and runs it too, with a warning",
    )
    worker.add_argument(
        "--turn-workers",
        type=int,
        default=int(os.environ.get("THREADLINE_TURN_WORKERS", "1")),
        help="turn workers beside the delivery worker (default 1)",
    )
    worker.add_argument(
        "--turn-concurrency",
        type=int,
        default=None,
        metavar="N",
        help="turns each turn worker runs at once (default: TURN_CONCURRENCY, 16)",
    )
    worker.add_argument(
        "--role",
        choices=("all", "turns", "delivery"),
        default="all",
        help="all (default): a delivery worker and the turn workers, as child processes",
    )
    worker.set_defaults(run=_worker)
    run = commands.add_parser("run", help="run web and worker together in the foreground")
    run.set_defaults(run=_run)
    manifest = commands.add_parser("manifest", help="print the Slack app manifest (JSON)")
    manifest.add_argument("--url", default=None, help="public base URL of the web process (HTTP mode)")
    manifest.add_argument("--socket", action="store_true", help="a manifest for Socket Mode")
    manifest.add_argument("--name", default="threadline", help="the app's name in Slack")
    manifest.set_defaults(run=_manifest)
    doctor = commands.add_parser("doctor", help="check Redis, the Slack token, the model and the workspace")
    doctor.set_defaults(run=_doctor)
    purge = commands.add_parser("purge", help="remove sessions' Redis keys and workspaces now")
    which = purge.add_mutually_exclusive_group(required=True)
    which.add_argument("--thread", metavar="LINK", help="every session of this Slack thread link")
    which.add_argument("--older-than", type=float, metavar="DAYS", help="every session untouched this long")
    purge.add_argument("--force", action="store_true", help="with --thread: remove a parked session too")
    purge.set_defaults(run=_purge)
    status = commands.add_parser("status", help="sessions, workers and queues at a glance, from Redis")
    status.add_argument("--json", action="store_true", help="the same, as JSON for scripts")
    status.add_argument("--thread", metavar="LINK", help="one Slack thread's sessions in detail")
    status.set_defaults(run=_status)
    sandbox = commands.add_parser(
        "sandbox", help="everything on this machine, with Slack played by a local page (prints its URL)"
    )
    sandbox.add_argument("--port", type=int, default=None, help="port of the sandbox page (default 3001)")
    sandbox.set_defaults(run=_sandbox)
    return parser


if __name__ == "__main__":
    sys.exit(main())
