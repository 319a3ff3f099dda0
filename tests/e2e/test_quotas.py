"""Quotas through the real web process and workers: each lets up to its limit through, refuses
the first request over it (an ephemeral line, or a tool error the model reads) and records
nothing for it; where it is a rate, the window passing lets the next one in. Replayed commands
and clicks act once."""

from __future__ import annotations

from pathlib import Path

from redis import Redis

from agent.testing import FakeLLM, calls, text
from gateway.render.buttons import ButtonValue
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import Stack
from jobs.control import cancel_requested_by
from jobs.keys import RECORD_FIELD, SessionKey, wire_key
from tests.e2e.agents import Agents, start_stack, subagent_keys, tool_results, wait_for_answer
from tests.e2e.sessions import link, open_session, put_in_state, response_url, turn_ended
from tests.e2e.test_inbound import _bot_reply, user_texts
from tests.e2e.test_inbound import answered as inbound_answered
from tests.e2e.test_live_turns import card_with, click, state
from tests.e2e.test_skill_commands import add_skills, say
from tests.e2e.turns import Session
from tests.polling import wait_for
from tests.rq_state import waiting
from tests.slack_events import block_action, command, mention, message
from tests.thread_view import bot_messages, ephemerals, responses

SLOW_DOWN = "Slow down"  # part of the per-person refusal
CHANNEL_FULL = "in this channel in the last minute"  # part of the per-channel refusal
TOO_MANY_AT_ONCE = "You already have 2 sessions working"  # part of the sessions-at-once refusal
NOT_RESUMED = "Not resumed: you already have 2 sessions working"  # the resume's refusal
ASKING = {"APPROVAL_TOOLS": "shell", "APPROVAL_WAIVED_TOOLS": ""}  # a shell call parks its turn


def mention_new_thread(stack: Stack, fake_slack: FakeSlack, user: str, channel: str = "C111") -> SessionKey:
    root = fake_slack.add_user_message(channel, f"<@{BOT_USER_ID}> hi", user=user)
    assert stack.send_event(mention("hi", ts=root["ts"], user=user, channel=channel)).status_code == 200
    return SessionKey(team="T111", channel=channel, thread_ts=root["ts"])


def answered(fake_slack: FakeSlack, key: SessionKey) -> None:
    wait_for(lambda: bot_messages(fake_slack, key.channel, key.thread_ts), what="the answer")


def nothing_recorded(redis: Redis, key: SessionKey) -> bool:
    """No key of the session, and no turn queued (every earlier turn has been answered)."""
    return not redis.keys(f"tl:{{{key}}}*") and waiting(redis) == 0


def window_passes(redis: Redis, pattern: str) -> None:
    """As if the window ended: the counter expires now (no sleeping)."""
    for counter in redis.keys(pattern):
        redis.delete(counter)


