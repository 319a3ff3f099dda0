"""The delivery job when another run holds the thread's lock: real Redis, the fake Slack over HTTP."""

from __future__ import annotations

import pytest

from gateway.delivery.job import WATCHDOG_S, Delivery
from gateway.delivery.lock import DeliveryLock
from gateway.delivery.timers import deliver_later
from gateway.sandbox.fake_slack import FakeSlack
from gateway.sandbox.stack import BOT_TOKEN
from gateway.slack_client import web_client
from jobs.keys import SessionKey, deliver_again_key, delivering_key, timer_key
from jobs.session.notices import InfoNotice
from jobs.session.store import SessionStore
from jobs.settings import Settings


@pytest.fixture
def store(redis, slack: FakeSlack) -> SessionStore:
    root = slack.add_user_message("C111", "<@UBOT0001> go", user="W222")
    store = SessionStore(redis, SessionKey(team="T111", channel="C111", thread_ts=root["ts"]))
    store.post_notice(InfoNotice(text="something to post"))
    return store


def deliver(store: SessionStore, slack: FakeSlack) -> int:
    settings = Settings.load(SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_API_URL=slack.api_url)
    return Delivery(store, web_client(settings, retry_handlers=[])).run()


def test_a_run_finding_the_lock_taken_asks_the_holder_and_schedules_a_sweep(store, slack, redis):
    with DeliveryLock(redis, delivering_key(store.key)) as holder:
        assert holder.acquire()
        assert deliver(store, slack) == 0

    assert redis.exists(deliver_again_key(store.key))  # the holder looks again before it returns
    assert redis.exists(timer_key(store.key, "sweep"))  # and if it died, the sweep after its lock does
    assert not slack.calls("chat.postMessage")


def test_no_sweep_while_the_holders_watchdog_is_still_to_come(store, slack, redis):
    deliver_later(redis, store.key, "watchdog", WATCHDOG_S)  # the holder's, from the start of its run
    with DeliveryLock(redis, delivering_key(store.key)) as holder:
        assert holder.acquire()
        assert deliver(store, slack) == 0

    assert redis.exists(deliver_again_key(store.key))
    assert not redis.exists(timer_key(store.key, "sweep"))  # the watchdog runs later in any case
