import json

import pytest

from jobs.settings import Settings, SettingsError


def test_defaults_and_the_slack_api_url_gets_its_trailing_slash():
    settings = Settings.load(SLACK_API_URL="http://127.0.0.1:9/api")
    assert settings.SLACK_API_URL == "http://127.0.0.1:9/api/"
    assert settings.PORT == 3000 and settings.SLACK_COMMAND == "/agent"


def test_require_names_every_missing_setting_in_one_line():
    with pytest.raises(SettingsError) as raised:
        Settings.load().require("LLM_BASE_URL", "LLM_MODEL")
    message = str(raised.value)
    assert "\n" not in message
    assert "LLM_BASE_URL (" in message and "LLM_MODEL (" in message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PORT", "0"),
        ("LLM_CONTEXT_WINDOW", "-5"),
        ("SLACK_COMMAND", "agent"),
        ("REDIS_URL", "x"),
        ("SLACK_BROADCAST_CHANNELS", "C1,#general"),  # a name is not an id: it would match nothing
        ("SLACK_UNFURL", "sometimes"),
    ],
)
def test_invalid_values_name_the_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as raised:
        Settings.load()
    assert str(raised.value).startswith(f"threadline: invalid setting {name}=")


def test_a_json_setting_that_does_not_parse_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("CHANNEL_REPOS", "not json")
    with pytest.raises(SettingsError) as raised:
        Settings.load()
    assert str(raised.value).startswith(
        "threadline: invalid setting CHANNEL_REPOS='not json': expected a JSON object"
    )


def test_id_lists_are_comma_separated(monkeypatch):
    monkeypatch.setenv("SLACK_OPERATORS", "U1, S2 ,")
    assert Settings.load().operators == {"U1", "S2"}
    monkeypatch.setenv("APPROVAL_TOOLS", " grep,read_file ")
    assert Settings.load().approval_tools == {"grep", "read_file"}


def test_approval_tools_add_to_the_declared_ones_and_nothing_is_waived_by_default():
    settings = Settings.load()
    assert settings.approval_tools == frozenset() and settings.approval_waived_tools == frozenset()


KNOWN = ["grep", "http_get", "read_file", "shell"]
DECLARED = ["http_get", "shell"]


@pytest.mark.parametrize("value", ["Shell", "bash", "shell,Bash", " SHELL "])
def test_an_unknown_approval_tool_is_one_line_naming_the_variable_the_unknown_and_the_known(value):
    with pytest.raises(SettingsError) as raised:
        Settings.load(APPROVAL_TOOLS=value).require_known_tools(KNOWN, DECLARED)
    line = str(raised.value)
    unknown = sorted(name.strip() for name in value.split(",") if name.strip() not in KNOWN)
    assert "\n" not in line and line.startswith(f"threadline: invalid setting APPROVAL_TOOLS={value!r}")
    assert f"unknown tool{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} " in line
    assert line.endswith("known tools: grep, http_get, read_file, shell")


@pytest.mark.parametrize(
    ("waived", "named", "said"),
    [
        ("Shell", "", "unknown tool Shell"),
        ("read_file", "", "read_file never asks; only http_get, shell can be waived"),
        ("shell", "shell", "shell is also in APPROVAL_TOOLS"),
    ],
)
def test_a_waiver_must_name_a_declared_tool_and_not_contradict_approval_tools(waived, named, said):
    settings = Settings.load(APPROVAL_WAIVED_TOOLS=waived, APPROVAL_TOOLS=named)
    with pytest.raises(SettingsError) as raised:
        settings.require_known_tools(KNOWN, DECLARED)
    assert str(raised.value).startswith(f"threadline: invalid setting APPROVAL_WAIVED_TOOLS={waived!r}")
    assert said in str(raised.value) and "\n" not in str(raised.value)


