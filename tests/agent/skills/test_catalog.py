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


def test_a_workspace_skill_never_reads_a_file_outside_the_workspace(tmp_path: Path):
    """A repository can ship links; each way out is refused, and the reason is kept."""
    outside = tmp_path / "outside"
    secret = skill_file(outside, "secret", "---\nname: secret\ndescription: SECRET-TEXT\n---\nSECRET-BODY")
    workspace = tmp_path / "ws"
    skills = workspace / ".threadline" / "skills"
    skills.mkdir(parents=True)
    (skills / "file-link").mkdir()
    (skills / "file-link" / "SKILL.md").symlink_to(secret)  # the file is a link
    (skills / "dir-link").symlink_to(secret.parent)  # the skill's directory is a link
    other = tmp_path / "ws2"
    (other / ".threadline").mkdir(parents=True)
    (other / ".threadline" / "skills").symlink_to(outside)  # the skills directory itself is a link

    for root in (workspace, other):
        catalog = SkillCatalog.load(session_skill_roots(root, None))
        assert catalog.all() == []
        assert "SECRET" not in repr(catalog)
    errors = SkillCatalog.load(session_skill_roots(workspace, None)).errors
    assert sorted(error.path.parent.name for error in errors) == ["dir-link", "file-link"]
    assert all("outside the workspace" in error.reason for error in errors)
