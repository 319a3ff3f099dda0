"""The turn job (queue `turns`): take the session's input, run the model, queue the answer."""

from __future__ import annotations

import asyncio
import logging
import uuid

from agent.fold import fold
from agent.messages import Message, is_real_user_input
from agent.model.base import ChatModel, ModelRequest
from agent.model.errors import ModelError
from agent.prompts import system_prompt
from agent.wire import AppendLoopEvent, AppendMessage, ContentPartEvent, StepBegin, StepEnd, TurnEnded
from jobs import runtime
from jobs.keys import SessionKey
from jobs.lease import Lease
from jobs.notices import AnswerNotice, ErrorNotice
from jobs.queues import clear_turn_flag, schedule_delivery, schedule_turn
from jobs.store import SessionStore

log = logging.getLogger(__name__)

APOLOGY = "Sorry, I could not finish this turn: {reason}"


def run_turn(session_key: str) -> str:
    """RQ entry point. Returns what happened, for RQ's job result and the logs."""
    key = SessionKey.parse(session_key)
    redis = runtime.redis_client()
    clear_turn_flag(redis, key)
    store = SessionStore(redis, key)
    lease = Lease.acquire(store, owner="turn")
    if lease is None:
        return "busy: another turn holds the session; it takes this input"
    with lease:
        outcome = take_turn(store, runtime.build_model(runtime.settings()))
        if not lease.release_if_idle():
            schedule_turn(redis, key, turn_timeout_s=runtime.settings().TURN_TIMEOUT_SECONDS)
    return outcome


def take_turn(store: SessionStore, model: ChatModel) -> str:
    for user_input in store.take_inbox():
        store.append(AppendMessage(message=user_input.to_message()))
    history = fold(store.read_wire())
    if not history or not is_real_user_input(history[-1]):
        return "idle: no unanswered input"
    turn_id = uuid.uuid4().hex[:12]
    try:
        answer = asyncio.run(_ask(model, history))
    except ModelError as error:
        return _fail(store, turn_id, error)
    _record_answer(store, turn_id, answer)
    store.post_notice(AnswerNotice(turn_id=turn_id, text=answer.text() or "(no answer)"))
    store.append(TurnEnded(turn_id=turn_id, reason="completed"))
    schedule_delivery(store.redis, store.key)
    return "completed"


async def _ask(model: ChatModel, history: list[Message]) -> Message:
    response = await model.complete(ModelRequest(messages=history, system=system_prompt()))
    return response.message


def _record_answer(store: SessionStore, turn_id: str, answer: Message) -> None:
    step = uuid.uuid4().hex
    store.append(AppendLoopEvent(event=StepBegin(uuid=step, turn_id=turn_id, step=1)))
    for part in answer.content:
        store.append(AppendLoopEvent(event=ContentPartEvent(step_uuid=step, part=part)))
    store.append(AppendLoopEvent(event=StepEnd(uuid=step, turn_id=turn_id, step=1, finish_reason="stop")))


def _fail(store: SessionStore, turn_id: str, error: ModelError) -> str:
    log.warning("turn %s of %s failed: %s", turn_id, store.key, error)
    store.append(TurnEnded(turn_id=turn_id, reason="failed", error=str(error)[:2000]))
    store.post_notice(ErrorNotice(turn_id=turn_id, text=APOLOGY.format(reason=_short_reason(error))))
    schedule_delivery(store.redis, store.key)
    return "failed"


def _short_reason(error: ModelError) -> str:
    return f"the model endpoint failed ({type(error).__name__}: {str(error)[:200]})."
