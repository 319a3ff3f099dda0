"""Recording input: what a person (or a sub-agent's answer) said, routed to a session in one step.

Every input goes through one Lua script, jobs/input.lua (its header names each KEY and ARGV):
to the inbox while a turn holds the lease (the running loop takes it at its next step), to the
wire log otherwise (the next turn folds it). Two callers:

- `record_input`, a Slack message. A mention is on Slack's clock (it waits for our 200), so
  everything of ours it writes is the same script (`claim_input`): the dedupe keys (`SET NX
  EX`, all or none), the routing, `created` / `owner` noted once, the caller's latest session
  in the channel, and, when the input went to the wire of a session that is not parked, the
  turn's claim: the `queued` flag (SET NX, so concurrent inputs claim one turn) and the
  `queued` state. The script touches no RQ key; a claimed turn's job is then enqueued through
  RQ's public API (`jobs.queues.enqueue_turn`: RQ's own round trips, two in RQ 3.0). A process
  that dies between the two leaves a `queued` session with a flag and no job: the janitor's
  lost-turn check (jobs.janitor) queues it again once it has been queued for a lease TTL. An
  enqueue that fails gives the flag back and raises, with the input recorded and the session
  `queued`: the web process answers Slack 503, Slack's retry of this delivery is a duplicate
  (the dedupe keys are claimed), and the janitor queues the turn the same way (or the next
  message in the thread claims it first). A reply in a thread whose session does not
  exist yet can be held (`without_session="hold"`, jobs.session.early): the session's first
  recorded input folds it in, in Slack ts order, in the same step.
- `route_input`, which only routes and notes `created`: its caller
  schedules what follows.

Waiting input can still be edited or withdrawn: that is the inbox (jobs.session.inbox).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from string import Template
from typing import Literal, cast

from redis import Redis

from agent.wire import AppendMessage
from jobs import metrics
from jobs.keys import (
    QUEUED_SESSIONS,
    RECORD_FIELD,
    MetaField,
    SessionKey,
    early_replies_key,
    inbox_key,
    lease_key,
    meta_key,
    recent_session_key,
    session_key_around,
    turn_queued_key,
    wire_key,
    working_sessions_key,
)
from jobs.lua import lua
from jobs.queues import QUEUED_FLAG_TTL_S, enqueue_turn, new_turn_token
from jobs.quotas import COUNT_WORKING, Quota, Refused
from jobs.redis_text import text
from jobs.session.early import EARLY_REPLY_TTL_S
from jobs.session.state import RECENT_TTL_S, WORKING_STATES
from jobs.session.store import SessionStore, encode_record, now_ms
from jobs.session.user_input import UserInput

Recorded = Literal["wire", "inbox", "held", "duplicate", "no session"]
# What input in a thread without a session does: start the session (a mention, a DM), wait for it
# (a reply, jobs.session.early), or take nothing and claim nothing.
WithoutSession = Literal["start", "hold", "ignore"]
Routed = Literal["wire", "inbox"]

_TEMPLATE = Template(files("jobs").joinpath("input.lua").read_text())


@dataclass(frozen=True)
class TurnClaimed:
    """The input went onto the wire and claimed the session's turn: the `queued` flag holds
    `token`, and the turn's RQ job (`jobs.queues.turn_job_id(token)`) is still to enqueue."""

    token: str


def record_input(
    redis: Redis,
    key: SessionKey,
    user_input: UserInput,
    *,
    turn_timeout_s: int,
    parked: Iterable[str],
    dedupe_keys: Sequence[str] = (),
    dedupe_ttl_s: int = 0,
    without_session: WithoutSession = "start",
    quotas: Sequence[Quota] = (),
    working: Quota | None = None,
    budgets: Sequence[Quota] = (),
) -> Recorded | Refused:
    """Record `user_input` unless a dedupe key was seen, and claim and enqueue the turn if free.

    In a thread without a session, `without_session` says whether the input starts it, is held
    until it starts ('held', claiming the dedupe keys) or is ignored ('no session', claiming none).
    Over one of `quotas`, nothing is recorded and that quota is returned (`Refused`); so is
    `working` (jobs.quotas.working_quota) when the input would start a turn and the speaker
    already has that many sessions working, and each of `budgets` (jobs.quotas.budget_quotas)
    when the input would start a turn and that daily budget is spent.

    An input that starts a turn is two steps: the claim (`claim_input`, one round trip), then
    RQ's enqueue. An enqueue that fails raises, with the input recorded and the flag given back;
    the janitor queues the turn.
    """
    recorded = claim_input(
        redis, key, user_input, parked=parked, dedupe_keys=dedupe_keys, dedupe_ttl_s=dedupe_ttl_s,
        without_session=without_session, quotas=quotas, working=working, budgets=budgets,
    )  # fmt: skip
    if isinstance(recorded, TurnClaimed):
        enqueue_turn(redis, key, recorded.token, turn_timeout_s=turn_timeout_s)
        return "wire"
    return recorded


