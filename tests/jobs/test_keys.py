import inspect

from jobs import keys
from jobs.keys import SessionKey
from jobs.lua import delete_if_holds

KEY = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")


def session_keys(key: SessionKey) -> dict[str, str]:
    """Every key function of one session, called with placeholder arguments where it takes more."""
    made = {}
    for name, function in inspect.getmembers(keys, inspect.isfunction):
        parameters = list(inspect.signature(function).parameters)
        if name.endswith("_key") and parameters and parameters[0] in ("key", "parent", "root"):
            made[name] = function(key, *("x" for _ in parameters[1:]))
    return made


def test_a_sessions_keys_are_distinct_and_share_its_hash_tag():
    made = session_keys(KEY)
    assert len(made) >= 25
    assert len(set(made.values())) == len(made)
    assert all(key.startswith("tl:{T1:C1:1700000000.000100}:") for key in made.values())


def test_a_sub_agent_has_keys_of_its_own():
    child = KEY.subagent("call_1")
    assert set(session_keys(KEY).values()).isdisjoint(session_keys(child).values())


def test_delete_if_holds_deletes_only_the_holders_value(redis):
    redis.set("tests:held", "mine")
    assert not delete_if_holds(redis, "tests:held", "theirs") and redis.get("tests:held") == b"mine"
    assert delete_if_holds(redis, "tests:held", "mine") and not redis.exists("tests:held")
    assert not delete_if_holds(redis, "tests:held", "mine")
