"""Model-step latency, pooled connections vs a new connection per step: `python -m bench.model_pool`.

The fake provider (agent/testing/fake_model.py) holds every new TCP connection CONNECT_DELAY_S
before serving it, standing in for the TCP and TLS handshakes to a distant provider. Each step
is one streamed chat completion run the way a worker runs it: a task on the process's turn loop
(jobs/turn/event_loop.py), through `OpenAICompatibleModel`. Pooled: the worker's pool, bound to
that loop (jobs.runtime.model_connections); unpooled: a client of its own per step, as before.
Prints the median and p90 per step, the connections the provider saw, and the ratio.
"""

from __future__ import annotations

import statistics
import time

from agent.messages import user_message
from agent.model.base import ModelRequest
from agent.model.connections import ConnectionPool
from agent.model.openai import OpenAICompatibleModel
from agent.testing import FakeLLM
from jobs.turn.event_loop import TurnEventLoop

CONNECT_DELAY_S = 0.020  # a TLS 1.3 handshake to a provider ~10 ms away (one round trip + TCP's)
STEPS = 40
WARMUP = 3
REQUEST = ModelRequest(messages=[user_message("what changed in the last commit?")], system="be brief")


def _steps(loop: TurnEventLoop, model: OpenAICompatibleModel) -> list[float]:
    timings = []
    for index in range(WARMUP + STEPS):
        started = time.perf_counter()
        loop.run(model.complete(REQUEST))
        if index >= WARMUP:
            timings.append(time.perf_counter() - started)
    return timings


def _line(name: str, timings: list[float], connections: int) -> float:
    median = statistics.median(timings)
    p90 = statistics.quantiles(timings, n=10)[-1]
    print(f"{name:>9}: median {median * 1000:6.1f} ms  p90 {p90 * 1000:6.1f} ms  {connections} connections")
    return median


def main() -> None:
    loop = TurnEventLoop()
    fake = FakeLLM(connect_delay_s=CONNECT_DELAY_S).start()
    try:
        print(f"{STEPS} streamed steps each, {CONNECT_DELAY_S * 1000:.0f} ms per new connection")
        pooled_model = OpenAICompatibleModel(fake.base_url, "m", pool=ConnectionPool(lambda: loop.loop))
        pooled = _line("pooled", _steps(loop, pooled_model), fake.connections)
        before = fake.connections
        unpooled_model = OpenAICompatibleModel(fake.base_url, "m")
        unpooled = _line("unpooled", _steps(loop, unpooled_model), fake.connections - before)
        print(f"    ratio: unpooled / pooled = {unpooled / pooled:.1f}x")
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
