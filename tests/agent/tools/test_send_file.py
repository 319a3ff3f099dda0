"""send_file checks the file and hands it to its sender; the thread side is gateway.delivery.files."""

import pytest

from agent.tools.builtin import SendFile
from tests.agent.tools.helpers import call, executor_with, run_one

pytestmark = pytest.mark.anyio


class Sent:
    def __init__(self) -> None:
        self.files: list[tuple[str, str, int, str]] = []

    def send(self, path: str, title: str, size: int, call_id: str) -> None:
        self.files.append((path, title, size, call_id))


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    (root / "out").mkdir(parents=True)
    return root


async def send(workspace, sender, max_bytes=100, **arguments):
    executor = executor_with(SendFile(sender, max_bytes), workspace=workspace)
    return await run_one(executor, call("c1", "send_file", arguments))


async def test_a_workspace_file_is_handed_to_the_sender_once(workspace):
    (workspace / "out" / "report.txt").write_text("hello")
    sender = Sent()
    result = await send(workspace, sender, path="out/report.txt", title="  The\n report ")
    assert not result.is_error and "Sent out/report.txt (5 bytes)" in str(result.output)
    assert sender.files == [("out/report.txt", "The report", 5, "c1")]


async def test_the_title_defaults_to_the_file_name(workspace):
    (workspace / "a.csv").write_text("x")
    sender = Sent()
    await send(workspace, sender, path="a.csv")
    assert sender.files[0][1] == "a.csv"


@pytest.mark.parametrize(
    ("make", "path", "error"),
    [
        (None, "missing.txt", "does not exist"),
        (None, "out", "is not a regular file"),
        ("empty", "e.txt", "is empty"),
        ("big", "b.txt", "files over 100 bytes are not sent"),
        (None, "../outside.txt", "outside the session workspace"),
        ("link", "link.txt", "outside the session workspace"),
    ],
)
async def test_what_cannot_be_sent_is_an_error_and_nothing_is_sent(workspace, tmp_path, make, path, error):
    if make == "empty":
        (workspace / "e.txt").write_text("")
    elif make == "big":
        (workspace / "b.txt").write_text("x" * 101)
    elif make == "link":
        (tmp_path / "secret").write_text("s")
        (workspace / "link.txt").symlink_to(tmp_path / "secret")
    sender = Sent()
    result = await send(workspace, sender, path=path)
    assert result.is_error and error in str(result.output)
    assert sender.files == []


async def test_without_a_sender_the_tool_says_it_is_not_available(workspace):
    (workspace / "a.txt").write_text("x")
    result = await send(workspace, None, path="a.txt")
    assert result.is_error and "not available" in str(result.output)
