"""An open-loop HTTP/1.1 load generator on raw asyncio keep-alive connections.

Request i is written at t0 + i/rate whatever happened to the ones before it, and its latency
counts from that scheduled time, so time spent queueing (for a free connection, in the server's
accept queue, behind busy threads) is part of the figure: no coordinated omission. Requests are
bytes built before the clock starts; responses are read by hand (status line, Content-Length or
chunked), because a general client (httpx's async one) saturates near 150 requests/s here and
would measure itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

IDLE_LIMIT_S = 1.0  # drop a connection idle this long: gunicorn closes keep-alives after 2 s
MAX_CONNECTIONS = 2_000  # open-loop means growing the pool when the server is slow; this bounds it
START_DELAY_S = 0.05  # the first request leaves after the pool is open and the loop has settled
TIMEOUT_S = 10.0  # no answer by then counts as an error (Slack gives up after 3 s)
ERRORS = (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError)


@dataclass(frozen=True)
class Outcome:
    latency_s: float  # scheduled send time → last byte of the response (or the failure)
    status: int  # 0: connection error or timeout
    late_s: float  # scheduled send time → request written (generator lag, connecting, pool cap)


@dataclass
class Run:
    rate: float
    outcomes: list[Outcome]
    connections_opened: int
    collections: int = 0  # garbage collections in the generator while its clock ran (should be 0)

    @property
    def sent(self) -> int:
        return len(self.outcomes)

    @property
    def errors(self) -> int:
        return sum(outcome.status != 200 for outcome in self.outcomes)

    def latencies_ms(self) -> list[float]:
        """Latencies of the requests answered 200, sorted."""
        return sorted(o.latency_s * 1000 for o in self.outcomes if o.status == 200)

    def percentile_ms(self, q: float) -> float:
        return percentile(self.latencies_ms(), q)

    def worst(self) -> tuple[float, float]:
        """The slowest answered request: its latency (ms) and when it was due (s into the run)."""
        answered = [(o.latency_s, i) for i, o in enumerate(self.outcomes) if o.status == 200]
        latency, index = max(answered, default=(float("nan"), 0))
        return latency * 1000, index / self.rate

    def late_percentile_ms(self, q: float) -> float:
        return percentile(sorted(o.late_s * 1000 for o in self.outcomes), q)


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (nan when there are none)."""
    if not ordered:
        return float("nan")
    rank = max(1, -(-len(ordered) * q // 100))  # ceil without floats drifting
    return ordered[min(len(ordered), int(rank)) - 1]


def get(host: str, port: int, path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()


def post(host: str, port: int, path: str, body: bytes, headers: Mapping[str, str]) -> bytes:
    """One HTTP/1.1 POST, keep-alive, as raw bytes."""
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    last_used: float = 0.0

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


@dataclass
class _Pool:
    host: str
    port: int
    # Oldest first, so every open connection carries its share: gunicorn ties each connection
    # to the worker process that accepted it, and reusing only the warmest few would load one
    # process and leave the other idle.
    idle: deque[_Connection] = field(default_factory=deque)
    waiters: deque[asyncio.Future[_Connection]] = field(default_factory=deque)
    open_count: int = 0
    opened: int = 0

    async def open(self) -> _Connection:
        self.open_count += 1
        self.opened += 1
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port)
        except BaseException:
            self.open_count -= 1
            raise
        return _Connection(reader, writer)

    async def take(self, now: float) -> _Connection:
        while self.idle:
            connection = self.idle.popleft()
            if now - connection.last_used < IDLE_LIMIT_S:
                return connection
            self.discard(connection)
        if self.open_count < MAX_CONNECTIONS:
            return await self.open()
        waiter: asyncio.Future[_Connection] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        return await waiter

    def give(self, connection: _Connection, now: float) -> None:
        connection.last_used = now
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return
        self.idle.append(connection)

    def discard(self, connection: _Connection) -> None:
        connection.close()
        self.open_count -= 1

    def close(self) -> None:
        for connection in self.idle:
            connection.close()
        self.idle.clear()


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """Read one response; returns its status and whether the connection may be reused."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, _, header_block = head.partition(b"\r\n")
    status = int(status_line.split(b" ", 2)[1])
    headers: dict[bytes, bytes] = {}
    for line in header_block.split(b"\r\n"):
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip().lower()
    if headers.get(b"transfer-encoding") == b"chunked":
        await _read_chunked(reader)
    else:
        await reader.readexactly(int(headers.get(b"content-length", b"0")))
    return status, headers.get(b"connection") != b"close"


async def _read_chunked(reader: asyncio.StreamReader) -> None:
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        await reader.readexactly(size + 2)  # the chunk and its CRLF
        if size == 0:
            return


class _Generator:
    def __init__(self, pool: _Pool, timeout_s: float) -> None:
        self.pool = pool
        self.timeout_s = timeout_s
        self.loop = asyncio.get_running_loop()

    async def one(self, request: bytes, scheduled: float) -> Outcome:
        connection: _Connection | None = None
        late = 0.0
        try:
            async with asyncio.timeout(self.timeout_s):
                connection = await self.pool.take(self.loop.time())
                connection.writer.write(request)
                late = self.loop.time() - scheduled
                status, reusable = await read_response(connection.reader)
        except ERRORS:
            if connection is not None:
                self.pool.discard(connection)
            return Outcome(self.loop.time() - scheduled, 0, late)
        now = self.loop.time()
        if reusable:
            self.pool.give(connection, now)
        else:
            self.pool.discard(connection)
        return Outcome(now - scheduled, status, late)


async def run_open_loop(
    host: str,
    port: int,
    requests: Sequence[bytes],
    rate: float,
    *,
    connections: int = 0,
    prime: bytes | None = None,
    timeout_s: float = TIMEOUT_S,
) -> Run:
    """Send `requests` at `rate` per second on a schedule, opening more connections when all
    are busy. `connections` are opened before the clock starts, each carrying `prime` first:
    gunicorn's gthread worker reads a new connection's first request on one of its threads, so
    a connection opened early and left silent would hold a thread until its first request.
    """
    pool = _Pool(host, port)
    loop = asyncio.get_running_loop()
    if connections:
        if prime is None:
            raise ValueError("connections opened ahead need a request to prime them with")
        await _open_primed(pool, connections, prime, timeout_s)
    generator = _Generator(pool, timeout_s)
    with _no_collection_pauses():
        before = _collections()
        outcomes = await _on_schedule(generator, requests, rate, loop.time() + START_DELAY_S)
        collections = _collections() - before
    pool.close()
    return Run(rate=rate, outcomes=outcomes, connections_opened=pool.opened, collections=collections)


async def _on_schedule(
    generator: _Generator, requests: Sequence[bytes], rate: float, t0: float
) -> list[Outcome]:
    loop = asyncio.get_running_loop()
    tasks: list[asyncio.Task[Outcome]] = []
    for index, request in enumerate(requests):
        scheduled = t0 + index / rate
        delay = scheduled - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(generator.one(request, scheduled)))
    return list(await asyncio.gather(*tasks))


def _collections() -> int:
    return sum(generation["collections"] for generation in gc.get_stats())


@contextlib.contextmanager
def _no_collection_pauses() -> Iterator[None]:
    """No garbage collection while the clock runs: a full collection of this process (its imports
    plus thousands of pending requests) stalled sending and reading for 20-50 ms, which every
    request in flight then counted as the server's time. A run's garbage is a few MB."""
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


async def _open_primed(pool: _Pool, count: int, prime: bytes, timeout_s: float) -> None:
    async def one() -> _Connection:
        connection = await pool.open()
        connection.writer.write(prime)
        status, reusable = await asyncio.wait_for(read_response(connection.reader), timeout_s)
        if status != 200 or not reusable:
            raise RuntimeError(f"priming a connection got {status} (reusable: {reusable})")
        return connection

    # One after another: opened in a burst, most would be accepted by whichever gunicorn
    # worker process woke first, and stay with it.
    opened = [await one() for _ in range(count)]
    now = asyncio.get_running_loop().time()
    for connection in opened:
        pool.give(connection, now)
