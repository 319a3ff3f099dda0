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
