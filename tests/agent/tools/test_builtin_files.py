import os

import anyio
import pytest

from agent.tools import default_registry
from agent.tools.builtin import Grep
from agent.tools.executor import ToolExecutor
from agent.tools.registry import ToolRegistry
from tests.agent.tools.helpers import call, run_one

pytestmark = pytest.mark.anyio


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def executor(workspace):
    return ToolExecutor(default_registry(), workspace=workspace)


async def use(executor, name, **arguments):
    return await run_one(executor, call("c1", name, arguments))


# --- read_file ---------------------------------------------------------------------------


async def test_read_file_numbers_lines(executor, workspace):
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    result = await use(executor, "read_file", path="a.txt")
    assert (result.output, result.is_error) == ("     1\talpha\n     2\tbeta", False)


async def test_read_file_pages_with_offset_and_limit(executor, workspace):
    (workspace / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    result = await use(executor, "read_file", path="a.txt", offset=3, limit=2)
    assert result.output == "     3\tline 3\n     4\tline 4\n[Lines 3-4 of 10. Continue with offset=5.]"
    last = await use(executor, "read_file", path="a.txt", offset=9)
    assert last.output == "     9\tline 9\n    10\tline 10\n[Lines 9-10 of 10.]"


async def test_read_file_bounds_a_page_by_characters(executor, workspace):
    (workspace / "wide.txt").write_text(("w" * 1000 + "\n") * 100)
    result = await use(executor, "read_file", path="wide.txt")
    assert len(result.output) < 50_000
    assert not result.truncated
    assert result.output.splitlines()[-1].startswith("[Lines 1-")
    assert "Continue with offset=" in result.output


async def test_read_file_cuts_long_lines(executor, workspace):
    (workspace / "min.js").write_text("m" * 5000)
    result = await use(executor, "read_file", path="min.js")
    assert result.output == "     1\t" + "m" * 1986 + "[...truncated]"


@pytest.mark.parametrize(
    ("setup", "path", "message"),
    [
        (None, "missing.txt", 'Tool "read_file" failed: File not found: missing.txt'),
        (
            "dir",
            "d",
            'Tool "read_file" failed: d is a directory, not a file; use list_dir to see its entries.',
        ),
        ("binary", "b.bin", 'Tool "read_file" failed: b.bin looks like a binary file'),
        ("short", "s.txt", 'Tool "read_file" failed: s.txt has 1 lines; offset 5 is past the end.'),
    ],
)
async def test_read_file_errors(setup, path, message, executor, workspace):
    if setup == "dir":
        (workspace / "d").mkdir()
    if setup == "binary":
        (workspace / "b.bin").write_bytes(b"\x00\x01\x02")
    if setup == "short":
        (workspace / "s.txt").write_text("one\n")
    arguments = {"path": path, "offset": 5} if setup == "short" else {"path": path}
    result = await use(executor, "read_file", **arguments)
    assert result.is_error
    assert result.output.startswith(message)


async def test_read_file_of_an_empty_file_says_so(executor, workspace):
    (workspace / "e.txt").write_text("")
    assert (await use(executor, "read_file", path="e.txt")).output == "e.txt is empty."


# --- write_file --------------------------------------------------------------------------


async def test_write_file_creates_parents_and_reports(executor, workspace):
    result = await use(executor, "write_file", path="new/dir/f.txt", content="a\nb")
    assert result.output == "Created new/dir/f.txt: 3 characters, 2 lines."
    assert (workspace / "new" / "dir" / "f.txt").read_text() == "a\nb"
    again = await use(executor, "write_file", path="new/dir/f.txt", content="")
    assert again.output == "Overwrote new/dir/f.txt: 0 characters, 0 lines."


async def test_write_file_refuses_a_directory(executor, workspace):
    (workspace / "d").mkdir()
    result = await use(executor, "write_file", path="d", content="x")
    assert result.output == 'Tool "write_file" failed: d is a directory; give the path of a file.'


# --- edit_file ---------------------------------------------------------------------------


async def test_edit_file_replaces_exactly_one_occurrence(executor, workspace):
    (workspace / "c.py").write_text("x = 1\ny = 2\n")
    result = await use(executor, "edit_file", path="c.py", old_text="y = 2", new_text="y = 3")
    assert result.output == "Replaced 1 occurrence in c.py."
    assert (workspace / "c.py").read_text() == "x = 1\ny = 3\n"


async def test_edit_file_replace_all(executor, workspace):
    (workspace / "c.py").write_text("a a a")
    result = await use(executor, "edit_file", path="c.py", old_text="a", new_text="b", replace_all=True)
    assert result.output == "Replaced 3 occurrences in c.py."
    assert (workspace / "c.py").read_text() == "b b b"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("zzz", "q", "old_text was not found in c.py. It must match the file exactly"),
        ("a", "b", "old_text occurs 2 times in c.py; include more surrounding text"),
        ("", "b", "old_text must not be empty; use write_file"),
        ("a", "a", "old_text and new_text are the same"),
    ],
)
async def test_edit_file_errors_leave_the_file_alone(old, new, message, executor, workspace):
    (workspace / "c.py").write_text("a\na\n")
    result = await use(executor, "edit_file", path="c.py", old_text=old, new_text=new)
    assert result.is_error
    assert result.output.startswith(f'Tool "edit_file" failed: {message}')
    assert (workspace / "c.py").read_text() == "a\na\n"


