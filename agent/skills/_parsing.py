"""Reading one SKILL.md: front matter keys normalised, types checked, errors with the reason.

A SKILL.md starts with a `---` line, then YAML front matter, then a closing `---`; the rest
is the body. `name` and `description` are required. Keys are accepted in the spellings the
reference accepts (`when-to-use`, `when_to_use`, `whenToUse`, ...).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agent.skills._frontmatter import FrontMatterError, parse_front_matter
from agent.skills._model import Skill, SkillParseError, SkillSource, SkillType

FENCE = "---"
ALIASES: dict[str, str] = {
    "name": "name",
    "description": "description",
    "type": "type",
    "whenToUse": "when_to_use",
    "when-to-use": "when_to_use",
    "when_to_use": "when_to_use",
    "disableModelInvocation": "disable_model_invocation",
    "disable-model-invocation": "disable_model_invocation",
    "disable_model_invocation": "disable_model_invocation",
    "isSubSkill": "is_sub_skill",
    "is-sub-skill": "is_sub_skill",
    "is_sub_skill": "is_sub_skill",
    "safe": "safe",
    "arguments": "arguments",
}
INLINE_TYPES = frozenset({None, "prompt", "inline"})
_ARGUMENT_NAME = re.compile(r"^[A-Za-z_]\w*$")


class InvalidSkill(ValueError):
    """The reason a SKILL.md was refused (raised inside parsing, reported as SkillParseError)."""


def unsupported_type_text(skill_type: str) -> str:
    return f'Skill type "{skill_type}" is not supported; only "prompt", "inline", and "flow" are supported.'


def parse_skill_file(path: Path, source: SkillSource) -> Skill | SkillParseError:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return SkillParseError(path, f"cannot be read ({error})")
    return parse_skill(text, path, source)


def parse_skill(text: str, path: Path, source: SkillSource) -> Skill | SkillParseError:
    try:
        return parse_skill_text(text, path, source)
    except InvalidSkill as error:
        return SkillParseError(path, str(error))


def parse_skill_text(text: str, path: Path, source: SkillSource) -> Skill:
    header, body = split_front_matter(text)
    try:
        raw = parse_front_matter(header)
    except FrontMatterError as error:
        raise InvalidSkill(f"front matter: {error}") from None
    fields = _normalised(raw)
    return Skill(
        name=_required_text(fields, "name"),
        description=_required_text(fields, "description"),
        type=_skill_type(fields.get("type")),
        body=body,
        path=path,
        source=source,
        when_to_use=_optional_text(fields, "when_to_use"),
        disable_model_invocation=_flag(fields, "disable_model_invocation"),
        is_sub_skill=_flag(fields, "is_sub_skill"),
        safe=_flag(fields, "safe"),
        arguments=_argument_names(fields.get("arguments")),
    )


def split_front_matter(text: str) -> tuple[str, str]:
    """(front matter, body); the file must open with a `---` line and close the block with one."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != FENCE:
        raise InvalidSkill("does not start with '---' (a SKILL.md opens with YAML front matter)")
    for index in range(1, len(lines)):
        if lines[index].rstrip() == FENCE:
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :]).strip("\n")
    raise InvalidSkill("the front matter is not closed by a '---' line")


def _normalised(raw: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, value in raw.items():
        canonical = ALIASES.get(key)
        if canonical is None:
            continue  # keys of other hosts (argument-hint, allowed-tools ...) are not ours to judge
        if canonical in fields:
            raise InvalidSkill(f"{key!r} repeats a key already given under another spelling")
        fields[canonical] = value
    return fields


def _required_text(fields: dict[str, Any], key: str) -> str:
    value = fields.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InvalidSkill(f"the front matter has no '{key}'")
    if not isinstance(value, str | int):
        raise InvalidSkill(f"'{key}' must be text")
    return str(value).strip()


def _optional_text(fields: dict[str, Any], key: str) -> str | None:
    value = fields.get(key)
    if value is None:
        return None
    if not isinstance(value, str | int):
        raise InvalidSkill(f"'{key}' must be text")
    return str(value).strip() or None


def _flag(fields: dict[str, Any], key: str) -> bool:
    value = fields.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidSkill(f"'{key.replace('_', '-')}' must be true or false, not {value!r}")
    return value


def _skill_type(value: Any) -> SkillType:
    if value in INLINE_TYPES:
        return "inline"
    if value == "flow":
        return "flow"
    if value == "reference":
        return "reference"
    raise InvalidSkill(unsupported_type_text(str(value)))


def _argument_names(value: Any) -> tuple[str, ...]:
    """`arguments: [file, mode]`, a block list, or "<file> [mode]" as one string."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else str(value).replace(",", " ").split()
    names = []
    for item in items:
        name = str(item).strip().strip("<>[]").strip()
        if not _ARGUMENT_NAME.match(name):
            raise InvalidSkill(f"argument name {item!r} is not a plain identifier")
        names.append(name)
    return tuple(names)
