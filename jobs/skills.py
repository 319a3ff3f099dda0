"""Skills from Slack: `!skill <name> [args]`, `/agent skill <name> <link> [args]`, `/agent skills`.

A person invoking a skill sends its rendered instructions as their own input (origin
`skill_activation`, trigger `user-slash`): it starts a turn when the session is idle and
steers the running one otherwise, like any message in the thread, and the same quotas and
budgets apply to it. Inline and flow skills
can be invoked by people (this project has no flow engine: a flow skill's body is its
instructions); reference skills cannot be activated.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel
from redis import Redis

from agent.skills import Skill, SkillCatalog, SkillRoot, activation_message, session_skill_roots
from jobs.control import ControlResult
from jobs.input import record_input
from jobs.keys import SessionKey
from jobs.quotas import Refused, input_limits
from jobs.session.state import PARKED_STATES
from jobs.session.user_input import UserInput
from jobs.settings import Settings
from jobs.turn.workspace import workspace_path

Audience = Literal["model and people", "people only", "nobody (reference)"]


class SkillSummary(BaseModel):
    name: str
    description: str
    audience: Audience
    source: str


class SkillListing(BaseModel):
    skills: list[SkillSummary]
    errors: list[str]  # "<file>: <reason>" for every SKILL.md that could not be read

    def text(self) -> str:
        if not self.skills and not self.errors:
            return "No skills here yet. Add `.threadline/skills/<name>/SKILL.md` to the workspace."
        lines = [f"• `{s.name}`: {s.description} _({s.audience}, {s.source})_" for s in self.skills]
        if self.errors:
            lines.append("Skills that could not be read:")
            lines.extend(f"• {error}" for error in self.errors)
        return "\n".join(lines)


def session_catalog(settings: Settings, key: SessionKey | None) -> SkillCatalog:
    """The session's skills; without a session, the shared ones only."""
    if key is None:
        roots = [SkillRoot(settings.SHARED_SKILLS_DIR, "shared")] if settings.SHARED_SKILLS_DIR else []
        return SkillCatalog.load(roots)
    return SkillCatalog.load(session_skill_roots(workspace_path(settings, key), settings.SHARED_SKILLS_DIR))


def list_skills(settings: Settings, key: SessionKey | None) -> SkillListing:
    catalog = session_catalog(settings, key)
    return SkillListing(
        skills=[
            SkillSummary(name=s.name, description=s.description, audience=_audience(s), source=s.source)
            for s in catalog.all()
        ],
        errors=[str(error) for error in catalog.errors],
    )


def invoke_skill(
    redis: Redis, settings: Settings, key: SessionKey, name: str, args: str, *, by: str, ts: str
) -> ControlResult:
    """Deliver a skill to the session as `by`'s input; `ts` identifies the request (idempotency)."""
    skill = session_catalog(settings, key).get(name)
    if skill is None:
        return ControlResult(
            ok=False, message=f'There is no skill "{name}" here. `/agent skills` lists them.'
        )
    if skill.type == "reference":
        return ControlResult(ok=False, message=f'"{name}" is a reference skill: it cannot be activated.')
    message = activation_message(skill, args, "user-slash", session_id=str(key), user=by)
    user_input = UserInput(text=message.text(), user=by, ts=ts, message=message)
    where = record_input(
        redis,
        key,
        user_input,
        turn_timeout_s=settings.TURN_TIMEOUT_SECONDS,
        parked=PARKED_STATES,
        **input_limits(settings, key, by, by_bot=by in settings.allowed_bots),
    )
    if isinstance(where, Refused):
        return ControlResult(ok=False, message=where.quota.refusal)
    verb = "Sent it to the running turn" if where == "inbox" else "Started a turn with it"
    return ControlResult(ok=True, message=f'Loaded the skill "{name}". {verb}.')


def _audience(skill: Skill) -> Audience:
    if skill.type == "reference":
        return "nobody (reference)"
    return "model and people" if skill.model_invocable else "people only"