def claim_input(
    redis: Redis,
    key: SessionKey,
    user_input: UserInput,
    *,
    parked: Iterable[str],
    dedupe_keys: Sequence[str] = (),
    dedupe_ttl_s: int = 0,
    without_session: WithoutSession = "start",
    quotas: Sequence[Quota] = (),
    working: Quota | None = None,
    budgets: Sequence[Quota] = (),
) -> Recorded | Refused | TurnClaimed:
    """`record_input`'s first round trip (jobs/input.lua), without the enqueue: the same
    arguments and results, except that an input that claims the session's turn returns
    `TurnClaimed`, whose job the caller enqueues (`jobs.queues.enqueue_turn`). A claim whose job
    is never enqueued is a lost turn: the janitor queues it again (jobs.janitor)."""
    token = new_turn_token()
    parked = list(parked)
    keys = [
        *_session_keys(key), turn_queued_key(key), recent_session_key(key.team, key.channel, user_input.user),
        QUEUED_SESSIONS, early_replies_key(key),
        working.key if working else working_sessions_key(key.team, user_input.user),
        *(quota.key for quota in quotas), *(budget.key for budget in budgets), *dedupe_keys,
    ]  # fmt: skip
    args = [
        *_input_args(user_input, "record"), user_input.user, token, QUEUED_FLAG_TTL_S, str(key),
        RECENT_TTL_S, without_session, dedupe_ttl_s, user_input.ts, EARLY_REPLY_TTL_S,
        len(parked), len(quotas), working.limit if working else 0, working.window_s if working else 0,
        len(budgets), *(n for quota in quotas for n in (quota.limit, quota.window_s)),
        *(budget.limit for budget in budgets), *parked,
    ]  # fmt: skip
    recorded = text(lua(redis, script_text())(keys=keys, args=args))
    result = _result(recorded, quotas, working, budgets)
    metrics.input_recorded(
        "refused" if isinstance(result, Refused) else "wire" if isinstance(result, TurnClaimed) else result
    )
    return result


def _result(
    recorded: str, quotas: Sequence[Quota], working: Quota | None, budgets: Sequence[Quota]
) -> Recorded | Refused | TurnClaimed:
    if recorded.startswith("turn "):
        return TurnClaimed(recorded.split()[1])
    if recorded.startswith("quota "):
        words = recorded.split()
        return Refused(quotas[int(words[1]) - 1], tell=words[-1] == "tell")
    if recorded == "working" and working is not None:
        return Refused(working, tell=True)
    if recorded.startswith("budget "):
        return Refused(budgets[int(recorded.split()[1]) - 1], tell=True)
    return cast(Recorded, recorded)


def route_input(store: SessionStore, user_input: UserInput) -> Routed:
    """Inbox while a turn holds the lease, wire otherwise; notes `created`. Nothing is scheduled."""
    script = lua(store.redis, script_text())
    routed = script(keys=_session_keys(store.key), args=_input_args(user_input, "route"))
    return "inbox" if text(routed) == "inbox" else "wire"


def _session_keys(key: SessionKey) -> list[str]:
    return [lease_key(key), inbox_key(key), wire_key(key), meta_key(key)]


def _input_args(user_input: UserInput, mode: Literal["record", "route"]) -> list[str]:
    record = encode_record(AppendMessage(message=user_input.to_message()))
    return [record, user_input.model_dump_json(), str(now_ms()), mode]


@cache
def script_text() -> str:
    """jobs/input.lua with the meta field names, the working states and how a meta key is
    spelled written in as Lua literals."""
    meta_before, meta_after = session_key_around("meta")
    return _TEMPLATE.substitute(
        state=_literal(MetaField.STATE),
        updated=_literal(MetaField.UPDATED),
        created=_literal(MetaField.CREATED),
        owner=_literal(MetaField.OWNER),
        working=", ".join(f"[{_literal(state)}] = true" for state in sorted(WORKING_STATES)),
        count_working=COUNT_WORKING,
        meta_before=_literal(meta_before),
        meta_after=_literal(meta_after),
        record_field=_literal(RECORD_FIELD),
    )


def _literal(value: str | bytes) -> str:
    """A Lua string literal for any bytes: ASCII letters and digits as they are, the rest as \\ddd
    (three digits always, so a digit that follows is never read as part of the escape)."""
    raw = value.encode() if isinstance(value, str) else value
    return '"' + "".join(chr(b) if chr(b).isascii() and chr(b).isalnum() else f"\\{b:03d}" for b in raw) + '"'
