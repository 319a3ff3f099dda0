"""Retries with back-off around any ChatModel: 429, 5xx, timeouts, cut streams.

`Retry-After` wins over the computed back-off (capped, so a hostile header cannot park a turn
for hours). Everything else is raised at once for the caller to handle.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agent.model.base import ChatModel, ModelRequest, ModelResponse, StreamListener
from agent.model.errors import MalformedResponseError, RetryableModelError

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
# Told of each retry before its wait: the cause (RetryableModelError.cause, or "malformed") and
# the delay; the worker counts them (jobs.metrics), the core stays free of any metrics library.
RetryObserver = Callable[[str, float], None]


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5  # one try plus four retries: about two minutes of back-off in the worst case
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    max_retry_after_s: float = 300.0  # honour the provider, but never park a turn for hours
    malformed_attempts: int = 2  # a garbled answer is retried once, then reported

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s)
        backoff = min(self.max_delay_s, self.base_delay_s * 2.0 ** (attempt - 1))
        return backoff * (0.5 + random.random() / 2)  # jitter: many turns must not retry in step


class RetryingModel:
    def __init__(
        self,
        inner: ChatModel,
        policy: RetryPolicy = RetryPolicy(),
        sleep: Sleep = asyncio.sleep,
        on_retry: RetryObserver | None = None,
    ) -> None:
        self.inner = inner
        self._on_retry = on_retry
        self.name = inner.name
        self.policy = policy
        self._sleep = sleep

    async def complete(self, request: ModelRequest, listener: StreamListener | None = None) -> ModelResponse:
        attempt = malformed = 0
        while True:
            attempt += 1
            try:
                return await self.inner.complete(request, listener)
            except MalformedResponseError:
                malformed += 1
                if malformed >= self.policy.malformed_attempts or attempt >= self.policy.attempts:
                    raise
                delay, cause = self.policy.delay(attempt, None), "malformed"
            except RetryableModelError as error:
                if attempt >= self.policy.attempts:
                    raise
                delay, cause = self.policy.delay(attempt, error.retry_after), error.cause
            log.warning("model call failed (attempt %d, %s); retrying in %.1fs", attempt, cause, delay)
            if self._on_retry is not None:
                self._on_retry(cause, delay)
            if listener is not None:
                listener.on_restart()
            await self._sleep(delay)
