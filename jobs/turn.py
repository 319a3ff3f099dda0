"""The turn job (queue `turns`): lease the session, run the loop, tell the thread how it ended."""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from rq import get_current_job
from rq.timeouts import JobTimeoutException

from agent.fold import Folder
from agent.loop import Loop, LoopConfig
from agent.messages import is_real_user_input
from agent.model.base import ChatModel
from agent.prompts import system_prompt
from agent.tools.executor import ToolExecutor
from agent.tools.policy import Approved, Approver, AskForNamedTools, Rejected
from agent.tools.registry import ToolRegistry, default_registry, openai_tool_declarations
from agent.turn_io import ParkedStep, TurnOutcome
from agent.turn_parking import approval_check
from agent.wire import TurnCancel, TurnEnded, TurnPrompt
from jobs import runtime
from jobs.approvals import ApprovalStore
from jobs.control import cancel_flag_key, cancel_requested_by
from jobs.history import load_folder
from jobs.keys import SessionKey
from jobs.lease import Lease, LeaseLost
from jobs.notices import AnswerNotice, CancelledNotice, ErrorNotice, InfoNotice, Notice
from jobs.progress import ProgressReporter
from jobs.queues import clear_turn_flag, schedule_delivery, schedule_turn
from jobs.sessions import State, set_state
from jobs.settings import Settings
from jobs.store import SessionStore
from jobs.turn_sink import RedisTurnSink
from jobs.workspace import WorkspaceError, ensure_workspace

log = logging.getLogger(__name__)

APOLOGY = "Sorry, I could not finish this turn: {reason}"
TIMED_OUT = "This turn hit its time limit ({minutes} min) and was stopped. `!resume` continues it."
END_STATES: dict[str, State] = {
    "completed": "idle",
    "cancelled": "cancelled",
    "failed": "failed",
    "timed_out": "failed",
    "awaiting_approval": "awaiting_approval",
}
CARD_STATES = {"completed": "done", "cancelled": "cancelled", "failed": "failed", "timed_out": "timed_out"}


@dataclass(frozen=True)
class ToolSetup:
    registry: ToolRegistry
    declarations: list[dict[str, Any]]
    system_prompt: str


@cache
def tool_setup() -> ToolSetup:
    """Built once per process (~80 ms of schema checks); the worker builds it before forking."""
    registry = default_registry()
    return ToolSetup(registry, openai_tool_declarations(registry), system_prompt(registry.names))


def run_turn(session_key: str) -> str:
    """RQ entry point. Returns what happened, for RQ's job record and the logs."""
    key = SessionKey.parse(session_key)
    redis = runtime.redis_client()
    clear_turn_flag(redis, key)
    store = SessionStore(redis, key)
    lease = Lease.acquire(store, owner="turn", ttl_ms=int(runtime.settings().LEASE_TTL_SECONDS * 1000))
    if lease is None:
        return "busy: another turn holds the session and takes this input"
    with lease:
        try:
            outcome = TurnJob(store, runtime.settings(), runtime.build_model(runtime.settings()), lease).run()
        except LeaseLost:
            log.error("turn of %s stopped: its lease was lost to another worker", key)
            return "lease lost"
        if not lease.release_if_idle():
            schedule_turn(redis, key, turn_timeout_s=runtime.settings().TURN_TIMEOUT_SECONDS)
    return outcome


