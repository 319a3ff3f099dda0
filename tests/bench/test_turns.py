"""bench.turns' probes run against the product's own logging and metrics set-up."""

from __future__ import annotations

from bench.turns import logging_cost_us, recording_cost_us


def test_the_probes_time_the_products_own_logging_and_metrics() -> None:
    """Each runs in a fresh interpreter through the product's set-up; one that broke (a renamed
    setting, a missing name) would raise here rather than print a figure."""
    for figure in (logging_cost_us("INFO", turns=10), logging_cost_us("WARNING", turns=10)):
        assert figure >= 0.0
    assert recording_cost_us(multiprocess=True, turns=10) >= 0.0
