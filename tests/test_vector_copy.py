import pytest

from tests.vectors import DATA, SHARED_VECTORS


def test_vendored_vectors_match_the_shared_spec():
    if not SHARED_VECTORS.exists():
        pytest.skip("../shared/spec is not beside this checkout")
    assert (DATA / "vectors.json").read_bytes() == SHARED_VECTORS.read_bytes()
