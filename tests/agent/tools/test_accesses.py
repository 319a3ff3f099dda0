import pytest

from agent.tools import accesses as acc
from agent.tools.accesses import AllAccess, FileAccess, accesses_conflict, normalize_access_path
from tests.vectors import ids, vectors_for

ACCESS_VECTORS = vectors_for("accesses_conflict")


@pytest.mark.parametrize("vector", ACCESS_VECTORS, ids=ids(ACCESS_VECTORS))
def test_conflict_vector_from_json_shapes(vector):
    left, right = vector["input"]["left"], vector["input"]["right"]
    assert accesses_conflict(left, right) is vector["expected"]["output"]
    assert accesses_conflict(right, left) is vector["expected"]["output"]


def test_there_are_eight_access_vectors():
    assert len(ACCESS_VECTORS) == 8


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [("C:\\Repo\\a.ts", "c:/repo/a.ts"), ("/r//src///x/", "/r/src/x"), ("/r/src//", "/r/src"), ("/", "")],
)
def test_paths_are_normalised(raw, normalized):
    assert normalize_access_path(raw) == normalized


def test_helpers_build_the_declared_entries():
    assert acc.none() == ()
    assert acc.everything() == (AllAccess(),)
    assert acc.read_file("/a") == (FileAccess("read", "/a"),)
    assert acc.read_tree("/a") == (FileAccess("read", "/a", recursive=True),)
    assert acc.write_file("/a") == (FileAccess("write", "/a"),)
    assert acc.write_tree("/a") == (FileAccess("write", "/a", recursive=True),)
    assert acc.read_write_file("/a") == (FileAccess("readwrite", "/a"),)
    assert acc.read_write_tree("/a") == (FileAccess("readwrite", "/a", recursive=True),)
    assert acc.search_tree("/a") == (FileAccess("search", "/a", recursive=True),)


def test_a_recursive_root_covers_everything_below_it():
    assert accesses_conflict(acc.write_tree("/"), acc.read_file("/etc/x"))


def test_a_recursive_entry_does_not_cover_a_sibling_with_a_common_prefix():
    assert not accesses_conflict(acc.write_tree("/r/src"), acc.read_file("/r/src2/a"))


def test_readers_and_searchers_never_conflict():
    assert not accesses_conflict(acc.search_tree("/r"), acc.read_tree("/r"))


def test_any_conflicting_pair_is_enough():
    left = [*acc.read_file("/a"), *acc.write_file("/b")]
    assert accesses_conflict(left, acc.read_file("/b"))
    assert not accesses_conflict(left, acc.read_file("/a"))
