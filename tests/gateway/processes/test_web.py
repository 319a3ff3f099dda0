"""The web process's gunicorn setup: what each worker does once the app is loaded."""

from __future__ import annotations

import gc

from gateway.processes.web import _Gunicorn
from gateway.slack_identity import SlackIdentity
from jobs.settings import Settings


def test_each_web_worker_keeps_what_loading_made_out_of_later_collections() -> None:
    settings = Settings(SLACK_SIGNING_SECRET="s", SLACK_BOT_TOKEN="xoxb-t")
    server = _Gunicorn(settings, SlackIdentity(settings))
    loaded = [[] for _ in range(1000)]  # stands for the app's modules, Bolt and pydantic schemas
    try:
        server.cfg.post_worker_init(None)
        assert gc.get_freeze_count() >= len(loaded)
        assert not any(tracked is loaded for tracked in gc.get_objects())  # no collection walks it
    finally:
        gc.unfreeze()
