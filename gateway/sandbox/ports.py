"""A port for a local server the sandbox, the tests or the embedded Redis start."""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10_000  # above the ports services are known by
TRIES = 100
MIN_CANDIDATES = 1000  # fewer ports outside the range: two servers would pick the same too often


def free_port() -> int:
    """A port nothing listens on, outside the range the kernel gives outgoing connections their
    local ports from: a port asked of the kernel (bind to 0) comes from that range, and any
    connection opened before the server binds it may take it meanwhile."""
    low, high = _ephemeral()
    below, above = range(LOWEST, low), range(high + 1, 65536)
    candidates = below if len(below) >= len(above) else above
    tries = TRIES if len(candidates) >= MIN_CANDIDATES else 0
    for port in random.choices(candidates, k=tries):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:  # no room outside that range: the kernel's pick
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ephemeral() -> tuple[int, int]:
    try:
        low, high = map(int, EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default
    return low, high
