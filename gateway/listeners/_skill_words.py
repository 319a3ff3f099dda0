"""Skills from Slack: `!skill <name> [args]` in a thread, `/agent skill <name> <link> [args]`,
`/agent skills [link]`.

Invoking a skill is giving the session input (the skill's instructions, as the person's own
message), so the allowlists and the refusal of outsiders that govern input govern it too;
listing skills is for anyone who can see the thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.deps import Deps
from jobs.keys import SessionKey
from jobs.skills import invoke_skill, list_skills

SKILL_WORD = "!skill"
NOT_ALLOWED = "You can't use the agent here: this channel or your account is not on its allowlist."


def usage(command: str) -> str:
    return (
        f"Which skill? In the thread: `{SKILL_WORD} <name> [args]`; "
        f"anywhere: `{command} skill <name> <link> [args]`."
    )


@dataclass(frozen=True)
class SkillRequest:
    name: str
    args: str


def skill_request(text: str) -> SkillRequest | None:
    """`!skill <name> [args]` when a message starts with it (name may be empty: ask for it)."""
    words = text.strip().split(maxsplit=2)
    if not words or words[0].lower() != SKILL_WORD:
        return None
    return SkillRequest(words[1] if len(words) > 1 else "", words[2].strip() if len(words) > 2 else "")


def use_skill(deps: Deps, key: SessionKey, user: str, request: SkillRequest, *, ts: str) -> str:
    """Deliver the skill to the session as `user`'s input; the sentence to tell them."""
    if not request.name:
        return usage(deps.settings.SLACK_COMMAND)
    if not deps.authz.may_start(key.team, key.channel, user):
        return NOT_ALLOWED
    refusal = deps.authz.outsider_refusal(key.team, user)
    if refusal is not None:
        return refusal
    return invoke_skill(deps.redis, deps.settings, key, request.name, request.args, by=user, ts=ts).message


def skills_text(deps: Deps, key: SessionKey | None) -> str:
    """The skills of that thread's session (the shared ones when there is no session)."""
    return list_skills(deps.settings, key).text()
