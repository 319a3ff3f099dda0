"""Skills from Slack through signed requests: `!skill` in a thread (and in a mention),
`/agent skill <name> <link> [args]`, `/agent skills`."""

from __future__ import annotations

from pathlib import Path

from agent.testing import FakeLLM, text
from gateway.sandbox.fake_slack import BOT_USER_ID, FakeSlack
from gateway.sandbox.stack import Stack
from jobs.keys import SessionKey
from jobs.session.store import SessionStore
from jobs.settings import Settings
from jobs.turn.workspace import workspace_path
from tests.e2e.agents import content_text
from tests.e2e.sessions import link, open_session, response_url
from tests.polling import wait_for
from tests.slack_events import command, mention, message
from tests.thread_view import ephemerals, thread_texts

RELEASE = (
    "---\nname: release\ndescription: cut a release\ndisable-model-invocation: true\n---\nCut release $0 now."
)
BROKEN = "---\nname: broken\ndescription: x\ntype: agent\n---\n"


def add_skills(workspaces: Path, key: SessionKey) -> None:
    root = workspace_path(Settings(AGENT_WORKDIR=workspaces), key) / ".threadline" / "skills"
    for name, body in (("release", RELEASE), ("broken", BROKEN)):
        (root / name).mkdir(parents=True)
        (root / name / "SKILL.md").write_text(body)


def run(stack: Stack, fake_slack: FakeSlack, words: str, user: str = "W222") -> str:
    response = stack.send_command(command(words, user=user, response_url=response_url(fake_slack)))
    assert response.status_code == 200
    return response.json()["text"]


def say(stack: Stack, fake_slack: FakeSlack, key: SessionKey, words: str, user: str = "W222") -> None:
    sent = fake_slack.add_user_message(key.channel, words, user=user, thread_ts=key.thread_ts)
    event = message(words, ts=sent["ts"], thread_ts=key.thread_ts, user=user)
    assert stack.send_event(event).status_code == 200


def last_user_text(fake_llm: FakeLLM) -> str:
    return content_text(fake_llm.accepted()[-1]["messages"][-1])


def test_skill_in_the_thread_runs_a_turn_with_the_skill(
    stack, fake_slack, fake_llm: FakeLLM, redis, tmp_path
):
    key = open_session(stack, fake_slack, fake_llm)
    add_skills(tmp_path / "workspaces", key)
    fake_llm.script(text("release cut"))
    say(stack, fake_slack, key, "!skill release v2.1")
    wait_for(lambda: "release cut" in thread_texts(fake_slack, key.channel, key.thread_ts), what="the answer")
    assert ephemerals(fake_slack, "W222")[-1]["text"] == 'Loaded the skill "release". Started a turn with it.'
    sent = last_user_text(fake_llm)
    assert sent.startswith("<@W222> asked for the skill below.") and "Cut release v2.1 now." in sent
    wire_texts = [str(r.get("message", {}).get("content")) for r in SessionStore(redis, key).read_wire()]
    assert not any("!skill release" in t for t in wire_texts)  # the command itself is not input


def test_skill_words_that_name_nothing_are_answered(stack, fake_slack, fake_llm: FakeLLM, tmp_path):
    key = open_session(stack, fake_slack, fake_llm)
    add_skills(tmp_path / "workspaces", key)
    say(stack, fake_slack, key, "!skill")
    say(stack, fake_slack, key, "!skill nope")
    told = [e["text"] for e in ephemerals(fake_slack, "W222")]
    assert told[0].startswith("Which skill? In the thread: `!skill <name> [args]`")
    assert told[1] == 'There is no skill "nope" here. `/agent skills` lists them.'


def test_a_mention_with_a_skill_starts_a_session_with_it(stack, fake_slack, fake_llm: FakeLLM, tmp_path):
    root = fake_slack.add_user_message("C111", f"<@{BOT_USER_ID}> !skill release v3", user="W222")
    key = SessionKey(team="T111", channel="C111", thread_ts=root["ts"])
    add_skills(tmp_path / "workspaces", key)
    fake_llm.script(text("v3 is out"))
    assert stack.send_event(mention("!skill release v3", ts=root["ts"])).status_code == 200
    wait_for(lambda: "v3 is out" in thread_texts(fake_slack, key.channel, key.thread_ts), what="the answer")
    assert "Cut release v3 now." in last_user_text(fake_llm)


def test_the_slash_command_gives_a_session_a_skill(stack, fake_slack, fake_llm: FakeLLM, tmp_path):
    key = open_session(stack, fake_slack, fake_llm)
    add_skills(tmp_path / "workspaces", key)
    fake_llm.script(text("cut it"))
    answer = run(stack, fake_slack, f'skill release {link(fake_slack, key)} "v4 beta" --dry')
    assert answer == 'Loaded the skill "release". Started a turn with it.'
    wait_for(lambda: "cut it" in thread_texts(fake_slack, key.channel, key.thread_ts), what="the answer")
    assert "Cut release v4 beta now." in last_user_text(fake_llm)  # quotes group the first argument


def test_the_slash_command_explains_what_is_missing(stack, fake_slack, fake_llm: FakeLLM):
    key = open_session(stack, fake_slack, fake_llm)
    assert run(stack, fake_slack, "skill release").startswith("Which skill, and for which thread?")
    assert "is not a link to a Slack thread" in run(stack, fake_slack, "skill release https://example.com/x")
    nowhere = "https://x.slack.com/archives/C111/p1700000000000100"
    assert run(stack, fake_slack, f"skill release {nowhere}") == "There is no agent session in that thread."
    refused = run(stack, fake_slack, f"skill broken {link(fake_slack, key)}")
    assert refused == 'There is no skill "broken" here. `/agent skills` lists them.'


def test_skills_lists_a_sessions_skills_and_the_files_that_could_not_be_read(
    stack, fake_slack, fake_llm: FakeLLM, tmp_path
):
    key = open_session(stack, fake_slack, fake_llm)
    add_skills(tmp_path / "workspaces", key)
    answers = [run(stack, fake_slack, f"skills {link(fake_slack, key)}"), run(stack, fake_slack, "skills")]
    for answer in answers:
        assert "• `release`: cut a release _(people only, workspace)_" in answer
        assert "Skills that could not be read:" in answer
        assert 'broken/SKILL.md: Skill type "agent" is not supported; only "prompt", "inline"' in answer
    assert run(stack, fake_slack, "skills", user="W999").startswith("No skills here yet.")
    assert "`/agent skill <name> <link> [args]`" in run(stack, fake_slack, "help")


def test_only_allowed_people_invoke_skills(make_stack, fake_slack, fake_llm: FakeLLM, tmp_path):
    stack = make_stack(SLACK_ALLOWED_USERS="W222")
    key = open_session(stack, fake_slack, fake_llm)
    add_skills(tmp_path / "workspaces", key)
    say(stack, fake_slack, key, "!skill release v9", user="W333")
    assert ephemerals(fake_slack, "W333")[-1]["text"].startswith("You can't use the agent here")
