"""What an activated skill delivers: a user message with origin `skill_activation` (context-core.md §6).

The model-tool and nested triggers arrive as a steer after the Skill call's results; the
user-slash trigger (`!skill`, `/agent skill`) arrives as the person's own input.
"""

from __future__ import annotations

from typing import Literal
from xml.sax.saxutils import quoteattr

from agent.messages import Message, Origin, TextPart
from agent.skills._expansion import expand_arguments
from agent.skills._model import Skill

Trigger = Literal["model-tool", "nested-skill", "user-slash"]
SKILL_ACTIVATION = "skill_activation"
HEADERS: dict[str, str] = {
    "model-tool": "The Skill tool loaded these instructions for the current request. Follow them.",
    "nested-skill": "The Skill tool loaded these instructions for the current request. Follow them.",
    "user-slash": "{who}asked for the skill below. Follow its instructions.",
}


def render_skill(skill: Skill, args: str, session_id: str) -> str:
    """The skill's body with its arguments and variables expanded."""
    return expand_arguments(
        skill.body,
        args,
        names=skill.arguments,
        skill_dir=str(skill.directory),
        session_id=session_id,
    )


def activation_message(
    skill: Skill, args: str, trigger: Trigger, *, session_id: str, user: str | None = None
) -> Message:
    who = f"<@{user}> " if user else "The user "
    header = HEADERS[trigger].format(who=who)
    attributes = f"name={quoteattr(skill.name)} trigger={quoteattr(trigger)}"
    if args:
        attributes += f" args={quoteattr(args)}"
    text = f"{header}\n\n<skill {attributes}>\n{render_skill(skill, args, session_id)}\n</skill>"
    origin = Origin.model_validate(  # skill_* and user are kind-specific extras of Origin
        {
            "kind": SKILL_ACTIVATION,
            "trigger": trigger,
            "skill_name": skill.name,
            "skill_args": args or None,
            "skill_type": skill.type,
            "skill_path": str(skill.path),
            "skill_source": skill.source,
            **({"user": user} if user else {}),
        }
    )
    return Message(role="user", content=[TextPart(text=text)], origin=origin)
