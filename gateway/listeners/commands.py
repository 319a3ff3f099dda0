"""`/agent` (SLACK_COMMAND): cancel, resume, status, compact, skill, skills, help, answered ephemerally.

Slack never delivers a slash command typed inside a thread, so the thread comes as a pasted
link; without one, `cancel`, `resume` and `status` act on the caller's most recent session in
the channel the command was typed in. A linked thread is only for its channel's members, its
initiator and operators (`Authz.may_see`); anyone else is told so, and learns nothing of it.
The answer is the command's own ephemeral response, given within Slack's 3 seconds because
every action is a few Redis calls (and, once per cache period, a look at the channel's members).
A command that acts is done once per Slack `trigger_id`: a replay of the same signed request
(within the dedupe hour) is told so and changes nothing.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from slack_bolt import Ack, App

from gateway import payload
from gateway.authz import NOT_A_MEMBER
from gateway.deps import Deps
from gateway.links import parse_thread_link
from gateway.listeners._controls import NO_SESSION, Verb, act
from gateway.listeners._skill_words import SkillRequest, skills_text, use_skill
from jobs.keys import SessionKey, command_dedupe_key
from jobs.session.dedupe import claim, release
from jobs.session.state import latest_session, session_exists

log = logging.getLogger(__name__)

REPLAYED = "That command was already received; it was not done again."
READ_ONLY = frozenset({"help", "status", "skills"})  # answering twice changes nothing
VERBS: dict[str, Verb] = {"cancel": "cancel", "stop": "cancel", "resume": "resume", "status": "status"}
LINK_OPTIONAL: frozenset[Verb] = frozenset({"cancel", "resume", "status"})


def _help_text(command: str) -> str:
    return "\n".join(
        [
            f"*{command}* controls the agent's sessions (one per thread). Paste the thread's link "
            "(⋯ → Copy link on any of its messages):",
            f"• `{command} cancel [link]` stops the running turn (default: your latest session here)",
            f"• `{command} resume [link]` continues a stopped or interrupted session",
            f"• `{command} status [link]` tells what a session is doing",
            f"• `{command} compact <link>` summarises a long conversation to free context",
            f"• `{command} skill <name> <link> [args]` gives a session one of its skills",
            f"• `{command} skills [link]` lists the skills a session can use",
            f"• `{command} help` shows this",
            "In a thread you can also type `!stop`, `!resume`, `!status`, `!compact` or "
            "`!skill <name> [args]`.",
        ]
    )


def register(app: App, deps: Deps) -> None:
    command = deps.settings.SLACK_COMMAND

    @app.command(command)
    def on_command(ack: Ack, body: dict[str, Any]) -> None:
        ack(text=_once(deps, body, command), response_type="ephemeral")


def _once(deps: Deps, body: dict[str, Any], command: str) -> str:
    """The answer, acting at most once per trigger id (Slack's name for this one request)."""
    trigger_id = payload.optional_text(body, "trigger_id")
    if trigger_id is None or _subcommand(body) in READ_ONLY:
        return _answer(deps, body, command)
    claimed = claim(deps.redis, [command_dedupe_key(payload.text(body, "team_id"), trigger_id)])
    if not claimed.fresh:
        log.info("%s replayed (trigger %s): not done again", command, trigger_id)
        return REPLAYED
    try:
        return _answer(deps, body, command)
    except Exception:
        release(deps.redis, claimed)  # not done: a retry may do it
        raise


def _subcommand(body: dict[str, Any]) -> str:
    words = (payload.optional_text(body, "text") or "").split()
    return words[0].lower() if words else "help"


def _answer(deps: Deps, body: dict[str, Any], command: str) -> str:
    words = (payload.optional_text(body, "text") or "").split()
    name = _subcommand(body)
    if name == "skill":
        return _skill(deps, body, command)
    if name == "skills":
        return _skills(deps, body, words[1:], command)
    if name == "compact":
        return _run(deps, body, "compact", words[1:], command)
    verb = VERBS.get(name)
    if verb is None:
        prefix = "" if name == "help" else f"Unknown subcommand `{name}`.\n"
        return prefix + _help_text(command)
    return _run(deps, body, verb, words[1:], command)


def _run(deps: Deps, body: dict[str, Any], verb: Verb, rest: list[str], command: str) -> str:
    team, channel = payload.text(body, "team_id"), payload.text(body, "channel_id")
    user = payload.text(body, "user_id")
    key, problem = _target(deps, team, channel, user, verb, rest, command)
    if key is None:
        return problem
    result = act(deps, verb, key, user)
    log.info("%s %s by %s on %s → %s", command, verb, user, key, result)
    return result


def _target(
    deps: Deps, team: str, channel: str, user: str, verb: Verb, rest: list[str], command: str
) -> tuple[SessionKey | None, str]:
    if rest:
        key = _linked_session(team, rest[0])
        if key is None:
            return None, _not_a_link(rest[0])
        return (key, "") if deps.authz.may_see(key, user) else (None, NOT_A_MEMBER)
    if verb not in LINK_OPTIONAL:
        return None, f"Which thread? `{command} {verb} <link to the thread>`"
    latest = latest_session(deps.redis, team, channel, user)
    if latest is None:
        return None, "You have no agent session in this channel. Give a thread link to pick one."
    return latest, ""


def _skill(deps: Deps, body: dict[str, Any], command: str) -> str:
    """`skill <name> <link> [args]`: the arguments are kept as typed (quotes group words)."""
    parts = (payload.optional_text(body, "text") or "").strip().split(maxsplit=3)
    if len(parts) < 3:
        return f"Which skill, and for which thread? `{command} skill <name> <link to the thread> [args]`"
    team, user = payload.text(body, "team_id"), payload.text(body, "user_id")
    key = _linked_session(team, parts[2])
    if key is None:
        return _not_a_link(parts[2])
    if not deps.authz.may_see(key, user):
        return NOT_A_MEMBER
    if not session_exists(deps.redis, key):
        return NO_SESSION
    request = SkillRequest(parts[1], parts[3] if len(parts) > 3 else "")
    # Slack sends no ts with a command; its trigger id names this one request.
    ts = f"command:{payload.optional_text(body, 'trigger_id') or uuid.uuid4().hex}"
    result = use_skill(deps, key, user, request, ts=ts)
    log.info("%s skill %s by %s on %s → %s", command, request.name, user, key, result)
    return result


def _skills(deps: Deps, body: dict[str, Any], rest: list[str], command: str) -> str:
    team, channel = payload.text(body, "team_id"), payload.text(body, "channel_id")
    user = payload.text(body, "user_id")
    if not rest:
        return skills_text(deps, latest_session(deps.redis, team, channel, user))
    key = _linked_session(team, rest[0])
    if key is None:
        return _not_a_link(rest[0])
    return skills_text(deps, key) if deps.authz.may_see(key, user) else NOT_A_MEMBER


def _linked_session(team: str, link: str) -> SessionKey | None:
    """The session of the thread a pasted link points at; None when it is not a thread link."""
    ref = parse_thread_link(link)
    return None if ref is None else payload.session_key(team, ref.channel, ref.thread_ts)


def _not_a_link(text: str) -> str:
    return f"`{text}` is not a link to a Slack thread. Use ⋯ → Copy link on its message."
