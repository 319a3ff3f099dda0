from __future__ import annotations

import pytest

from gateway.delivery.pacing import BURST_MS, POST_INTERVAL_MS, reserve_post


def test_a_short_burst_goes_at_once_then_about_one_post_a_second(redis):
    waits = [reserve_post(redis, "T1", "C1") for _ in range(6)]
    burst = BURST_MS // POST_INTERVAL_MS + 1
    assert waits[:burst] == [0.0] * burst
    for index, wait in enumerate(waits[burst:], start=1):
        assert wait == pytest.approx(index * POST_INTERVAL_MS / 1000, abs=0.05)


def test_channels_are_paced_separately(redis):
    for _ in range(5):
        reserve_post(redis, "T1", "C1")
    assert reserve_post(redis, "T1", "C2") == 0.0
    assert reserve_post(redis, "T2", "C1") == 0.0
