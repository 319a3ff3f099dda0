import os

import pytest

from agent.tools.builtin import ReadFile, WriteFile
from agent.tools.workspace import PathSecurityError, display_path, resolve_in_workspace
from tests.agent.tools.helpers import call, executor_with, run_one


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("outside")
    return root


def test_relative_and_absolute_paths_inside_resolve(workspace):
    assert resolve_in_workspace(workspace, "sub/a.txt") == workspace.resolve() / "sub" / "a.txt"
    assert resolve_in_workspace(workspace, str(workspace / "sub")) == workspace.resolve() / "sub"
    assert resolve_in_workspace(workspace, "sub/../x") == workspace.resolve() / "x"
    assert resolve_in_workspace(workspace, ".") == workspace.resolve()


@pytest.mark.parametrize("raw", ["../secret.txt", "sub/../../secret.txt", "/etc/passwd", "~/x"])
def test_paths_that_leave_the_workspace_are_refused(workspace, raw):
    with pytest.raises(PathSecurityError, match="outside the session workspace"):
        resolve_in_workspace(workspace, raw)


def test_a_symlink_pointing_out_is_refused_and_named_as_such(workspace):
    os.symlink(workspace.parent / "secret.txt", workspace / "link.txt")
    os.symlink(workspace.parent, workspace / "up")
    for raw in ["link.txt", "up/secret.txt"]:
        with pytest.raises(PathSecurityError, match="resolves through a symlink"):
            resolve_in_workspace(workspace, raw)


def test_a_symlink_that_stays_inside_is_fine(workspace):
    (workspace / "sub" / "real.txt").write_text("in")
    os.symlink(workspace / "sub" / "real.txt", workspace / "alias.txt")
    assert resolve_in_workspace(workspace, "alias.txt") == (workspace / "sub" / "real.txt").resolve()


def test_nul_characters_are_refused(workspace):
    with pytest.raises(PathSecurityError, match="NUL"):
        resolve_in_workspace(workspace, "a\x00b")


def test_display_paths_are_workspace_relative(workspace):
    assert display_path(workspace, workspace.resolve() / "sub" / "a") == "sub/a"
    assert display_path(workspace, workspace.resolve()) == "."


@pytest.mark.anyio
@pytest.mark.parametrize("raw", ["../secret.txt", "/etc/passwd", "link.txt"])
async def test_tools_refuse_escaping_paths_before_running(workspace, raw):
    os.symlink(workspace.parent / "secret.txt", workspace / "link.txt")
    executor = executor_with(ReadFile(), WriteFile(), workspace=workspace)
    read = await run_one(executor, call("r", "read_file", {"path": raw}))
    assert read.is_error
    assert read.output.startswith(f'Path "{raw}" ')
    assert "outside the session workspace" in read.output
    write = await run_one(executor, call("w", "write_file", {"path": raw, "content": "pwned"}))
    assert write.is_error
    assert (workspace.parent / "secret.txt").read_text() == "outside"
