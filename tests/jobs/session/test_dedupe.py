from __future__ import annotations

from jobs.session.dedupe import DEDUPE_TTL_S, claim, delivery_keys, release


def test_a_retry_with_the_same_event_id_is_a_duplicate(redis):
    keys = delivery_keys("T1", "Ev1", "C1", "1.1")
    assert claim(redis, keys).fresh is True
    assert claim(redis, keys).fresh is False


def test_the_message_twin_of_a_mention_is_a_duplicate(redis):
    assert claim(redis, delivery_keys("T1", "EvMention", "C1", "1.2")).fresh is True
    assert claim(redis, delivery_keys("T1", "EvMessage", "C1", "1.2")).fresh is False


def test_the_same_message_in_another_workspace_is_new(redis):
    assert claim(redis, delivery_keys("T1", "Ev1", "C1", "1.3")).fresh is True
    assert claim(redis, delivery_keys("T2", "Ev1", "C1", "1.3")).fresh is True


def test_keys_live_at_least_an_hour(redis):
    keys = delivery_keys("T1", "Ev9", "C1", "1.4")
    claim(redis, keys)
    assert all(redis.ttl(key) >= 3600 and redis.ttl(key) <= DEDUPE_TTL_S for key in keys)


def test_released_keys_let_slacks_retry_through(redis):
    keys = delivery_keys("T1", "Ev2", "C1", "1.5")
    release(redis, claim(redis, keys))
    assert claim(redis, keys).fresh is True


def test_releasing_a_duplicate_leaves_the_first_claim_alone(redis):
    keys = delivery_keys("T1", "Ev3", "C1", "1.6")
    claim(redis, keys)
    twin = claim(redis, delivery_keys("T1", "Ev4", "C1", "1.6"))
    release(redis, twin)
    assert claim(redis, keys).fresh is False
