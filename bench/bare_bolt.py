"""The floor for bench.gateway: a Bolt app that only acknowledges, served exactly like `threadline web`.

    SLACK_SIGNING_SECRET=… SLACK_BOT_TOKEN=… SLACK_API_URL=… PORT=… python -m bench.bare_bolt

Same gunicorn setup (it subclasses the web process's own gunicorn application, so workers,
threads, worker class and timeouts cannot drift apart), same Bolt options threadline uses
(signature check, `process_before_response`), same Slack client (its one `auth.test` goes to
the same fake). What is left between the two is threadline's own work per event.
"""

from __future__ import annotations

from slack_bolt import Ack, App
from slack_bolt.adapter.wsgi import SlackRequestHandler

from gateway.processes.web import WSGIApp, _Gunicorn, routes
from gateway.slack_client import web_client
from gateway.slack_identity import SlackIdentity
from jobs.settings import Settings


def bare_app(settings: Settings) -> App:
    app = App(
        signing_secret=settings.SLACK_SIGNING_SECRET,
        client=web_client(settings),
        process_before_response=True,
        token_verification_enabled=False,
    )

    @app.event("app_mention")
    def acknowledge(ack: Ack) -> None:
        ack()

    return app


def bare_wsgi(settings: Settings) -> WSGIApp:
    return routes(SlackRequestHandler(bare_app(settings)))


class _BareGunicorn(_Gunicorn):
    def load(self) -> WSGIApp:
        return bare_wsgi(self.settings)


def main() -> None:
    settings = Settings.load().require("SLACK_SIGNING_SECRET", "SLACK_BOT_TOKEN")
    _BareGunicorn(settings, SlackIdentity(settings)).run()  # the bare app never asks who it is


if __name__ == "__main__":
    main()
