"""HTTP_GET_ALLOW_HOSTS is checked when the settings load: a bad entry stops the process in one line."""

import pytest

from jobs.settings import Settings, SettingsError


def test_an_allowlist_of_names_addresses_and_networks_loads(monkeypatch):
    value = "wiki.internal, 127.0.0.1:8080, [::1]:80, 10.0.0.0/8, fd00::/8"
    monkeypatch.setenv("HTTP_GET_ALLOW_HOSTS", value)
    assert value == Settings.load().HTTP_GET_ALLOW_HOSTS
    assert Settings.load(HTTP_GET_ALLOW_HOSTS="").HTTP_GET_ALLOW_HOSTS == ""


@pytest.mark.parametrize("value", ["wiki internal", "127.0.0.1:99999", "http://wiki.internal", "[::1"])
def test_an_entry_that_is_not_valid_stops_the_process_in_one_line(monkeypatch, value):
    monkeypatch.setenv("HTTP_GET_ALLOW_HOSTS", f"10.0.0.1, {value}")
    with pytest.raises(SettingsError) as raised:
        Settings.load()
    message = str(raised.value)
    assert message.startswith("threadline: invalid setting HTTP_GET_ALLOW_HOSTS='10.0.0.1, ")
    assert "\n" not in message and "host names, IPs or CIDRs" in message
