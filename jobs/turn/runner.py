"""The turn job (queue `turns`): lease the session, run the loop, tell the thread how it ended."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from agent.delegation import SUBAGENT_RESULT
from agent.fold import HistoryFold
from agent.loop.parking import approval_check
from agent.loop.ports import ENDINGS, HANDED_BACK, PARKED_REASONS, ParkedStep, TurnOutcome, TurnReporter
from agent.loop.turn_loop import Loop, LoopConfig
from agent.messages import Message, is_real_user_input
from agent.model.base import ChatModel
from agent.prompts import system_prompt
from agent.redaction import redact_text
from agent.tools.executor import ToolExecutor
from agent.tools.policy import ApprovalDecision, Approved, Approver, Expired, Rejected
from agent.tools.registry import ToolRegistry, openai_tool_declarations
from agent.wire import TurnCancel, TurnEnded, TurnPrompt
from jobs import metrics, runtime
from jobs.control import cancel, cancel_requested_by
from jobs.delegation.child_approvals import forward_approvals
from jobs.delegation.children import active_children, child_info, forget_child
from jobs.delegation.endings import child_turn_ended
from jobs.delegation.tree_cards import CardReporter, stored_card
from jobs.delegation.waits import ParkedWait, StepWaits
from jobs.keys import SessionKey, cancel_key
from jobs.log_context import bound
from jobs.mentions import for_slack
from jobs.queues import clear_turn_flag, schedule_delivery, schedule_turn
from jobs.session.approvals import ApprovalStore, waited_text
from jobs.session.history import load_fold
from jobs.session.lease import Lease, LeaseLost
from jobs.session.meta import MetaHash, SessionMeta
from jobs.session.notices import AnswerNotice, CancelledNotice, ErrorNotice, InfoNotice, Notice
from jobs.session.reactions import mark_ended
from jobs.session.state import PARKED_STATES, set_state, state_of
from jobs.session.store import UNFENCED, SessionStore
from jobs.settings import Settings
from jobs.turn.attachments import Attachments
from jobs.turn.cancels import cancel_listener
from jobs.turn.host import current_job_id, host
from jobs.turn.live import LiveSteps, TeeReporter
from jobs.turn.metered import MeteredReporter
from jobs.turn.publisher import Publisher
from jobs.turn.sink import RedisTurnSink
from jobs.turn.tools import approval_policy, process_registry, turn_tools
from jobs.turn.workspace import WorkspaceError, open_workspace
from jobs.usage import UsageMeter, charged_person

log = logging.getLogger(__name__)

HANDED_BACK_BY = "threadline (the worker restarted)"  # the resume request a handed-back turn leaves
APOLOGY = "Sorry, I could not finish this turn: {reason}"
TIMED_OUT = "This turn hit its time limit ({minutes} min) and was stopped. `!resume` continues it."


@dataclass(frozen=True)
class ToolSetup:
    registry: ToolRegistry
    declarations: list[dict[str, Any]]
    system_prompt: str


@cache
def tool_setup() -> ToolSetup:
    """Built once per process (~80 ms of schema checks); the worker builds it before forking."""
    registry = process_registry()
    return ToolSetup(registry, openai_tool_declarations(registry), system_prompt(registry.names))


async def run_turn(session_key: str) -> str:
    """RQ entry point, awaited on the turn host's loop (jobs.turn.host): the turn's synchronous
    start and end run in the host's state lane, its steps on the loop. Returns what happened,
    for the logs."""
    key = SessionKey.parse(session_key)
    turns = host()
    store = SessionStore(runtime.redis_client(), key)
    lease = await turns.blocking(_lease_turn, store)
    if lease is None:
        return "busy: the job holding the session schedules a turn when it gives it back"
    with lease:
        try:
            runner = await turns.blocking(
                TurnRunner, store, runtime.settings(), runtime.build_model(runtime.settings()), lease
            )
            outcome = await runner.run()
        except LeaseLost:
            log.error("turn of %s stopped: its lease was lost to another worker", key)
            return "lease lost"
        moved = await turns.blocking(lease.hand_back)
    await turns.blocking(after_turn, store, moved, outcome)
    return outcome


def _lease_turn(store: SessionStore) -> Lease | None:
    clear_turn_flag(store.redis, store.key)
    return Lease.acquire_or_ask(store, owner="turn", ttl_ms=int(runtime.settings().LEASE_TTL_SECONDS * 1000))


def after_turn(store: SessionStore, moved: bool, outcome: str) -> None:
    """What a turn's job does once it has given the session back: queue the turn that is wanted."""
    if (
        (moved and state_of(store) not in PARKED_STATES)
        # The last decision or answer came while this job still held the session: its
        # continuation could not start then, so it is enqueued now. (An approval card is in the
        # thread before the turn that parked has ended; that end wrote `awaiting_approval` over
        # the `queued` of the click.)
        or (moved and outcome == "awaiting_approval" and _decided(store))
        or (outcome == "awaiting_agents" and StepWaits(store).ready())
        or outcome == HANDED_BACK  # the worker is stopping: another one goes on with the turn
    ):
        schedule_turn(store.redis, store.key, turn_timeout_s=runtime.settings().TURN_TIMEOUT_SECONDS)