def test_known_names_pass_and_the_real_registry_is_what_they_are_checked_against():
    from jobs.turn.tools import check_approval_settings

    settings = Settings.load(APPROVAL_TOOLS="grep", APPROVAL_WAIVED_TOOLS="http_get")
    assert check_approval_settings(settings) is settings
    with pytest.raises(SettingsError) as raised:
        check_approval_settings(Settings.load(APPROVAL_TOOLS="Shell"))
    assert "known tools: Agent, AgentSwarm, Skill, edit_file, glob, grep, http_get" in str(raised.value)


SECRET = "planted-settings-secret-77ab"


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("REDIS_URL", f"{SECRET}@cache.internal:6379", "REDIS_URL='***@cache.internal:6379'"),
        ("LLM_BASE_URL", f"api.example/v1?key={SECRET}", "LLM_BASE_URL='api.example/v1?key=***'"),
        ("CHANNEL_REPOS", f'{{"C1": "https://bot:{SECRET}@git.example/r.git"', "https://bot:***@git.example"),
        ("CHANNEL_REPOS", f'["https://git.example/r.git?access_token={SECRET}"]', "access_token=***"),
    ],
)
def test_an_invalid_value_is_shown_without_its_credentials(monkeypatch, name, value, shown):
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as raised:
        Settings.load()
    line = str(raised.value)
    assert line.startswith(f"threadline: invalid setting {name}=") and SECRET not in line
    assert shown in line


def test_an_invalid_url_setting_given_directly_is_redacted_too():
    with pytest.raises(SettingsError) as raised:
        Settings.load(REDIS_URL=f"default:{SECRET}@cache:6379/0")
    assert str(raised.value).startswith("threadline: invalid setting REDIS_URL='***@cache:6379/0'")


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("{reasoning_effort: high}", "expected a JSON object"),
        ('{"messages": []}', "not messages, tools or stream"),
    ],
)
def test_an_extra_body_that_is_not_json_or_rewrites_the_conversation_stops_the_start(monkeypatch, value, why):
    monkeypatch.setenv("LLM_EXTRA_BODY", value)
    with pytest.raises(SettingsError) as raised:
        Settings.load()
    line = str(raised.value)
    assert line.startswith("threadline: invalid setting LLM_EXTRA_BODY=") and why in line


def test_an_extra_body_reaches_the_model_request(monkeypatch):
    monkeypatch.setenv("LLM_EXTRA_BODY", '{"thinking": {"type": "enabled"}, "reasoning_effort": "max"}')
    assert Settings.load().LLM_EXTRA_BODY == {"thinking": {"type": "enabled"}, "reasoning_effort": "max"}


def test_the_agents_broadcasts_and_unfurls_are_off_unless_set(monkeypatch):
    settings = Settings.load()
    assert settings.broadcast_channels == frozenset() and settings.SLACK_UNFURL is False
    monkeypatch.setenv("SLACK_BROADCAST_CHANNELS", "C0123ABC, G9 ,")
    monkeypatch.setenv("SLACK_UNFURL", "true")
    settings = Settings.load()
    assert settings.broadcast_channels == {"C0123ABC", "G9"} and settings.SLACK_UNFURL is True


def test_a_gitlab_repository_may_be_a_nested_project_and_a_github_one_is_owner_and_name(monkeypatch):
    nested = {"url": "https://gitlab.example/a/b/c.git", "forge": "gitlab", "repo": "group/sub/app"}
    monkeypatch.setenv("CHANNEL_REPOS", json.dumps({"C1": nested}))
    assert Settings.load().CHANNEL_REPOS["C1"].repo == "group/sub/app"
    for forge, repo in (("github", "group/sub/app"), ("gitlab", "group/../app"), ("gitlab", "app")):
        monkeypatch.setenv("CHANNEL_REPOS", json.dumps({"C1": {"url": "u", "forge": forge, "repo": repo}}))
        with pytest.raises(SettingsError, match="invalid setting CHANNEL_REPOS"):
            Settings.load()
