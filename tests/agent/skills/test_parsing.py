"""SKILL.md parsing: front matter keys and their aliases, types, and errors with file and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.skills import Skill, SkillParseError, parse_skill_file


def write(tmp_path: Path, text: str, name: str = "demo") -> Path:
    path = tmp_path / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def parse(tmp_path: Path, text: str) -> Skill | SkillParseError:
    return parse_skill_file(write(tmp_path, text), "workspace")


def test_a_full_front_matter(tmp_path: Path):
    skill = parse(
        tmp_path,
        "---\n"
        "name: review\n"
        'description: "Review a change: style, tests, risk"\n'
        "type: prompt\n"
        "when-to-use: >\n  when someone asks\n  for a review\n"
        "disable_model_invocation: false\n"
        "isSubSkill: yes\n"
        "safe: true\n"
        "arguments: [file, mode]\n"
        "allowed-tools: Read  # another host's key, ignored\n"
        "---\n\nRead $file in $mode mode.\n",
    )
    assert isinstance(skill, Skill)
    assert (skill.name, skill.description, skill.type) == (
        "review",
        "Review a change: style, tests, risk",
        "inline",
    )
    assert skill.when_to_use == "when someone asks for a review"
    assert (skill.disable_model_invocation, skill.is_sub_skill, skill.safe) == (False, True, True)
    assert skill.arguments == ("file", "mode")
    assert skill.body == "Read $file in $mode mode."
    assert skill.model_invocable and not skill.listed_for_model  # a sub-skill is not listed


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("disableModelInvocation", "true"),
        ("disable-model-invocation", "true"),
        ("disable_model_invocation", "yes"),
    ],
)
def test_disable_model_invocation_in_every_spelling(tmp_path: Path, key: str, value: str):
    skill = parse(tmp_path, f"---\nname: deploy\ndescription: ship it\n{key}: {value}\n---\nbody")
    assert isinstance(skill, Skill) and skill.disable_model_invocation and not skill.model_invocable


@pytest.mark.parametrize("key", ["whenToUse", "when-to-use", "when_to_use"])
def test_when_to_use_in_every_spelling(tmp_path: Path, key: str):
    skill = parse(tmp_path, f"---\nname: a\ndescription: b\n{key}: 'it''s time'\n---\n")
    assert isinstance(skill, Skill) and skill.when_to_use == "it's time"


@pytest.mark.parametrize(
    ("declared", "expected"), [(None, "inline"), ("prompt", "inline"), ("inline", "inline"),
                               ("flow", "flow"), ("reference", "reference")],
)  # fmt: skip
def test_types(tmp_path: Path, declared: str | None, expected: str):
    line = f"type: {declared}\n" if declared else ""
    skill = parse(tmp_path, f"---\nname: a\ndescription: b\n{line}---\nbody")
    assert isinstance(skill, Skill) and skill.type == expected
    assert skill.model_invocable == (expected == "inline")


def test_an_unsupported_type_is_refused_with_the_spec_text(tmp_path: Path):
    path = write(tmp_path, "---\nname: a\ndescription: b\ntype: agent\n---\nbody")
    error = parse_skill_file(path, "shared")
    assert error == SkillParseError(
        path, 'Skill type "agent" is not supported; only "prompt", "inline", and "flow" are supported.'
    )
    assert str(error).startswith(f"{path}: Skill type")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("name: a\ndescription: b\n", "does not start with '---'"),
        ("---\nname: a\ndescription: b\n", "the front matter is not closed by a '---' line"),
        ("---\ndescription: b\n---\n", "the front matter has no 'name'"),
        ("---\nname: a\n---\n", "the front matter has no 'description'"),
        ("---\nname: a\ndescription: b\ndisable-model-invocation: sometimes\n---\n", "must be true or false"),
        ("---\nname: a\ndescription: [b\n---\n", "line 3: an inline list must end with ']'"),
        ("---\nname: a\n  description: b\n---\n", "line 3: unexpected indentation"),
        ("---\nname: a\nname: b\ndescription: c\n---\n", "line 3: 'name' is given twice"),
        ("---\nname: a\ndescription: b\narguments: [file, 'two words']\n---\n", "is not a plain identifier"),
    ],
)
def test_errors_name_the_file_and_the_reason(tmp_path: Path, text: str, reason: str):
    path = write(tmp_path, text)
    error = parse_skill_file(path, "workspace")
    assert isinstance(error, SkillParseError) and error.path == path
    assert reason in error.reason


def test_block_lists_and_literal_blocks(tmp_path: Path):
    skill = parse(
        tmp_path,
        "---\nname: a\ndescription: |\n  line one\n  line two\n"
        "arguments:\n  - <target>\n  - '[flags]'\n---\nx",
    )
    assert isinstance(skill, Skill)
    assert skill.description == "line one\nline two"
    assert skill.arguments == ("target", "flags")
