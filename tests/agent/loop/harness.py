"""A turn on the real loop, tools and model client (over HTTP to the fake provider), with an
in-memory sink at the seam where production uses Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.fold import HistoryFold, fold
from agent.loop.parking import approval_check
from agent.loop.ports import ParkedCall, ParkedStep, TurnEvent, TurnOutcome
from agent.loop.turn_loop import Loop, LoopConfig
from agent.messages import Message, user_message
from agent.model.openai import OpenAICompatibleModel
from agent.projection.report import ProjectionRepair
from agent.tools.executor import ToolExecutor
from agent.tools.policy import AllowAll, PermissionPolicy
from agent.tools.registry import default_registry, openai_tool_declarations
from agent.wire import AppendMessage, record_to_json
from tests.sandboxing import give_to_sandbox


@dataclass
class MemorySink:
    records: list[dict[str, Any]] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)
    inbox: list[Message] = field(default_factory=list)
    parked: list[tuple[str, list[ParkedCall]]] = field(default_factory=list)
    checkpoints: list[tuple[int, str]] = field(default_factory=list)
    repairs: list[tuple[int, ProjectionRepair]] = field(default_factory=list)

    writes: list[list[str]] = field(default_factory=list)  # each write's keys, as the loop made them

    async def record(self, record: BaseModel, once_key: str) -> str:
        return (await self.record_all([(record, once_key)]))[0]

    async def record_all(self, records: Sequence[tuple[BaseModel, str]]) -> list[str]:
        self.writes.append([once_key for _, once_key in records])
        return [self.record_now(record, once_key) for record, once_key in records]

    def record_now(self, record: BaseModel, once_key: str) -> str:
        if once_key in self.keys:
            return self.keys[once_key]
        record_id = f"{len(self.records) + 1}-0"
        self.records.append({**record_to_json(record), "id": record_id})
        self.keys[once_key] = record_id
        return record_id

    def append_user(self, text: str) -> None:
        self.record_now(AppendMessage(message=user_message(text)), f"user:{len(self.records)}")

    async def take_input(self) -> list[tuple[Message, str]]:
        taken = []
        for message in self.inbox:
            record_id = self.record_now(AppendMessage(message=message), f"input:{id(message)}")
            taken.append((message, record_id))
        self.inbox = []
        return taken

    async def compacted(self, history: list[Message], through: str) -> None:
        self.checkpoints.append((len(history), through))

    async def park(self, step_uuid: str, calls: list[ParkedCall]) -> None:
        self.parked.append((step_uuid, calls))

    async def repaired(self, step: int, repair: ProjectionRepair) -> None:
        self.repairs.append((step, repair))

    def types(self) -> list[str]:
        return [
            r["event"]["type"] if r["type"] == "context.append_loop_event" else r["type"]
            for r in self.records
        ]

    def history(self) -> list[Message]:
        return fold(self.records)


@dataclass
class Heard:
    events: list[TurnEvent] = field(default_factory=list)

    def report(self, event: TurnEvent) -> None:
        self.events.append(event)


def run_turn(
    sink: MemorySink,
    base_url: str,
    workspace: Path,
    *,
    config: LoopConfig | None = None,
    policy: PermissionPolicy | None = None,
    parked: ParkedStep | None = None,
    turn_id: str = "t1",
    reporter: Heard | None = None,
    during: Any = None,
    model: Any = None,
    live: Any = None,
    settle: Any = None,
) -> TurnOutcome:
    """`during(loop)` runs beside the turn; `settle()` is awaited after it, on its event loop."""
    registry = default_registry()
    policy = policy or AllowAll()
    give_to_sandbox(workspace)  # the shell runs sandboxed, as the sandbox's uid when we are root

    def executor(approver: Any) -> ToolExecutor:
        return ToolExecutor(
            registry, workspace=workspace, policy=policy, approver=approver, abort_grace_ms=300
        )

    loop = Loop(
        model=model or OpenAICompatibleModel(base_url, "fake-model"),
        executor_factory=executor,
        sink=sink,
        folder=HistoryFold.from_records(sink.records),
        system_prompt="test system prompt",
        tool_declarations=openai_tool_declarations(registry),
        needs_approval=approval_check(registry, workspace, policy),
        config=config or LoopConfig(),
        reporter=reporter,
        live=live,
    )

    async def main() -> TurnOutcome:
        turn = asyncio.ensure_future(loop.run_turn(turn_id, parked))
        if during is not None:
            await during(loop)
        outcome = await turn
        if settle is not None:
            await settle()
        return outcome

    return asyncio.run(main())
