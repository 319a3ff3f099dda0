"""The design docs stay true to the tree: cited vectors exist, named modules exist, every package
is on the map.

docs/context-core.md cites the vectors of tests/data/vectors.json by id (`proj-04`) and
docs/architecture.md names modules by path (`jobs/turn/runner.py`, `gateway/delivery/`) or
dotted name (`jobs.turn.runner.run_turn`). A rename that forgets the docs fails here.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from agent.compaction import should_compact
from jobs.settings import EXPECTED
from tests.vectors import VECTORS_FILE, all_ids

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
ARCHITECTURE = DOCS / "architecture.md"
CONTEXT_CORE = DOCS / "context-core.md"
# The shared spec the vectors were copied from, beside the checkout when there is one.
SHARED_VECTORS = ROOT.parent / "shared" / "spec" / "vectors.json"

CODE_PACKAGES = ("agent", "jobs", "gateway")
TOP_DIRS = (*CODE_PACKAGES, "tests", "bench", "docs")
# `proj-04`, `acc-10m-01`: lowercase words joined by dashes, ending in a two-digit number.
VECTOR_ID = re.compile(r"`([a-z][a-z0-9]*(?:-[a-z0-9]+)*-\d{2})`")
REPO_PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(TOP_DIRS)})/[\w./-]*)")
DOTTED_NAME = re.compile(rf"(?<![\w./-])((?:{'|'.join(CODE_PACKAGES)})(?:\.\w+)+)")


def cited_vector_ids() -> list[str]:
    return VECTOR_ID.findall(CONTEXT_CORE.read_text())


def named_paths(doc: Path) -> set[str]:
    return {match.rstrip(".") for match in REPO_PATH.findall(doc.read_text())}


def named_dotted(doc: Path) -> set[str]:
    return set(DOTTED_NAME.findall(doc.read_text()))


def test_vector_ids_are_unique():
    ids = all_ids()
    assert len(ids) == len(set(ids))


def test_every_vector_is_cited_in_context_core():
    assert set(all_ids()) - set(cited_vector_ids()) == set()


def test_every_vector_cited_in_context_core_exists():
    assert set(cited_vector_ids()) - set(all_ids()) == set()


@pytest.mark.parametrize("doc", [ARCHITECTURE, CONTEXT_CORE], ids=lambda doc: doc.name)
def test_every_path_a_doc_names_exists(doc: Path):
    missing = sorted(path for path in named_paths(doc) if not (ROOT / path).exists())
    assert missing == []


@pytest.mark.parametrize("doc", [ARCHITECTURE, CONTEXT_CORE], ids=lambda doc: doc.name)
def test_every_dotted_name_a_doc_names_resolves(doc: Path):
    unresolved = sorted(name for name in named_dotted(doc) if not resolves(name))
    assert unresolved == []


def test_the_module_map_names_every_package():
    named = {path.rstrip("/") for path in named_paths(ARCHITECTURE)}
    inits = [init for package in CODE_PACKAGES for init in (ROOT / package).rglob("__init__.py")]
    packages = {str(init.parent.relative_to(ROOT)) for init in inits}
    assert packages - named == set()


def test_the_path_patterns_find_what_they_should(tmp_path: Path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "See `jobs/turn/runner.py`, gateway/delivery/ and agent/fold.py. Not xagent/fold.py.\n"
        "`jobs.turn.runner.run_turn` and `proj-04`, `acc-10m-01`, not `utf-8` or `max_recent`."
    )
    assert named_paths(doc) == {"jobs/turn/runner.py", "gateway/delivery/", "agent/fold.py"}
    assert named_dotted(doc) == {"jobs.turn.runner.run_turn"}
    assert VECTOR_ID.findall(doc.read_text()) == ["proj-04", "acc-10m-01"]
    assert resolves("jobs.turn.runner.run_turn") and not resolves("jobs.turn.runner.no_such_name")


def test_the_vectors_match_the_shared_spec():
    if not SHARED_VECTORS.exists():
        pytest.skip("no shared spec beside this checkout")
    assert VECTORS_FILE.read_bytes() == SHARED_VECTORS.read_bytes()


# -- resolving dotted names ------------------------------------------------------------------


def resolves(dotted: str) -> bool:
    """`a.b.c.name`: the longest prefix that is a module or package exists, goes deeper than the
    top package, and the next part (if any) is defined at that module's top level."""
    parts = dotted.split(".")
    for length in range(len(parts), 1, -1):
        source = _module_file(parts[:length])
        if source is None:
            continue
        rest = parts[length:]
        return not rest or rest[0] in _top_level_names(source)
    return False


def _module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _top_level_names(source: Path) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names)


def test_the_readme_states_the_compaction_trigger_the_code_uses():
    window = 128_000
    trigger = next(used for used in range(0, window, 500) if should_compact(used, window))
    readme = (ROOT / "README.md").read_text()
    assert f"{trigger:,} of {window:,}" in readme


def test_the_readme_and_the_settings_errors_name_the_same_example_model():
    """One example model id, in the README's settings table and in the line a wrong setting prints:
    a retired id in either (it was `kimi-k2-0905-preview`) sends a person to a model that is gone."""
    readme_row = next(
        line for line in (ROOT / "README.md").read_text().splitlines() if "| `LLM_MODEL` |" in line
    )
    shown = readme_row.rsplit("e.g. `", 1)[1].split("`", 1)[0]
    assert EXPECTED["LLM_MODEL"].endswith(f"e.g. {shown}")
    assert "preview" not in shown