def _decided(store: SessionStore) -> bool:
    """Whether the calls the session is parked on have all been decided."""
    approvals = ApprovalStore(store)
    return bool(approvals.requests()) and not approvals.pending()


class TurnRunner:
    def __init__(
        self, store: SessionStore, settings: Settings, model: ChatModel, lease: Lease | None = None
    ) -> None:
        self.lease = lease
        self.store = store
        self.settings = settings
        self.model = model
        self.info = child_info(store)
        self.turn_id = f"{current_job_id.get() or 'inline'}.{uuid.uuid4().hex[:6]}"
        # A sub-agent has no thread of its own: only a root's steps stream.
        streaming = settings.SLACK_STREAMING and self.info is None and not store.key.is_subagent
        self.publisher = Publisher()  # the card's and the live steps', so they show in order
        self._close_tools: Callable[[], Awaitable[None]] = _nothing_to_close  # the turn's stdio MCP servers
        self.live = LiveSteps(store, self.turn_id, publisher=self.publisher) if streaming else None
        self.started_at: float | None = None  # when the loop started (perf_counter), for metrics

    async def run(self) -> str:
        with bound(turn=self.turn_id):
            return await self._run()

    async def _run(self) -> str:
        """The start in the state lane, the steps on this loop, the end in the state lane."""
        started = await host().blocking(self._started)
        if isinstance(started, str):
            return started
        turn, parked, reporter = started
        try:
            outcome = await _drainable_turn(
                turn, self.store, self.turn_id, parked, self.publisher, self.lease
            )
        except asyncio.CancelledError:  # the job's timeout: nothing else cancels a turn's task
            outcome = TurnOutcome("timed_out", error="RQ job timeout")
            ended = TurnEnded(turn_id=self.turn_id, reason="failed", error="timed out")
            await host().blocking(self.store.append, ended)
        except LeaseLost:
            raise
        except Exception as error:  # a bug must still end the turn in the thread, not leave it hanging
            outcome = await host().blocking(self._crashed, error)
        finally:
            await self._close_tools()
        return await host().blocking(self._finish, outcome, reporter)

    def _started(self) -> str | tuple[Loop, ParkedStep | None, CardReporter]:
        """The turn's start: what it runs, or why it does not (the ending already recorded)."""
        folder = load_fold(self.store)
        waiting = self._wait_of(folder)
        if waiting is not None and waiting.results is None:
            return self._still_waiting()
        meta = self.store.meta.read()  # once: what this start asks of it stays as it was
        parked = self._parked_step(folder, waiting, meta)
        if cancel_requested_by(self.store.redis, self.store.key):
            return self._cancelled_before_start()
        if parked is None and not self._has_work(folder, meta):
            if state_of(self.store) == "queued":  # a duplicate job leaves any other state as it is
                set_state(self.store, "idle")
            return "idle: nothing to answer"
        try:
            root = MetaHash(self.store.redis, self.info.root) if self.info else self.store.meta
            workspace = open_workspace(self.settings, root)
        except WorkspaceError as error:
            return self._finish(TurnOutcome("failed", error=str(error)), None)
        resumed = stored_card(self.store) if waiting else None
        reporter = CardReporter(self.store, self.turn_id, resumed, publisher=self.publisher)
        self._start(reporter)
        try:
            attachments = Attachments(self.store, self.settings, workspace, self.turn_id)
            sink = self._sink(attachments, folder, meta)
            attachments.catch_up(folder, sink.record_blocking)  # here, off the loop other turns share
            return self._loop(folder, workspace, reporter, sink), parked, reporter
        except LeaseLost:
            raise
        except Exception as error:
            return self._finish(self._crashed(error), reporter)

    def _crashed(self, error: Exception) -> TurnOutcome:
        log.error("turn %s of %s crashed", self.turn_id, self.store.key, exc_info=error)
        self.store.append(
            TurnEnded(turn_id=self.turn_id, reason="failed", error=redact_text(repr(error))[:2000])
        )
        return TurnOutcome("failed", error=f"internal error ({type(error).__name__})")

    # -- before ---------------------------------------------------------------------------

    def _has_work(self, folder: HistoryFold, meta: SessionMeta) -> bool:
        history = folder.history
        waiting = bool(self.store.redis.llen(self.store.inbox_key))
        resumed = meta.resume_requested is not None
        return waiting or resumed or bool(history and _asks_for_a_turn(history[-1]))

    def _wait_of(self, folder: HistoryFold) -> ParkedWait | None:
        """The open step's wait for sub-agents, if it is parked on them."""
        waiting = StepWaits(self.store).parked()
        if waiting is None or waiting.step_uuid != folder.open_step_uuid:
            return None
        return waiting

    def _still_waiting(self) -> str:
        """Some sub-agent has not answered: record waiting input on the wire and free the worker."""
        self.store.take_inbox(self.lease.token if self.lease is not None else UNFENCED)
        set_state(self.store, "awaiting_agents")
        return "awaiting_agents"

    def _parked_step(
        self, folder: HistoryFold, waiting: ParkedWait | None, meta: SessionMeta
    ) -> ParkedStep | None:
        decisions = self._decisions(folder, meta)
        if decisions is None and waiting is None:
            return None
        step = folder.open_step_uuid or ""
        results = waiting.results if waiting is not None and waiting.results else {}
        return ParkedStep(step, decisions or {}, results)

    def _decisions(self, folder: HistoryFold, meta: SessionMeta) -> dict[str, ApprovalDecision] | None:
        step = meta.parked_step
        approvals = ApprovalStore(self.store)
        if not step or folder.open_step_uuid != step or approvals.pending():
            return None
        states = approvals.states()
        return {a.tool_call_id: self._decision(states.get(a.approval_id)) for a in approvals.requests()}

    def _decision(self, state: str | None) -> ApprovalDecision:
        if state == "approved":
            return Approved()
        if state == "expired":
            return Expired(waited_text(self.settings.APPROVAL_TIMEOUT_SECONDS))
        return Rejected(None)

    def _start(self, reporter: CardReporter) -> None:
        set_state(self.store, "running", turn_id=self.turn_id, job=current_job_id.get() or "")
        self.started_at = time.perf_counter()
        metrics.turn_started()
        self.store.meta.clear_resume_request()
        self.store.append(TurnPrompt(input="", turn_id=self.turn_id), once_key=f"{self.turn_id}:prompt")
        reporter.start()

    def _sink(self, attachments: Attachments, folder: HistoryFold, meta: SessionMeta) -> RedisTurnSink:
        return RedisTurnSink(
            self.store,
            self.turn_id,
            self.lease,
            self.settings.APPROVAL_TIMEOUT_SECONDS,
            meter=self._meter(folder, meta),
            attachments=attachments,
        )

    def _live_reporter(self, reporter: CardReporter) -> TurnReporter:
        """The card's reporter, and the live step's too when this turn streams."""
        return TeeReporter(reporter, self.live) if self.live is not None else reporter

    def _loop(
        self, folder: HistoryFold, workspace: Path, reporter: CardReporter, sink: RedisTurnSink
    ) -> Loop:
        tools = turn_tools(
            self.store, self.settings, workspace, self.info, lambda: folder.history, self.publisher
        )
        self._close_tools = tools.close
        registry = tools.registry
        # A sub-agent asks for approval under its parent's rules: the same policy, never less.
        policy = approval_policy(self.settings)

        def executor(approver: Approver | None) -> ToolExecutor:
            return ToolExecutor(registry, workspace=workspace, policy=policy, approver=approver)

        return Loop(
            model=self.model,
            executor_factory=executor,
            sink=sink,
            folder=folder,
            system_prompt=tools.system_prompt,
            tool_declarations=tools.declarations,
            needs_approval=approval_check(registry, workspace, policy),
            config=self._config(),
            reporter=MeteredReporter(self._live_reporter(reporter), registry.names),
            deferrals=StepWaits(self.store),
            live=self.live,
            telemetry=metrics.projection_repaired,
        )

    def _config(self) -> LoopConfig:
        return LoopConfig(
            context_window=self.settings.LLM_CONTEXT_WINDOW,
            max_steps_per_turn=self.settings.MAX_STEPS_PER_TURN,
            deadline_s=float(self.settings.TURN_TIMEOUT_SECONDS),
            cache_key=cache_key_of(self.store.key),
        )

    def _meter(self, folder: HistoryFold, meta: SessionMeta) -> UsageMeter:
        """Usage is charged to the root's owner; a root session's is in `meta` already."""
        root = self.info.root if self.info else self.store.key
        owner = MetaHash(self.store.redis, root).read().owner if self.info else meta.owner
        person = charged_person(folder.history, owner)
        return UsageMeter(self.store.redis, self.store.key, self.turn_id, person, root=root)

    def _cancelled_before_start(self) -> str:
        by = cancel_requested_by(self.store.redis, self.store.key)
        self.store.redis.delete(cancel_key(self.store.key))
        self.store.append(TurnCancel(turn_id=self.turn_id, target="queued", reason="user_cancelled"))
        self.store.append(TurnEnded(turn_id=self.turn_id, reason="cancelled"))
        mark_ended(self.store, "cancelled")
        self._notify(
            CancelledNotice(turn_id=self.turn_id, by=by, text=f"Stopped by <@{by}> before it started.")
        )
        set_state(self.store, "cancelled", last_turn_reason="cancelled")
        return "cancelled before start"

    # -- after ----------------------------------------------------------------------------

    def _finish(self, outcome: TurnOutcome, reporter: CardReporter | None) -> str:
        if self.started_at is not None:
            metrics.turn_finished(outcome.reason, time.perf_counter() - self.started_at, outcome.steps)
        if outcome.reason in PARKED_REASONS:
            return self._parked(outcome, reporter)
        if outcome.reason == HANDED_BACK:
            return self._handed_back(outcome, reporter)
        if reporter is not None:
            reporter.finish(ENDINGS[outcome.reason].card)  # type: ignore[arg-type]  # agent's ENDINGS types card states as str
        if self.live is not None:
            self.live.close()
        by = cancel_requested_by(self.store.redis, self.store.key)
        self.store.redis.delete(cancel_key(self.store.key))
        self.store.meta.clear_parked_step()
        ApprovalStore(self.store).clear()
        for notice in self._closing_notices(outcome, by):
            self.store.post_notice(notice)
        mark_ended(self.store, outcome.reason)
        set_state(self.store, ENDINGS[outcome.reason].state, last_turn_reason=outcome.reason)  # type: ignore[arg-type]  # agent's ENDINGS types states as str
        schedule_delivery(self.store.redis, self.store.key)
        self._end_delegation(outcome, by)
        log.info(
            "turn %s of %s: %s after %d steps", self.turn_id, self.store.key, outcome.reason, outcome.steps
        )
        return outcome.reason

    def _parked(self, outcome: TurnOutcome, reporter: CardReporter | None) -> str:
        if self.live is not None:
            self.live.close(parked=True)
        set_state(self.store, ENDINGS[outcome.reason].state)  # type: ignore[arg-type]  # agent's ENDINGS types states as str
        if outcome.reason == "awaiting_approval":
            if reporter is not None:
                reporter.finish("awaiting_approval")
            forward_approvals(self.store)  # a sub-agent's requests appear in its root's thread
        return outcome.reason

    def _handed_back(self, outcome: TurnOutcome, reporter: CardReporter | None) -> str:
        """The worker is stopping: the turn goes back to the queue, to go on where it stopped
        (run_turn queues it once the lease is given back). Nothing ended, so nothing is posted
        but the card's last state."""
        if reporter is not None:
            reporter.finish("handed_back")
        if self.live is not None:
            self.live.close(parked=True)
        self.store.meta.request_resume(HANDED_BACK_BY)
        set_state(self.store, "queued")
        log.info("turn %s of %s handed back after %d steps: the worker is stopping", self.turn_id,
                 self.store.key, outcome.steps)  # fmt: skip
        return outcome.reason

    def _end_delegation(self, outcome: TurnOutcome, by: str | None) -> None:
        """The turn is over: no foreground sub-agent outlives it, and a sub-agent's answer goes up."""
        StepWaits(self.store).clear()
        for child in active_children(self.store.redis, self.store.key):
            info = child_info(SessionStore(self.store.redis, child))
            if info is not None and info.mode != "background":
                cancel(self.store.redis, child, by=by or "threadline")
                forget_child(self.store.redis, self.store.key, child)
        child_turn_ended(self.store, outcome, turn_timeout_s=self.settings.TURN_TIMEOUT_SECONDS)

    def _closing_notices(self, outcome: TurnOutcome, by: str | None) -> list[Notice]:
        turn = self.turn_id
        if outcome.reason == "completed":
            # A copied `@Dana (U123)` posts as a real mention (jobs.mentions).
            answer = for_slack(outcome.answer or "(the model gave no answer)")
            return [AnswerNotice(turn_id=turn, text=answer, step=outcome.steps or None)]
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


