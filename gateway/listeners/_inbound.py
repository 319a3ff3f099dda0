"""A message someone wrote in Slack, on its way to a session: dedupe, controls, allowlists,
outsiders, submit.

Both the `app_mention` and the `message` listener end here, so the twin deliveries of one
@mention in a thread meet at the same dedupe keys and produce one input. A reply that comes
before its thread's session is held until the session's first input (jobs.session.early),
unless it is such a twin: then the `app_mention` starts the session. An outsider's message
(gateway.authz) is never input: a mention, DM, `!word` or `!skill` of theirs is answered with
the reason, a plain reply is left alone as the allowlists leave it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from slack_bolt import BoltContext
from slack_sdk.errors import SlackApiError

from gateway import payload
from gateway.deps import Deps
from gateway.listeners._context import as_input
from gateway.listeners._controls import act, thread_word
from gateway.listeners._skill_words import skill_request, use_skill
from jobs.input import WithoutSession, record_input
from jobs.keys import SessionKey
from jobs.quotas import Refused, input_limits
from jobs.session.dedupe import DEDUPE_TTL_S, claim, delivery_keys, release
from jobs.session.reactions import mark_seen
from jobs.session.state import PARKED_STATES, session_exists
from jobs.session.store import SessionStore
from jobs.session.user_input import SharedFile

log = logging.getLogger(__name__)

IGNORED = "ignored: a thread without a session"
NOT_ALLOWED = "You can't start the agent here: this channel or your account is not on its allowlist."


@dataclass(frozen=True)
class SlackInput:
    """One message that may become input. `addressed`: an @mention or a DM, spoken to the agent;
    `mentions_agent`: a `message` that also comes as `app_mention` (its twin)."""

    key: SessionKey  # the session of the message's thread
    user: str
    ts: str
    text: str
    event_id: str | None
    addressed: bool
    mentions_agent: bool = False
    user_team: str | None = None  # the author's workspace when Slack says (Slack Connect)
    agent_user: str | None = None  # the bot's own user id: its earlier posts in the thread are labelled
    files: list[SharedFile] = field(default_factory=list)  # downloaded by the worker (jobs.turn.uploads)


def author(deps: Deps, event: Mapping[str, Any], context: BoltContext) -> str | None:
    """Who wrote it: a person, or a bot on SLACK_ALLOWED_BOTS; None for the agent and other bots."""
    bot_id = payload.optional_text(event, "bot_id")
    if bot_id:
        allowed = bot_id != context.bot_id and bot_id in deps.settings.allowed_bots
        return bot_id if allowed else None
    if payload.optional_text(event, "subtype") == "bot_message":
        return None
    user = event.get("user")
    return user if isinstance(user, str) and user else None


def take(deps: Deps, said: SlackInput) -> str:
    """Record what was said; returns what happened, for the log line."""
    if _is_input(deps, said):
        return _record(deps, said)
    key = said.key
    if not said.addressed and not session_exists(deps.redis, key):
        return IGNORED
    claimed = claim(deps.redis, delivery_keys(key.team, said.event_id, key.channel, said.ts))
    if not claimed.fresh:
        return "duplicate"
    try:
        return _act(deps, said, key)
    except Exception:
        release(deps.redis, claimed)  # not done: let Slack's retry through
        raise


def _is_input(deps: Deps, said: SlackInput) -> bool:
    """Words for the model, from someone allowed to give them (not a skill or a control word)."""
    plain = skill_request(said.text) is None and thread_word(said.text) is None
    key = said.key
    return plain and deps.authz.may_start(key.team, key.channel, said.user) and _outsider(deps, said) is None


def _outsider(deps: Deps, said: SlackInput) -> str | None:
    return deps.authz.outsider_refusal(said.key.team, said.user, said.user_team)


def _record(deps: Deps, said: SlackInput) -> str:
    """The mention's hot path: dedupe, quotas, input and the turn's claim in one round trip, then
    the turn's RQ enqueue when it claimed one (jobs.input)."""
    by_bot = said.user in deps.settings.allowed_bots
    user_input = as_input(deps, said)
    recorded = record_input(
        deps.redis,
        said.key,
        user_input,
        turn_timeout_s=deps.turn_timeout_s,
        parked=PARKED_STATES,
        dedupe_keys=delivery_keys(said.key.team, said.event_id, said.key.channel, said.ts),
        dedupe_ttl_s=DEDUPE_TTL_S,
        without_session=_without_session(said),
        **input_limits(deps.settings, said.key, said.user, by_bot=by_bot),
    )
    if isinstance(recorded, Refused):
        if recorded.tell and not by_bot:  # a bot reads no ephemeral line; its loop just stops
            tell(deps, said.key, said.user, recorded.quota.refusal)
        return f"refused: over the quota {recorded.quota.key}"
    if recorded in ("wire", "inbox") and deps.settings.SLACK_REACTIONS:
        mark_seen(SessionStore(deps.redis, said.key), said.ts)
    return IGNORED if recorded == "no session" else recorded


def _without_session(said: SlackInput) -> WithoutSession:
    """A mention or a DM starts a session; a reply waits for one, unless its twin will start it."""
    if said.addressed:
        return "start"
    return "ignore" if said.mentions_agent else "hold"


def _act(deps: Deps, said: SlackInput, key: SessionKey) -> str:
    request = skill_request(said.text)
    refusal = _outsider(deps, said)
    if refusal is not None:
        if said.addressed or request is not None or thread_word(said.text) is not None:
            tell(deps, key, said.user, refusal)
        return "refused: an outsider"
    if request is not None:
        tell(deps, key, said.user, use_skill(deps, key, said.user, request, ts=said.ts))
        return f"skill {request.name}"
    verb = thread_word(said.text)
    if verb is not None:
        tell(deps, key, said.user, act(deps, verb, key, said.user))
        return f"control {verb}"
    if said.addressed:
        tell(deps, key, said.user, NOT_ALLOWED)
    return "refused: not on the allowlist"


def tell(deps: Deps, key: SessionKey, user: str, text: str) -> None:
    """An ephemeral line in the thread for one person; failing to send it never undoes the act."""
    try:
        deps.client.chat_postEphemeral(channel=key.channel, user=user, text=text, thread_ts=key.thread_ts)
    except SlackApiError as error:
        log.warning("could not tell %s in %s: %s", user, key, error.response.get("error"))