class TurnJob:
    def __init__(
        self, store: SessionStore, settings: Settings, model: ChatModel, lease: Lease | None = None
    ) -> None:
        self.lease = lease
        self.store = store
        self.settings = settings
        self.model = model
        job = get_current_job()
        self.turn_id = f"{job.id if job else 'inline'}.{uuid.uuid4().hex[:6]}"

    def run(self) -> str:
        folder = load_folder(self.store)
        parked = self._decided_parked_step(folder)
        if cancel_requested_by(self.store.redis, self.store.key):
            return self._cancelled_before_start()
        if parked is None and not self._has_work(folder):
            set_state(self.store, "idle")
            return "idle: nothing to answer"
        try:
            workspace = ensure_workspace(self.settings, self.store.key)
        except WorkspaceError as error:
            return self._finish(TurnOutcome("failed", error=str(error)), None)
        reporter = ProgressReporter(self.store, self.turn_id)
        self._start(reporter)
        try:
            outcome = asyncio.run(self._loop(folder, workspace, reporter).run_turn(self.turn_id, parked))
        except JobTimeoutException:
            outcome = TurnOutcome("timed_out", error="RQ job timeout")
            self.store.append(TurnEnded(turn_id=self.turn_id, reason="failed", error="timed out"))
        except LeaseLost:
            raise
        except Exception as error:  # a bug must still end the turn in the thread, not leave it hanging
            log.exception("turn %s of %s crashed", self.turn_id, self.store.key)
            outcome = TurnOutcome("failed", error=f"internal error ({type(error).__name__})")
            self.store.append(TurnEnded(turn_id=self.turn_id, reason="failed", error=repr(error)[:2000]))
        return self._finish(outcome, reporter)

    # -- before ---------------------------------------------------------------------------

    def _has_work(self, folder: Folder) -> bool:
        history = folder.history
        waiting = bool(self.store.redis.llen(self.store.inbox_key))
        resumed = "resume_requested" in self.store.meta()
        return waiting or resumed or bool(history and is_real_user_input(history[-1]))

    def _decided_parked_step(self, folder: Folder) -> ParkedStep | None:
        step = self.store.meta().get("parked_step")
        approvals = ApprovalStore(self.store)
        if not step or folder.open_step_uuid != step or approvals.pending():
            return None
        states = approvals.states()
        decisions = {
            a.tool_call_id: Approved() if states.get(a.approval_id) == "approved" else Rejected(None)
            for a in approvals.requests()
        }
        return ParkedStep(step, decisions)

    def _start(self, reporter: ProgressReporter) -> None:
        job = get_current_job()
        set_state(self.store, "running", turn_id=self.turn_id, job=job.id if job else "")
        self.store.redis.hdel(self.store.meta_key, "resume_requested")
        self.store.append(TurnPrompt(input="", turn_id=self.turn_id), once_key=f"{self.turn_id}:prompt")
        reporter.start()

    def _loop(self, folder: Folder, workspace: Path, reporter: ProgressReporter) -> Loop:
        tools = tool_setup()
        registry = tools.registry
        policy = AskForNamedTools(self.settings.approval_tools)

        def executor(approver: Approver | None) -> ToolExecutor:
            return ToolExecutor(registry, workspace=workspace, policy=policy, approver=approver)

        return Loop(
            model=self.model,
            executor_factory=executor,
            sink=RedisTurnSink(self.store, self.turn_id, self.lease),
            folder=folder,
            system_prompt=tools.system_prompt,
            tool_declarations=tools.declarations,
            needs_approval=approval_check(registry, workspace, policy),
            config=self._config(),
            reporter=reporter,
        )

    def _config(self) -> LoopConfig:
        return LoopConfig(
            context_window=self.settings.LLM_CONTEXT_WINDOW,
            max_steps_per_turn=self.settings.MAX_STEPS_PER_TURN,
            deadline_s=float(self.settings.TURN_TIMEOUT_SECONDS),
        )

    def _cancelled_before_start(self) -> str:
        by = cancel_requested_by(self.store.redis, self.store.key)
        self.store.redis.delete(cancel_flag_key(self.store.key))
        self.store.append(TurnCancel(turn_id=self.turn_id, target="queued", reason="user_cancelled"))
        self.store.append(TurnEnded(turn_id=self.turn_id, reason="cancelled"))
        self._notify(
            CancelledNotice(turn_id=self.turn_id, by=by, text=f"Stopped by <@{by}> before it started.")
        )
        set_state(self.store, "cancelled", last_turn_reason="cancelled")
        return "cancelled before start"

    # -- after ----------------------------------------------------------------------------

    def _finish(self, outcome: TurnOutcome, reporter: ProgressReporter | None) -> str:
        if outcome.reason == "awaiting_approval":
            set_state(self.store, "awaiting_approval")
            if reporter is not None:
                reporter.finish("awaiting_approval")
            return outcome.reason
        if reporter is not None:
            reporter.finish(CARD_STATES[outcome.reason])  # type: ignore[arg-type]
        by = cancel_requested_by(self.store.redis, self.store.key)
        self.store.redis.delete(cancel_flag_key(self.store.key))
        self.store.redis.hdel(self.store.meta_key, "parked_step")
        ApprovalStore(self.store).clear()
        for notice in self._closing_notices(outcome, by):
            self.store.post_notice(notice)
        set_state(self.store, END_STATES[outcome.reason], last_turn_reason=outcome.reason)
        schedule_delivery(self.store.redis, self.store.key)
        log.info(
            "turn %s of %s: %s after %d steps", self.turn_id, self.store.key, outcome.reason, outcome.steps
        )
        return outcome.reason

    def _closing_notices(self, outcome: TurnOutcome, by: str | None) -> list[Notice]:
        turn = self.turn_id
        if outcome.reason == "completed":
            return [AnswerNotice(turn_id=turn, text=outcome.answer or "(the model gave no answer)")]
        if outcome.reason == "cancelled":
            who = f" by <@{by}>" if by else ""
            return [CancelledNotice(turn_id=turn, by=by, text=f"Stopped{who}. `!resume` continues.")]
        if outcome.reason == "timed_out":
            return [
                InfoNotice(
                    turn_id=turn, text=TIMED_OUT.format(minutes=self.settings.TURN_TIMEOUT_SECONDS // 60)
                )
            ]
        return [ErrorNotice(turn_id=turn, text=APOLOGY.format(reason=outcome.error or "unknown error"))]

    def _notify(self, notice: Notice) -> None:
        self.store.post_notice(notice)
        schedule_delivery(self.store.redis, self.store.key)