def test_mentions_per_person_per_minute(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(QUOTA_MENTIONS_PER_USER_PER_MINUTE="2")
    for _ in range(2):
        answered(fake_slack, mention_new_thread(stack, fake_slack, "W222"))
    over = mention_new_thread(stack, fake_slack, "W222")
    again = mention_new_thread(stack, fake_slack, "W222")  # a flood is told once per window
    told = ephemerals(fake_slack, "W222")
    assert len(told) == 1 and told[0]["text"].startswith(SLOW_DOWN)
    assert nothing_recorded(redis, over) and nothing_recorded(redis, again) and len(fake_llm.requests) == 2
    answered(fake_slack, mention_new_thread(stack, fake_slack, "W333"))  # someone else is not limited

    window_passes(redis, "tl:quota:T111:user:W222")
    answered(fake_slack, mention_new_thread(stack, fake_slack, "W222"))
    assert len(ephemerals(fake_slack, "W222")) == 1


def test_mentions_per_channel_per_minute(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(QUOTA_MENTIONS_PER_CHANNEL_PER_MINUTE="2")
    for user in ("W222", "W333"):
        answered(fake_slack, mention_new_thread(stack, fake_slack, user))
    over = mention_new_thread(stack, fake_slack, "W444")
    assert CHANNEL_FULL in ephemerals(fake_slack, "W444")[0]["text"]
    assert nothing_recorded(redis, over) and len(fake_llm.requests) == 2
    answered(fake_slack, mention_new_thread(stack, fake_slack, "W444", channel="C222"))

    window_passes(redis, "tl:quota:T111:channel:C111")
    answered(fake_slack, mention_new_thread(stack, fake_slack, "W444"))


def test_bot_turns_per_thread_per_hour_break_a_loop(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(SLACK_ALLOWED_BOTS="B999", QUOTA_BOT_TURNS_PER_THREAD_PER_HOUR="2")
    key = open_session(stack, fake_slack, fake_llm)
    root = {"ts": key.thread_ts}
    for count in (2, 3):
        assert stack.send_event(_bot_reply(root, fake_slack.next_ts(), "B999")).status_code == 200
        inbound_answered(fake_slack, "C111", key.thread_ts, count)
        wait_for(lambda: turn_ended(redis, key), what="the turn to end")
    requests = len(fake_llm.requests)
    assert stack.send_event(_bot_reply(root, fake_slack.next_ts(), "B999")).status_code == 200
    bot_said = [said for said in user_texts(redis, key) if said.startswith("<@B999>")]
    assert len(bot_said) == 2 and len(fake_llm.requests) == requests
    assert waiting(redis) == 0 and not ephemerals(fake_slack)

    window_passes(redis, "tl:quota:T111:bot:*")
    assert stack.send_event(_bot_reply(root, fake_slack.next_ts(), "B999")).status_code == 200
    inbound_answered(fake_slack, "C111", key.thread_ts, 4)


def parked_session(stack: Stack, fake_slack: FakeSlack, fake_llm: FakeLLM, redis: Redis) -> SessionKey:
    """A session W222 starts whose turn waits for approval of a shell call: working, no worker held."""
    fake_llm.script(calls(("c1", "shell", {"command": "true"})))
    key = mention_new_thread(stack, fake_slack, "W222")
    wait_for(lambda: state(redis, key) == "awaiting_approval", what="the parked turn")
    return key


def on_wire(redis: Redis, key: SessionKey, words: str) -> bool:
    """`words` were recorded in the session (a reply to a parked turn is not folded into the
    context until the call's result is, so the raw wire is where it shows)."""
    return any(words in record[RECORD_FIELD.encode()].decode() for _, record in redis.xrange(wire_key(key)))


def test_sessions_working_at_once_per_person(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(QUOTA_SESSIONS_PER_USER="2", **ASKING)
    first, second = (parked_session(stack, fake_slack, fake_llm, redis) for _ in range(2))
    over = mention_new_thread(stack, fake_slack, "W222")
    told = ephemerals(fake_slack, "W222")
    assert len(told) == 1 and told[0]["text"].startswith(TOO_MANY_AT_ONCE)
    assert nothing_recorded(redis, over) and len(fake_llm.requests) == 2

    answered(fake_slack, mention_new_thread(stack, fake_slack, "W333"))  # someone else is not limited
    steer = fake_slack.add_user_message("C111", "use make", user="W222", thread_ts=second.thread_ts)
    reply = message("use make", ts=steer["ts"], thread_ts=second.thread_ts)
    assert stack.send_event(reply).status_code == 200  # joins work already counted
    wait_for(lambda: on_wire(redis, second, "use make"), what="the reply")

    assert click(stack, fake_slack, card_with(fake_slack, first, "Deny"), "Deny") == "Denied `shell`."
    wait_for(lambda: state(redis, first) == "idle", what="the first session to end")
    answered(fake_slack, mention_new_thread(stack, fake_slack, "W222"))
    assert len(ephemerals(fake_slack, "W222")) == 1


def test_a_resume_is_a_session_working_and_counts_against_the_person(make_stack, fake_slack, fake_llm, redis):
    stack = make_stack(QUOTA_SESSIONS_PER_USER="2", **ASKING)
    stopped = parked_session(stack, fake_slack, fake_llm, redis)
    say(stack, fake_slack, stopped, "!stop")
    wait_for(lambda: state(redis, stopped) == "cancelled", what="the stop")
    first, _second = (parked_session(stack, fake_slack, fake_llm, redis) for _ in range(2))

    say(stack, fake_slack, stopped, "!resume")
    assert ephemerals(fake_slack, "W222")[-1]["text"].startswith(
        "Not resumed: you already have 2 sessions working"
    )
    assert state(redis, stopped) == "cancelled" and waiting(redis) == 0
    assert len(fake_llm.requests) == 3

    assert click(stack, fake_slack, card_with(fake_slack, first, "Deny"), "Deny") == "Denied `shell`."
    wait_for(lambda: state(redis, first) == "idle", what="the first session to end")
    fake_llm.script(calls(("c2", "shell", {"command": "true"})))
    say(stack, fake_slack, stopped, "!resume")
    assert ephemerals(fake_slack, "W222")[-1]["text"].startswith("Resumed")
    wait_for(lambda: state(redis, stopped) == "awaiting_approval", what="the resumed turn to park")
    mention_new_thread(stack, fake_slack, "W222")
    assert ephemerals(fake_slack, "W222")[-1]["text"].startswith(TOO_MANY_AT_ONCE)


def test_a_replayed_skill_command_adds_one_input(stack, fake_slack, fake_llm: FakeLLM, redis, tmp_path):
    key = open_session(stack, fake_slack, fake_llm)
    add_skills(tmp_path / "workspaces", key)
    fake_llm.script(text("release cut"))
    signed = command(
        f"skill release {link(fake_slack, key)} v2",
        response_url=response_url(fake_slack),
        trigger_id="9.9.replay",
    )
    first, again = stack.send_command(signed).json()["text"], stack.send_command(signed).json()["text"]
    assert first.startswith('Loaded the skill "release"')
    assert again == "That command was already received; it was not done again."
    inbound_answered(fake_slack, "C111", key.thread_ts, 2)
    skills = [said for said in user_texts(redis, key) if "Cut release v2 now." in said]
    assert len(skills) == 1


def test_a_replayed_click_acts_once(stack, fake_slack, fake_llm, redis):
    key = open_session(stack, fake_slack, fake_llm)
    put_in_state(redis, key, "running")
    click = block_action(
        "tl_stop",
        ButtonValue(session=key).encode(),
        response_url=response_url(fake_slack),
        action_ts="1.000001",
    )
    for _ in range(2):
        assert stack.send_interaction(click).status_code == 200
    told = [r.get("text") for r in responses(fake_slack)]
    assert told[0].startswith("Stopping the running turn")
    assert told[1:] == ["That click was already received; it was not done again."]
    assert cancel_requested_by(redis, key) == "W222"


# -- sub-agents: refusals are the tool's error result --------------------------------------------


def delegating_stack(
    tmp_path: Path, redis_url: str, fake_slack: FakeSlack, fake_llm: FakeLLM, **env: str
) -> Stack:
    return start_stack(tmp_path, redis_url, fake_slack.api_url, fake_llm, workers=2, **env)


def test_swarm_items_per_call(tmp_path, redis, redis_url, fake_slack, fake_llm):
    agents = Agents()
    swarm = {"description": "letters", "prompt_template": "ITEM {{item}}"}
    agents.add(
        "SWARM-PARENT",
        calls(("s1", "AgentSwarm", {**swarm, "items": ["a", "b", "c"]})),
        calls(("s2", "AgentSwarm", {**swarm, "items": ["a", "b"]})),
        text("parent done"),
    )
    agents.add("ITEM ", text("item done"))
    fake_llm.default = agents
    stack = delegating_stack(tmp_path, redis_url, fake_slack, fake_llm, QUOTA_SWARM_ITEMS_PER_CALL="2")
    try:
        session = Session(redis, fake_slack, "SWARM-PARENT")
        wait_for_answer(session, "parent done")
        first = tool_results(agents.of("SWARM-PARENT")[1])["s1"]
        assert "3 items; one AgentSwarm call may have at most 2" in first
        assert 'Swarm "letters": 2 items, 2 succeeded' in tool_results(agents.of("SWARM-PARENT")[2])["s2"]
        assert len(subagent_keys(redis, session.key)) == 2
    finally:
        stack.stop()


def test_subagents_started_per_turn(tmp_path, redis, redis_url, fake_slack, fake_llm):
    agents = Agents()
    agents.add(
        "PARENT",
        calls(*[(f"a{i}", "Agent", {"prompt": f"CHILD-{i}: hi", "description": f"c{i}"}) for i in (1, 2, 3)]),
        text("parent done"),
    )
    for i in (1, 2, 3):
        agents.add(f"CHILD-{i}", text(f"child {i} done"))
    fake_llm.default = agents
    stack = delegating_stack(tmp_path, redis_url, fake_slack, fake_llm, QUOTA_SUBAGENTS_PER_TURN="2")
    try:
        session = Session(redis, fake_slack, "PARENT")
        wait_for_answer(session, "parent done")
        results = tool_results(agents.of("PARENT")[1])
        refused = [r for r in results.values() if "may start at most 2" in r]
        assert len(results) == 3 and len(refused) == 1
        assert len(subagent_keys(redis, session.key)) == 2
    finally:
        stack.stop()


def test_subagents_alive_per_root(tmp_path, redis, redis_url, fake_slack, fake_llm):
    agents = Agents()
    agents.add(
        "PARENT",
        calls(*[(f"a{i}", "Agent", {"prompt": f"CHILD-{i}: hi", "description": f"c{i}"}) for i in (1, 2)]),
        calls(("a3", "Agent", {"prompt": "CHILD-3: hi", "description": "c3"})),
        text("parent done"),
    )
    for i in (1, 2, 3):
        agents.add(f"CHILD-{i}", text(f"child {i} done"))
    fake_llm.default = agents
    stack = delegating_stack(tmp_path, redis_url, fake_slack, fake_llm, QUOTA_SUBAGENTS_ALIVE_PER_ROOT="1")
    try:
        session = Session(redis, fake_slack, "PARENT")
        wait_for_answer(session, "parent done")
        results = tool_results(agents.of("PARENT")[1])
        refused = [r for r in results.values() if "already working in this session's tree" in r]
        assert len(results) == 2 and len(refused) == 1
        assert "child 3 done" in tool_results(agents.of("PARENT")[2])["a3"]  # the first one had ended
        assert len(subagent_keys(redis, session.key)) == 2
    finally:
        stack.stop()


def skill_inputs(redis: Redis, key: SessionKey) -> list[str]:
    return [said for said in user_texts(redis, key) if "Cut release v2 now." in said]


def test_a_skill_in_the_thread_counts_against_the_person_s_rate(
    make_stack, fake_slack, fake_llm, redis, tmp_path
):
    """`!skill` gives the model the person's input as a message does: a flood of skills is
    refused like a flood of messages, not a way around the quota."""
    stack = make_stack(QUOTA_MENTIONS_PER_USER_PER_MINUTE="1")
    key = mention_new_thread(stack, fake_slack, "W222")
    answered(fake_slack, key)
    wait_for(lambda: state(redis, key) == "idle", what="the first turn to end")
    add_skills(tmp_path / "workspaces", key)
    say(stack, fake_slack, key, "!skill release v2", user="W222")
    wait_for(lambda: ephemerals(fake_slack, "W222"), what="the refusal")
    assert ephemerals(fake_slack, "W222")[-1]["text"].startswith(SLOW_DOWN)
    assert skill_inputs(redis, key) == [] and len(fake_llm.requests) == 1

    window_passes(redis, "tl:quota:T111:user:W222")
    say(stack, fake_slack, key, "!skill release v2", user="W222")
    wait_for(lambda: len(fake_llm.accepted()) == 2, what="the skill's turn")
    assert len(skill_inputs(redis, key)) == 1


def test_a_skill_command_is_refused_once_the_person_s_budget_is_spent(
    make_stack, fake_slack, fake_llm, redis, tmp_path
):
    stack = make_stack(BUDGET_TOKENS_PER_USER_PER_DAY="1")
    key = mention_new_thread(stack, fake_slack, "W222")
    answered(fake_slack, key)
    wait_for(lambda: state(redis, key) == "idle", what="the first turn to end")
    add_skills(tmp_path / "workspaces", key)
    said = stack.send_command(
        command(
            f"skill release {link(fake_slack, key)} v2", user="W222", response_url=response_url(fake_slack)
        )
    ).json()["text"]
    assert said.startswith("You have used today's model budget")
    assert skill_inputs(redis, key) == [] and len(fake_llm.requests) == 1
