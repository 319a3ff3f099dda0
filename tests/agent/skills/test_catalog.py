"""The catalog: workspace and shared roots, precedence, and broken files kept as errors."""

from __future__ import annotations

from pathlib import Path

from agent.skills import SkillCatalog, listing_text, session_skill_roots


def skill_file(root: Path, directory: str, text: str) -> Path:
    path = root / directory / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_workspace_skills_hide_shared_ones_and_errors_are_kept(tmp_path: Path):
    workspace, shared = tmp_path / "ws", tmp_path / "shared"
    skill_file(
        workspace / ".threadline" / "skills", "review", "---\nname: review\ndescription: ours\n---\nmine"
    )
    skill_file(shared, "review", "---\nname: review\ndescription: theirs\n---\nshared")
    skill_file(shared, "lint", "---\nname: lint\ndescription: lint it\nwhen-to-use: before a commit\n---\nx")
    broken = skill_file(shared, "broken", "no front matter")
    catalog = SkillCatalog.load(session_skill_roots(workspace, shared))

    assert catalog.get("review").description == "ours"
    assert catalog.get("review").source == "workspace"
    assert catalog.get("lint").source == "shared"
    assert [(error.path, error.reason.split(" (")[0]) for error in catalog.errors] == [
        (broken, "does not start with '---'")
    ]
    listing = listing_text(catalog.for_model())
    assert "- lint: lint it When to use: before a commit" in listing
    assert "- review: ours" in listing


def test_two_skills_with_one_name_in_one_root(tmp_path: Path):
    skill_file(tmp_path, "a", "---\nname: same\ndescription: first\n---\n")
    second = skill_file(tmp_path, "b", "---\nname: same\ndescription: second\n---\n")
    catalog = SkillCatalog.load(session_skill_roots(tmp_path / "none", tmp_path))
    assert catalog.get("same").description == "first"
    assert [error.path for error in catalog.errors] == [second]


def test_no_skills_no_listing(tmp_path: Path):
    assert listing_text(SkillCatalog.load(session_skill_roots(tmp_path, None)).for_model()) == ""