async def _drainable_turn(
    loop: Loop,
    store: SessionStore,
    turn_id: str,
    parked: ParkedStep | None,
    publisher: Publisher,
    lease: Lease | None,
) -> TurnOutcome:
    """The turn, registered with the host (handed back if this worker is asked to stop meanwhile),
    stopped by a cancel pushed to this process (jobs.turn.cancels) or a lost lease; what it
    showed is published before its end is."""
    running = asyncio.get_running_loop()

    def lease_lost() -> None:  # on the lease keeper's thread
        running.call_soon_threadsafe(loop.cancel, "aborted")

    forget_lease = lease.on_lost(lease_lost) if lease is not None else None
    try:
        async with cancel_listener(store.redis).hearing(store.key, lambda: loop.cancel("user_cancelled")):
            with host().running_turn(str(store.key), loop):
                return await loop.run_turn(turn_id, parked)
    finally:
        if forget_lease is not None:
            forget_lease()
        await publisher.flush()


def cache_key_of(key: SessionKey) -> str:
    """The session's prompt-cache key: stable across its turns, and naming no team, channel or
    thread to the provider."""
    return hashlib.sha256(f"threadline:{key}".encode()).hexdigest()[:32]


def _asks_for_a_turn(message: Message) -> bool:
    """A person's input, or a sub-agent's answer delivered to an idle session."""
    origin = message.origin
    return is_real_user_input(message) or (origin is not None and origin.kind == SUBAGENT_RESULT)


async def _nothing_to_close() -> None:
    return None
