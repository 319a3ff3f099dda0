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
    [("PORT", "0"), ("LLM_CONTEXT_WINDOW", "-5"), ("SLACK_COMMAND", "agent"), ("REDIS_URL", "x")],
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
    assert Settings.load().approval_tools == {"shell"}
