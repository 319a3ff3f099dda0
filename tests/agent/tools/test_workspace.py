"""The one way into a workspace (agent.tools.workspace, agent.tools._beneath), on real files."""

import errno
import os
import socket

import pytest

from agent.skills import SkillCatalog, session_skill_roots
from agent.tools import _beneath
from agent.tools import workspace as ws
from agent.tools.builtin import ReadFile, WriteFile
from tests.agent.tools.helpers import call, executor_with, run_one

READ = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "real.txt").write_text("in")
    (tmp_path / "secret.txt").write_text("outside")
    return root


def test_paths_are_placed_by_their_text(workspace):
    real = workspace.resolve()
    assert ws.place(workspace, "sub/a.txt") == real / "sub" / "a.txt"
    assert ws.place(workspace, str(workspace / "sub")) == real / "sub"
    assert ws.place(workspace, "sub/../x") == real / "x"
    assert ws.place(workspace, ".") == real
    assert ws.show(workspace, real / "sub" / "a") == "sub/a"
    assert ws.show(workspace, real) == "."


@pytest.mark.parametrize("raw", ["../secret.txt", "sub/../../secret.txt", "/etc/passwd", "~/x"])
def test_paths_whose_text_leaves_are_refused(workspace, raw):
    with pytest.raises(ws.PathSecurityError, match="outside the session workspace"):
        ws.place(workspace, raw)


def test_nul_characters_are_refused(workspace):
    with pytest.raises(ws.PathSecurityError, match="NUL"):
        ws.place(workspace, "a\x00b")


@pytest.fixture(params=["openat2", "walk"])
def opener(request):
    """Both ways the kernel-side resolution is done: openat2, and the O_NOFOLLOW walk that old
    kernels get; each runs the same cases."""
    return _beneath.open_beneath if request.param == "openat2" else _beneath.walk_beneath


def _read_beneath(opener, root, relative):
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = opener(directory, relative, READ)
    finally:
        os.close(directory)
    with os.fdopen(fd) as handle:
        return handle.read()


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("alias.txt", "sub/real.txt"),
        ("sub/again.txt", "./real.txt"),
        ("sub/round.txt", "../sub/../sub/real.txt"),
        ("dirlink", "sub"),
    ],
)
def test_links_that_stay_inside_are_followed(workspace, opener, name, target):
    os.symlink(target, workspace / name)
    relative = "dirlink/real.txt" if name == "dirlink" else name
    assert _read_beneath(opener, workspace, relative) == "in"


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("out.txt", "../secret.txt"),
        ("abs.txt", "{secret}"),
        ("up", ".."),
        ("environ", "/proc/self/environ"),
        ("self", "/proc/self/cwd"),
    ],
)
def test_links_that_leave_are_refused(workspace, opener, name, target):
    os.symlink(target.format(secret=workspace.parent / "secret.txt"), workspace / name)
    relative = "up/secret.txt" if name == "up" else f"{name}/x" if name == "self" else name
    with pytest.raises(_beneath.LeavesDirectory):
        _read_beneath(opener, workspace, relative)


def test_dotdot_above_the_root_is_refused(workspace, opener):
    with pytest.raises(_beneath.LeavesDirectory):
        _read_beneath(opener, workspace, "sub/../../secret.txt")


def test_a_loop_of_links_ends(workspace, opener):
    os.symlink("b", workspace / "a")
    os.symlink("a", workspace / "b")
    with pytest.raises(OSError) as raised:
        _read_beneath(opener, workspace, "a")
    assert raised.value.errno == errno.ELOOP


def test_an_absolute_link_into_the_workspace_is_refused_too(workspace, opener):
    """Either way a link is read, an absolute one is not followed: it names the host's tree."""
    os.symlink(workspace / "sub" / "real.txt", workspace / "absolute.txt")
    with pytest.raises(_beneath.LeavesDirectory):
        _read_beneath(opener, workspace, "absolute.txt")


def test_a_fifo_is_refused_without_blocking(workspace):
    os.mkfifo(workspace / "pipe")
    with pytest.raises(ws.NotAFileOrDirectory, match="pipe is a FIFO"):
        ws.open_entry(workspace, "pipe")


def test_a_socket_is_refused(workspace):
    server = socket.socket(socket.AF_UNIX)
    os.chdir(workspace)  # a socket path is limited to ~100 bytes; tmp_path can be longer
    server.bind("sock")
    try:
        with pytest.raises((ws.NotAFileOrDirectory, OSError)) as raised:
            ws.open_entry(workspace, "sock")
        assert isinstance(raised.value, ws.NotAFileOrDirectory) or raised.value.errno == errno.ENXIO
    finally:
        server.close()


