"""Model-step latency by how the worker connects to the provider: `python -m bench.model_pool`.

Each step is one streamed chat completion run the way a worker runs it: a task on the process's
turn loop (jobs/turn/host.py), through `OpenAICompatibleModel`.

1. Plain HTTP, pooled vs a new connection per step. The fake provider
   (agent/testing/fake_model.py) holds every new TCP connection CONNECT_DELAY_S before serving
   it, standing in for the TCP and TLS handshakes to a distant provider. Pooled: the worker's
   pool, bound to that loop (jobs.runtime.model_connections); unpooled: a client per step.
2. Over TLS, HTTP/1.1 vs HTTP/2 (bench/tls_provider.py: hypercorn offering both by ALPN, a
   real handshake on this machine, and the first request on each new connection held
   CONNECT_DELAY_S as above): steps one after another, then
   CONCURRENT_TURNS turns at once on one loop (a turn worker's TURN_CONCURRENCY), each taking
   its steps in turn. It runs in a child process that trusts the provider's certificate
   through SSL_CERT_FILE, as an operator would trust a private CA; its CPU is the client's alone.

Prints the median and p90 per step, the connections the provider saw, the HTTP version it
served, the client's CPU per step, and the ratios.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.messages import user_message
from agent.model.base import ModelRequest
from agent.model.connections import ConnectionPool
from agent.model.openai import OpenAICompatibleModel
from agent.testing import FakeLLM
from bench.tls_provider import TLSProvider
from jobs.turn.host import TurnHost

CONNECT_DELAY_S = 0.020  # a TLS 1.3 handshake to a provider ~10 ms away (one round trip + TCP's)
STEPS = 40
WARMUP = 3
CONCURRENT_TURNS = 8  # TURN_CONCURRENCY's default
STEPS_PER_TURN = 10
REQUEST = ModelRequest(messages=[user_message("what changed in the last commit?")], system="be brief")

# name, pooled, http2: the ways a worker could connect over TLS.
TLS_MODES = (
    ("HTTP/1.1, new connection per step", False, False),
    ("HTTP/1.1, pooled", True, False),
    ("HTTP/2, pooled", True, True),
)


def _steps(loop: TurnHost, model: OpenAICompatibleModel) -> list[float]:
    timings = []
    for index in range(WARMUP + STEPS):
        started = time.perf_counter()
        loop.submit(model.complete(REQUEST)).result()
        if index >= WARMUP:
            timings.append(time.perf_counter() - started)
    return timings


def _concurrent_steps(loop: TurnHost, model: OpenAICompatibleModel) -> list[float]:
    async def turn() -> list[float]:
        timings = []
        for _ in range(STEPS_PER_TURN):
            started = time.perf_counter()
            await model.complete(REQUEST)
            timings.append(time.perf_counter() - started)
        return timings

    async def turns() -> list[list[float]]:
        return await asyncio.gather(*(turn() for _ in range(CONCURRENT_TURNS)))

    return [timing for one in loop.submit(turns()).result() for timing in one]


def _line(name: str, timings: list[float], connections: int, extra: str = "") -> float:
    median = statistics.median(timings)
    p90 = statistics.quantiles(timings, n=10)[-1]
    print(
        f"{name:>36}: median {median * 1000:6.1f} ms  p90 {p90 * 1000:6.1f} ms"
        f"  {connections:>3} connections{extra}"
    )
    return median


def plain_http() -> None:
    loop = TurnHost()
    fake = FakeLLM(connect_delay_s=CONNECT_DELAY_S).start()
    try:
        print(f"plain HTTP: {STEPS} streamed steps each, {CONNECT_DELAY_S * 1000:.0f} ms per new connection")
        pooled_model = OpenAICompatibleModel(fake.base_url, "m", pool=ConnectionPool(lambda: loop.loop))
        pooled = _line("pooled", _steps(loop, pooled_model), fake.connections)
        before = fake.connections
        unpooled_model = OpenAICompatibleModel(fake.base_url, "m")
        unpooled = _line("unpooled", _steps(loop, unpooled_model), fake.connections - before)
        print(f"{'ratio':>36}: unpooled / pooled = {unpooled / pooled:.1f}x")
    finally:
        fake.stop()


def over_tls(base_url: str) -> dict[str, Any]:
    """The child's side: every TLS mode, sequential then concurrent; timings and CPU as JSON."""
    loop = TurnHost()
    figures: dict[str, Any] = {}
    for name, pooled, http2 in TLS_MODES:
        pool = ConnectionPool(lambda: loop.loop) if pooled else ConnectionPool()
        model = OpenAICompatibleModel(base_url, "m", pool=pool, http2=http2)
        runs: dict[str, Callable[[TurnHost, OpenAICompatibleModel], list[float]]] = {
            "sequential": _steps, "concurrent": _concurrent_steps
        }  # fmt: skip
        for shape, run in runs.items():
            cpu = time.process_time()
            timings = run(loop, model)
            cpu_ms = (time.process_time() - cpu) * 1000 / len(timings)
            figures[f"{name}|{shape}"] = {"timings": timings, "cpu_ms": cpu_ms, "stats": _stats(base_url)}
    return figures


