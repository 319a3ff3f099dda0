"""Shared fixtures: a real Redis (flushed around each test) and the HTTP fakes."""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from redis import Redis

from agent.testing import FakeLLM
from gateway.sandbox.fake_forge import FakeForge
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import BOT_TOKEN, Stack
from tests.durable_redis import DurableRedis
from tests.sandboxing import open_for_the_sandbox
from tests.unattended import UNATTENDED

# The scenarios written before answers streamed read "the answer is in the thread" as "the turn
# is over", which a streamed answer is not yet; they pin the card-and-post path, and the
# streaming scenarios (tests/e2e/test_streaming.py, tests/gateway/delivery/test_streams.py)
# turn streaming on themselves. Every stack a test starts inherits this environment.
os.environ.setdefault("SLACK_STREAMING", "off")

# Never the developer's REDIS_URL: these tests flush the database they are given.
REQUESTED_REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


CLAIM_KEY = "threadline-tests:claim:db{}"  # in database 0: the databases handed out are flushed
CLAIM_TTL_S = 4 * 3600  # a run killed before it let go blocks its database no longer than this


def _database_nobody_else_uses(url: str) -> str:
    """The requested database, or the highest-numbered one free, claimed for this process.

    Skips databases other clients are connected to: a worker left running by an earlier,
    killed test run keeps blocking on `turns` in the database it was given, even after a
    flush, and would steal this run's jobs. Two runs (or two pytest-xdist workers) starting
    at once would both see the same database free, so each takes its database with a SET NX
    claim that it gives back at exit; a claim whose process is gone is taken over.
    """
    client = Redis.from_url(url)
    try:
        mine = client.client_id()
        busy = {int(c["db"]) for c in client.client_list() if int(c["id"]) != mine}
        requested = int(client.connection_pool.connection_kwargs.get("db", 0))
    except Exception:  # no server yet: the `redis` fixture says so plainly
        client.close()
        return url
    claims = Redis.from_url(urlsplit(url)._replace(path="/0").geturl())
    for db in dict.fromkeys((requested, *range(15, 0, -1))):
        if db not in busy and _claim(claims, db):
            if db != requested:
                print(f"\nRedis database {requested} is taken (another run, or a stray worker): using {db}")
            return urlsplit(url)._replace(path=f"/{db}").geturl()
    raise pytest.UsageError(f"not enough databases of {url} without other clients; set TEST_REDIS_URL")


def _claim(claims: Redis, db: int) -> bool:
    key, me = CLAIM_KEY.format(db), str(os.getpid())
    holder = claims.get(key)
    if holder is not None and _alive(int(holder)):
        return False
    if holder is not None:
        claims.delete(key)  # its process is gone: the claim is stale
    if not claims.set(key, me, nx=True, ex=CLAIM_TTL_S):
        return False
    atexit.register(lambda: claims.get(key) == me.encode() and claims.delete(key))
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


TEST_REDIS_URL = _database_nobody_else_uses(REQUESTED_REDIS_URL)


@pytest.fixture
def tmp_path(tmp_path: Path) -> Path:
    """pytest's tmp_path, which the shell sandbox's uid can reach (see tests/sandboxing.py)."""
    return open_for_the_sandbox(tmp_path)


@pytest.fixture
def redis_url() -> str:
    return TEST_REDIS_URL


@pytest.fixture
def redis(redis_url: str) -> Iterator[Redis]:
    client = Redis.from_url(redis_url)
    try:
        client.ping()
    except Exception as error:  # pragma: no cover - environment problem, said plainly
        pytest.fail(f"no Redis at TEST_REDIS_URL={redis_url} ({error}); run `make test` or .ci/run")
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def durable_redis_url(tmp_path: Path) -> Iterator[str]:
    """A Redis of the test's own, set up as production should run it (append-only, no eviction)."""
    (tmp_path / "durable-redis").mkdir()
    durable = DurableRedis(tmp_path / "durable-redis").start()
    try:
        yield durable.url
    finally:
        durable.stop()


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(bot_token=BOT_TOKEN).start()
    yield fake
    fake.stop()


FORGE_TOKEN = "ghs_forgetoken0123456789abcdefABCDEF"
LOG_TAIL_CHARS = 6_000  # of each process's log, shown under a failed test


@pytest.fixture
def forge(tmp_path: Path) -> Iterator[FakeForge]:
    """A fake GitHub over HTTP holding `acme/app` (README.md, app.py, src/app.py on `main`), which
    FORGE_TOKEN may push to and open pull requests on."""
    fake = FakeForge(tmp_path).start()
    fake.add_repo(
        "acme/app", {"README.md": "hello\n", "app.py": "print('bug')\n", "src/app.py": "print('v1')\n"}
    )
    fake.grant(FORGE_TOKEN, "contents", "pull_requests")
    yield fake
    fake.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """A failed test that ran real processes shows the end of each one's log: a failure under
    CI's load is seldom repeated at will, and its processes' logs are gone with its tmp_path."""
    report: pytest.TestReport = yield
    tmp_path = getattr(item, "funcargs", {}).get("tmp_path")
    if report.failed and call.when == "call" and isinstance(tmp_path, Path):
        for log in sorted((tmp_path / "logs").glob("*.log")):
            tail = log.read_text(errors="replace")[-LOG_TAIL_CHARS:]
            report.sections.append((f"threadline {log.stem}: the last {LOG_TAIL_CHARS:,} characters", tail))
    return report


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    fake = FakeLLM().start()
    yield fake
    fake.stop()


@pytest.fixture
def stack(tmp_path: Path, redis, redis_url: str, fake_slack: FakeSlack, fake_llm: FakeLLM) -> Iterator[Stack]:
    running = Stack(tmp_path, redis_url, fake_slack.api_url, fake_llm.base_url, **UNATTENDED).start()
    yield running
    running.stop()


StackFactory = Callable[..., Stack]


@pytest.fixture
def make_stack(
    tmp_path: Path, redis, redis_url: str, fake_slack: FakeSlack, fake_llm: FakeLLM
) -> Iterator[StackFactory]:
    """A stack with settings of the test's choosing: make_stack(workers=2, SLACK_OPERATORS="U9").

    Like the shared `stack` fixture, no tool asks for approval unless the test sets APPROVAL_TOOLS,
    or APPROVAL_WAIVED_TOOLS="" (shell and http_get then ask, as they do in production).
    """
    started: list[Stack] = []

    def make(*, workers: int = 1, socket_mode: object = None, **env: str) -> Stack:
        env = {**UNATTENDED, **env}
        running = Stack(tmp_path, redis_url, fake_slack.api_url, fake_llm.base_url, **env)
        started.append(running)
        return running.start(workers=workers, socket_mode=socket_mode)

    yield make
    for running in started:
        running.stop()


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The real web process and no workers, shared by a module's tests: for requests that must be
    refused (or only recorded) before anything runs."""
    slack, llm = FakeSlack(bot_token=BOT_TOKEN).start(), FakeLLM().start()
    stack = Stack(tmp_path_factory.mktemp("web"), TEST_REDIS_URL, slack.api_url, llm.base_url)
    stack.start(workers=0)
    yield stack
    stack.stop()
    slack.stop()
    llm.stop()
