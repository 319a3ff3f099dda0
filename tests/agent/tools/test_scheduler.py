import asyncio

import pytest

from agent.tools import ToolScheduler
from agent.tools import accesses as acc
from tests.agent.tools.helpers import DEADLINE_S
from tests.vectors import ids, vectors_for

pytestmark = pytest.mark.anyio
SCHEDULER_VECTORS = vectors_for("ToolScheduler")


class Timeline:
    """Tasks whose completion the test decides; records the order in which they start."""

    def __init__(self) -> None:
        self.scheduler = ToolScheduler()
        self.started: list[str] = []
        self.gates: dict[str, asyncio.Future[str]] = {}
        self.results: dict[str, asyncio.Future[str]] = {}

    def add(self, name: str, accesses) -> None:
        gate = asyncio.get_running_loop().create_future()
        self.gates[name] = gate

        def start() -> asyncio.Future[str]:
            self.started.append(name)
            return gate

        self.results[name] = self.scheduler.add(accesses, start)

    async def apply(self, event: str) -> None:
        kind, name = event.split(":", 1)
        if kind == "resolve":
            self.gates[name].set_result(name)
        else:
            self.gates[name].set_exception(RuntimeError(name))
        # The task's own future settles after the scheduler has rescanned its queue.
        await asyncio.wait([self.results[name]], timeout=DEADLINE_S)
        assert self.results[name].done()

    async def result_order(self) -> list[str]:
        """Tasks the events left open resolve now; then every result, in submission order."""
        for name, gate in self.gates.items():
            if not gate.done():
                await self.apply(f"resolve:{name}")
        order = []
        for name, future in self.results.items():
            try:
                order.append(await future)
            except RuntimeError:
                order.append(f"rejected:{name}")
        return order


@pytest.mark.parametrize("vector", SCHEDULER_VECTORS, ids=ids(SCHEDULER_VECTORS))
async def test_scheduler_vector(vector):
    timeline = Timeline()
    for task in vector["input"]["tasks"]:
        timeline.add(task["name"], task["accesses"])
    observed = [{"after": "add", "started": list(timeline.started)}]
    for event in vector["input"]["events"]:
        await timeline.apply(event)
        observed.append({"after": event, "started": list(timeline.started)})
    expected = vector["expected"]["output"]
    assert observed == expected["timeline"]
    assert await timeline.result_order() == expected["result_order"]


async def test_a_task_without_declarations_runs_alone():
    timeline = Timeline()
    timeline.add("undeclared", None)
    timeline.add("reader", acc.read_file("/x"))
    timeline.add("free", acc.none())
    assert timeline.started == ["undeclared", "free"]
    await timeline.apply("resolve:undeclared")
    assert timeline.started == ["undeclared", "free", "reader"]


async def test_a_later_task_never_overtakes_a_conflicting_queued_one():
    timeline = Timeline()
    timeline.add("writer", acc.write_file("/a"))
    timeline.add("reader-a", acc.read_file("/a"))
    timeline.add("writer-b", acc.write_file("/b"))
    timeline.add("reader-b", acc.read_file("/b"))
    timeline.add("tree", acc.read_tree("/"))
    assert timeline.started == ["writer", "writer-b"]
    await timeline.apply("resolve:writer-b")
    assert timeline.started == ["writer", "writer-b", "reader-b"]
    await timeline.apply("resolve:writer")
    assert timeline.started == ["writer", "writer-b", "reader-b", "reader-a", "tree"]


async def test_a_start_that_fails_synchronously_rejects_and_releases():
    scheduler = ToolScheduler()

    def broken():
        raise RuntimeError("cannot start")

    failed = scheduler.add(acc.everything(), broken)
    later = scheduler.add(acc.everything(), lambda: asyncio.sleep(0, result="ran"))
    with pytest.raises(RuntimeError, match="cannot start"):
        await failed
    assert await asyncio.wait_for(later, DEADLINE_S) == "ran"
    assert scheduler.active_count == 0


async def test_clear_queue_drops_waiting_tasks_without_starting_them():
    timeline = Timeline()
    timeline.add("first", acc.write_file("/a"))
    timeline.add("second", acc.write_file("/a"))
    assert timeline.scheduler.clear_queue() == 1
    assert timeline.results["second"].cancelled()
    await timeline.apply("resolve:first")
    assert timeline.started == ["first"]
