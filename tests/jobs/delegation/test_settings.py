"""The delegation settings: defaults, and a bad value named in one line."""

from __future__ import annotations

import pytest

from jobs.settings import Settings, SettingsError


def test_defaults():
    settings = Settings.load()
    assert settings.SHARED_SKILLS_DIR is None and settings.AGENT_SWARM_MAX_CONCURRENCY == 4


def test_values_from_the_environment(monkeypatch):
    monkeypatch.setenv("SHARED_SKILLS_DIR", "/srv/skills")
    monkeypatch.setenv("AGENT_SWARM_MAX_CONCURRENCY", "16")
    settings = Settings.load()
    assert str(settings.SHARED_SKILLS_DIR) == "/srv/skills"
    assert settings.AGENT_SWARM_MAX_CONCURRENCY == 16


def test_a_swarm_bound_below_one_is_refused(monkeypatch):
    monkeypatch.setenv("AGENT_SWARM_MAX_CONCURRENCY", "0")
    with pytest.raises(SettingsError) as raised:
        Settings.load()
    assert str(raised.value) == (
        "threadline: invalid setting AGENT_SWARM_MAX_CONCURRENCY='0': expected how many sub-agents of one "
        "AgentSwarm call run at once (an integer ≥ 1)"
    )