def test_a_write_replaces_a_link_never_writes_through_it(workspace):
    os.symlink(workspace.parent / "secret.txt", workspace / "link.txt")
    with pytest.raises(ws.PathSecurityError, match="symbolic link"):
        ws.write_bytes(workspace, "link.txt", b"pwned")
    assert (workspace.parent / "secret.txt").read_text() == "outside"


def test_a_write_replaces_a_hard_link_rather_than_writing_through_it(workspace):
    shared = workspace.parent / "shared.txt"
    shared.write_text("theirs")
    os.link(shared, workspace / "hard.txt")
    ws.write_bytes(workspace, "hard.txt", b"mine")
    assert shared.read_text() == "theirs"
    assert (workspace / "hard.txt").read_text() == "mine"


def test_a_write_makes_missing_directories_but_not_through_a_link_out(workspace):
    os.symlink(workspace.parent, workspace / "up")
    assert ws.write_bytes(workspace, "new/deep/file.txt", b"x").created
    assert (workspace / "new" / "deep" / "file.txt").read_bytes() == b"x"
    with pytest.raises(ws.PathSecurityError, match="outside the session workspace"):
        ws.write_bytes(workspace, "up/planted.txt", b"x")
    assert not (workspace.parent / "planted.txt").exists()


def test_reads_are_bounded(workspace):
    (workspace / "big").write_bytes(b"x" * 1001)
    with pytest.raises(ValueError, match="larger than 1,000 bytes"):
        ws.read_bytes(workspace, "big", 1000)
    assert ws.read_bytes(workspace, "big", 1001) == b"x" * 1001


@pytest.mark.anyio
@pytest.mark.parametrize("raw", ["../secret.txt", "/etc/passwd", "link.txt"])
async def test_tools_refuse_escaping_paths(workspace, raw):
    os.symlink(workspace.parent / "secret.txt", workspace / "link.txt")
    executor = executor_with(ReadFile(), WriteFile(), workspace=workspace)
    read = await run_one(executor, call("r", "read_file", {"path": raw}))
    assert read.is_error
    assert f'Path "{raw}" ' in read.output
    assert "outside the session workspace" in read.output
    write = await run_one(executor, call("w", "write_file", {"path": raw, "content": "pwned"}))
    assert write.is_error
    assert (workspace.parent / "secret.txt").read_text() == "outside"


def test_a_write_follows_a_link_that_stays_inside_to_its_target(workspace):
    """A repository's `AGENTS.md -> sub/real.txt`: the target is written, the link stays."""
    os.symlink("sub/real.txt", workspace / "AGENTS.md")
    ws.write_bytes(workspace, "AGENTS.md", b"new")
    assert (workspace / "AGENTS.md").is_symlink() and (workspace / "sub" / "real.txt").read_text() == "new"
    edited = ws.edit_bytes(workspace, "AGENTS.md", lambda old: old + b"er", 100)
    assert not edited.created and (workspace / "sub" / "real.txt").read_text() == "newer"


@pytest.mark.skipif(os.geteuid() != 0, reason="a file owned by another uid needs a root worker")
def test_a_write_never_leaves_a_setuid_setgid_or_sticky_bit(workspace):
    target = workspace / "tool"
    target.write_text("#!/bin/sh\n")
    os.chown(target, 65534, 65534)
    target.chmod(0o7755)
    (workspace / "data").write_text("x")
    (workspace / "data").chmod(0o3644)  # setgid without group exec: a chown leaves it set
    ws.write_bytes(workspace, "tool", b"#!/bin/sh\necho model's bytes\n")
    ws.write_bytes(workspace, "data", b"y")
    assert (os.stat(target).st_mode & 0o7777, os.stat(target).st_uid) == (0o755, 65534)
    assert os.stat(workspace / "data").st_mode & 0o7777 == 0o644


def test_a_loop_of_links_at_the_skills_directory_is_an_error_not_a_crash(workspace):
    (workspace / ".threadline").mkdir()
    os.symlink("skills", workspace / ".threadline" / "skills")
    catalog = SkillCatalog.load(session_skill_roots(workspace, None))
    assert catalog.skills == {} and [error.reason for error in catalog.errors] == [
        "cannot be read (Too many levels of symbolic links)"
    ]
