"""The workspace's HEAD as the worker reads it: as text, from regular files only. The sandbox
wrote `.git`, so a link, a FIFO or a ref name that climbs out must give "no HEAD", never a
hang or a file of the worker's."""

from __future__ import annotations

import os
from pathlib import Path

from jobs.forge.branch import workspace_head

SHA = "0123456789abcdef0123456789abcdef01234567"


def git_dir(tmp_path: Path) -> Path:
    found = tmp_path / "ws" / ".git"
    (found / "refs" / "heads").mkdir(parents=True)
    return found


def test_a_branch_is_read_loose_or_packed_and_a_detached_head_as_it_is(tmp_path):
    dot_git = git_dir(tmp_path)
    (dot_git / "HEAD").write_text("ref: refs/heads/work\n")
    (dot_git / "packed-refs").write_text(f"# pack-refs with: peeled\n{SHA} refs/heads/work\n")
    assert workspace_head(tmp_path / "ws") == SHA
    other = SHA[::-1]
    (dot_git / "refs" / "heads" / "work").write_text(other + "\n")
    assert workspace_head(tmp_path / "ws") == other  # a loose ref wins over the packed one
    (dot_git / "HEAD").write_text(SHA + "\n")
    assert workspace_head(tmp_path / "ws") == SHA


def test_links_fifos_and_climbing_ref_names_give_no_head(tmp_path):
    dot_git = git_dir(tmp_path)
    outside = tmp_path / "worker-file"
    outside.write_text(SHA + "\n")
    os.symlink(outside, dot_git / "HEAD")
    assert workspace_head(tmp_path / "ws") is None  # a link is not followed

    (dot_git / "HEAD").unlink()
    os.mkfifo(dot_git / "HEAD")
    assert workspace_head(tmp_path / "ws") is None  # opened without blocking, not read

    (dot_git / "HEAD").unlink()
    (dot_git / "HEAD").write_text("ref: refs/heads/../../../worker-file\n")
    assert workspace_head(tmp_path / "ws") is None
    (dot_git / "HEAD").write_text("ref: refs/heads/work\n")
    os.mkfifo(dot_git / "refs" / "heads" / "work")
    assert workspace_head(tmp_path / "ws") is None
    (dot_git / "HEAD").write_text("not a commit\n")
    assert workspace_head(tmp_path / "ws") is None
