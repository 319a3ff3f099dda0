"""Who the bot is, from Slack's `auth.test`: the Bolt app's `authorize`, asked until it succeeds.

Bolt's own single-token authorisation answers 200 when `auth.test` fails, and Slack does not
redeliver an event it saw acknowledged: a Slack blip at start lost mentions. Here a failed call
raises `IdentityUnknown`, which gateway.app answers 503, so Slack retries the event; the
identity is cached once Slack has told it. A token Slack refuses at start stops `web` with one
line, as a missing setting does.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.authorize import Authorize
from slack_sdk.errors import SlackApiError

from gateway.slack_client import web_client
from jobs.settings import EXPECTED, Settings, SettingsError

log = logging.getLogger(__name__)

# What auth.test says when the token itself is wrong: asking again will not help.
INVALID_TOKEN_ERRORS = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked"})
# Slack waits 3 s for an event's answer; a 503 within that is retried, a timeout counts as a failure.
AUTH_TEST_TIMEOUT_S = 2


class IdentityUnknown(Exception):
    """auth.test did not say who the bot is; `reason` is Slack's error code or the failure's kind."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Slack auth.test failed ({reason})")
        self.reason = reason

    @property
    def invalid_token(self) -> bool:
        return self.reason in INVALID_TOKEN_ERRORS


class SlackIdentity(Authorize):
    def __init__(self, settings: Settings) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # slack_bolt leaves it unannotated
        # No retries here: the caller's retry is Slack's, after our 503.
        self._client = web_client(settings, retry_handlers=[])
        self._client.timeout = min(settings.SLACK_TIMEOUT_SECONDS, AUTH_TEST_TIMEOUT_S)
        self._known: dict[str, Any] | None = None

    def check_at_start(self) -> None:
        """Stop on a token Slack refuses; when Slack cannot answer yet, the first request asks again."""
        try:
            self._identity()
        except IdentityUnknown as error:
            if error.invalid_token:
                raise SettingsError(
                    f"threadline: Slack refused SLACK_BOT_TOKEN (auth.test: {error.reason}): "
                    f"expected {EXPECTED['SLACK_BOT_TOKEN']}"
                ) from None
            log.warning("%s at start; each request asks again until Slack answers", error)

    def __call__(self, *, user_id: str | None, **_request: Any) -> AuthorizeResult:
        known = self._identity()
        token = self._client.token
        return AuthorizeResult(
            enterprise_id=known.get("enterprise_id"),
            team_id=known.get("team_id"),
            bot_id=known.get("bot_id"),
            bot_user_id=known.get("user_id"),
            bot_token=token,
            bot_scopes=known.get("scopes"),
            user_id=user_id,
        )

    def _identity(self) -> dict[str, Any]:
        if self._known is None:
            self._known = self._ask()
        return self._known

    def _ask(self) -> dict[str, Any]:
        try:
            response = self._client.auth_test()
        except SlackApiError as error:
            raise IdentityUnknown(str(error.response.get("error") or "unexpected_response")) from None
        except OSError as error:  # refused, reset, timed out: Slack unreachable for now
            raise IdentityUnknown(type(error).__name__) from None
        return {**response.data, "scopes": response.headers.get("x-oauth-scopes")}  # type: ignore[dict-item]