async def test_edit_file_matches_and_keeps_crlf_line_ends(executor, workspace):
    """read_file shows lines without `\r`: the model's multi-line old_text has `\n` ends."""
    (workspace / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await use(executor, "edit_file", path="crlf.txt", old_text="one\ntwo", new_text="1\n2")
    assert result.output == "Replaced 1 occurrence in crlf.txt."
    assert (workspace / "crlf.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_file_of_a_missing_file(executor):
    result = await use(executor, "edit_file", path="nope.py", old_text="a", new_text="b")
    assert result.output == 'Tool "edit_file" failed: File not found: nope.py'


# --- list_dir ----------------------------------------------------------------------------


async def test_list_dir_shows_directories_first_with_sizes(executor, workspace):
    (workspace / "src").mkdir()
    (workspace / "b.txt").write_text("12345")
    (workspace / "a.txt").write_text("")
    os.symlink(workspace / "a.txt", workspace / "link")
    result = await use(executor, "list_dir")
    assert result.output == ".:\nsrc/\na.txt  (0 bytes)\nb.txt  (5 bytes)\nlink@"


async def test_list_dir_errors(executor, workspace):
    (workspace / "f").write_text("")
    assert (await use(executor, "list_dir", path="f")).output.endswith(
        "f is a file, not a directory; use read_file to read it."
    )
    assert (await use(executor, "list_dir", path="nope")).output.endswith("Directory not found: nope")
    (workspace / "empty").mkdir()
    assert (await use(executor, "list_dir", path="empty")).output == "empty is empty."


# --- glob --------------------------------------------------------------------------------


async def test_glob_matches_across_directories(executor, workspace):
    (workspace / "src" / "pkg").mkdir(parents=True)
    for name in ["src/a.py", "src/pkg/b.py", "src/c.txt", "top.py"]:
        (workspace / name).write_text("")
    result = await use(executor, "glob", pattern="**/*.py")
    assert result.output == "src/a.py\nsrc/pkg/b.py\ntop.py"
    scoped = await use(executor, "glob", pattern="*.py", path="src")
    assert scoped.output == "src/a.py"


async def test_glob_names_directories_at_the_patterns_last_level(executor, workspace):
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "a.ts").write_text("")
    (workspace / "README.md").write_text("")
    assert (await use(executor, "glob", pattern="src")).output == "src/"
    assert (await use(executor, "glob", pattern="*")).output == "README.md\nsrc/"
    assert (await use(executor, "glob", pattern="src/*")).output == "src/a.ts\nsrc/pkg/"


async def test_glob_with_no_match_and_bad_patterns(executor, workspace):
    assert (await use(executor, "glob", pattern="*.rs")).output == "No paths match '*.rs' under .."
    escaping = await use(executor, "glob", pattern="../*")
    assert escaping.is_error
    assert "must not contain '..'" in escaping.output


async def test_glob_skips_matches_reached_through_a_symlink_out(executor, workspace, tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.py").write_text("")
    os.symlink(tmp_path / "outside", workspace / "out")
    (workspace / "in.py").write_text("")
    assert (await use(executor, "glob", pattern="**/*.py")).output == "in.py"


# --- grep --------------------------------------------------------------------------------


async def test_grep_finds_lines_with_a_python_regex(executor, workspace):
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("def foo():\n    return 1\n")
    (workspace / "src" / "b.txt").write_text("foo bar\n")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("foo\n")
    result = await use(executor, "grep", pattern=r"\bfoo\b")
    assert result.output == "src/a.py:1:def foo():\nsrc/b.txt:1:foo bar"
    only_py = await use(executor, "grep", pattern="foo", glob="*.py")
    assert only_py.output == "src/a.py:1:def foo():"
    insensitive = await use(executor, "grep", pattern="FOO BAR", ignore_case=True)
    assert insensitive.output == "src/b.txt:1:foo bar"


async def test_grep_stops_at_max_results(executor, workspace):
    (workspace / "many.txt").write_text("hit\n" * 10)
    result = await use(executor, "grep", pattern="hit", max_results=3)
    assert result.output.splitlines() == [
        "many.txt:1:hit",
        "many.txt:2:hit",
        "many.txt:3:hit",
        "[Stopped after 3 matches; narrow the search to see the rest.]",
    ]


async def test_grep_errors_and_empty_results(executor, workspace):
    bad = await use(executor, "grep", pattern="(")
    assert bad.is_error
    assert bad.output.startswith("Tool \"grep\" failed to resolve execution: Invalid regular expression '(':")
    assert (await use(executor, "grep", pattern="x", path="nope")).output.endswith("Path not found: nope")
    (workspace / "a.txt").write_text("y\n")
    assert (await use(executor, "grep", pattern="x")).output == "No matches for 'x' under .."


async def test_grep_skips_binary_files_and_symlinks_out(executor, workspace, tmp_path):
    (workspace / "bin.dat").write_bytes(b"needle\x00")
    (tmp_path / "secret.txt").write_text("needle\n")
    os.symlink(tmp_path / "secret.txt", workspace / "link.txt")
    assert (await use(executor, "grep", pattern="needle")).output == "No matches for 'needle' under .."


async def test_spill_files_can_be_read_back_with_read_file(executor, workspace):
    big = "".join(f"row {n}\n" for n in range(20_000))
    (workspace / "big.txt").write_text(big)
    shell = await run_one(executor, call("s1", "shell", {"command": "cat big.txt"}))
    assert shell.truncated
    path = next(line for line in shell.output.splitlines() if line.startswith("output_path: "))[13:]
    page = await use(executor, "read_file", path=path, offset=3, limit=2)
    assert page.output.startswith("     3\trow 0\n     4\trow 1\n[Lines 3-4 of ")  # after exit_code, stdout:
    found = await use(executor, "grep", pattern="^row 19999$", path=path)
    assert found.output.endswith(":row 19999")


async def test_grep_stops_a_catastrophic_pattern_at_its_time_limit(workspace):
    (workspace / "a.txt").write_text("a" * 64 + "\n")
    executor = ToolExecutor(ToolRegistry([Grep(time_limit_s=0.5)]), workspace=workspace)
    with anyio.fail_after(60):  # a deadline for the test itself; the tool's own limit is 0.5 s
        result = await use(executor, "grep", pattern="(a|aa)+c")
    assert result.is_error
    assert "0.5 s" in result.output and "(a|aa)+c" in result.output
