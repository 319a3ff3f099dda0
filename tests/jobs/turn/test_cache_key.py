"""A session's prompt-cache key (jobs.turn.runner.cache_key_of): one per session, the same in
every turn, and naming nothing of Slack's to the provider."""

from __future__ import annotations

from jobs.keys import SessionKey
from jobs.turn.runner import cache_key_of


def test_one_key_per_session_that_names_no_team_channel_or_thread():
    first = SessionKey(team="T111", channel="C111", thread_ts="1700000000.000100")
    other = SessionKey(team="T111", channel="C111", thread_ts="1700000000.000200")
    assert cache_key_of(first) == cache_key_of(SessionKey.parse(str(first)))
    assert cache_key_of(first) != cache_key_of(other)
    assert not any(part in cache_key_of(first) for part in ("T111", "C111", "1700000000"))
