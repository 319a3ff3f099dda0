"""METRICS_PORT: where a process with no web server of its own serves its metrics.

`web` answers `GET /metrics` on its own port. The others serve Prometheus' text format on every
address at METRICS_PORT, from a thread of their own (prometheus_client's server): the `worker`
supervisor (the sum over its RQ workers), a worker run alone (`--role turns|delivery`) and
`web --socket`. Which values a registry holds (files or this process's memory) was settled
before prometheus_client was imported (gateway.processes.metrics_dir).
"""

from __future__ import annotations

import socket

from prometheus_client import start_http_server
from prometheus_client.registry import Collector

from jobs.settings import SettingsError


def serve_metrics(port: int, registry: Collector) -> None:
    """Serve `registry` at `port` from a daemon thread; SettingsError (one line) when the port
    is taken or privileged, so the process stops at start as for a bad setting."""
    try:
        start_http_server(port, registry=registry)
    except OSError as error:
        raise _unservable(port, error) from None


def check_metrics_port(port: int) -> None:
    """SettingsError now if `port` could not be served, for a process that serves it only later
    (the worker supervisor, once its workers are forked): it should not start them first."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as prometheus_client's server
        try:
            probe.bind(("0.0.0.0", port))
        except OSError as error:
            raise _unservable(port, error) from None


def _unservable(port: int, error: OSError) -> SettingsError:
    return SettingsError(f"threadline: cannot serve metrics on METRICS_PORT={port}: {error.strerror}")