def _stats(base_url: str) -> dict[str, Any]:
    import httpx  # the child trusts the provider through SSL_CERT_FILE, set before it started

    with httpx.Client() as client:
        return dict(client.get(f"{base_url}/stats").json())


def tls() -> None:
    with tempfile.TemporaryDirectory() as directory:
        provider = TLSProvider(Path(directory), CONNECT_DELAY_S).start()
        try:
            env = {**os.environ, "SSL_CERT_FILE": str(provider.cert)}
            command = [sys.executable, "-m", "bench.model_pool", "--over-tls", provider.base_url]
            output = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
        finally:
            provider.stop()
    figures = json.loads(output)
    delay_ms = CONNECT_DELAY_S * 1000
    print(f"\nover TLS (hypercorn, ALPN h2 or http/1.1, {delay_ms:.0f} ms more per new connection):")
    print(f"{STEPS} steps one after another,", end=" ")
    print(f"then {CONCURRENT_TURNS} turns at once on one loop, {STEPS_PER_TURN} steps each")
    for shape in ("sequential", "concurrent"):
        medians = {}
        for name, _, _ in TLS_MODES:
            figure, seen = figures[f"{name}|{shape}"], _seen(figures, name, shape)
            extra = f"  CPU {figure['cpu_ms']:.2f} ms/step  served as {seen['versions']}"
            medians[name] = _line(f"{shape}, {name}", figure["timings"], seen["connections"], extra)
        h1, h2 = medians["HTTP/1.1, pooled"], medians["HTTP/2, pooled"]
        fresh = medians["HTTP/1.1, new connection per step"]
        ratios = f"HTTP/2 / HTTP/1.1 pooled = {h2 / h1:.2f}; new per step / pooled = {fresh / h1:.1f}x"
        print(f"{'ratios':>36}: {ratios}")


def _seen(figures: dict[str, Any], name: str, shape: str) -> dict[str, Any]:
    """What the provider saw during this run: its cumulative stats minus those before it."""
    keys = list(figures)
    index = keys.index(f"{name}|{shape}")
    now = figures[keys[index]]["stats"]
    before = figures[keys[index - 1]]["stats"] if index else {"connections": 0, "versions": {}}
    versions = {v: n - before["versions"].get(v, 0) for v, n in now["versions"].items()}
    return {
        "connections": now["connections"] - before["connections"],
        "versions": ", ".join(f"HTTP/{v} ×{n}" for v, n in versions.items() if n),
    }


def main() -> None:
    if sys.argv[1:2] == ["--over-tls"]:
        print(json.dumps(over_tls(sys.argv[2])))
        return
    plain_http()
    tls()


if __name__ == "__main__":
    main()
