"""What a worker process builds once: settings, the Redis client and the model."""

from __future__ import annotations

import asyncio
from functools import cache

import httpx
from redis import Redis

from agent.model.base import ChatModel
from agent.model.connections import ConnectionPool
from agent.model.demo import DemoModel
from agent.model.openai import OpenAICompatibleModel, takes_prompt_cache_key
from agent.model.retrying import RetryingModel
from jobs import metrics
from jobs.redis_connect import RedisTarget, connect
from jobs.settings import Settings
from jobs.turn.host import current_host
from jobs.turn.metered import MeteredModel


@cache
def settings() -> Settings:
    return Settings.load()


@cache
def redis_client() -> Redis:
    return connect(RedisTarget.of(settings()))


def build_model(config: Settings) -> ChatModel:
    """The configured OpenAI-compatible endpoint, or the scripted demo model when there is none."""
    if not config.LLM_BASE_URL:
        return MeteredModel(DemoModel())
    config.require("LLM_MODEL")
    timeout = httpx.Timeout(connect=10.0, read=config.LLM_TIMEOUT_SECONDS, write=30.0, pool=10.0)
    client = OpenAICompatibleModel(
        config.LLM_BASE_URL,
        config.LLM_MODEL or "",
        config.LLM_API_KEY,
        timeout=timeout,
        pool=model_connections(),
        extra_body=config.LLM_EXTRA_BODY,
        http2=config.LLM_HTTP2,
        vision=config.LLM_VISION,
        prompt_cache_key=takes_prompt_cache_key(config.LLM_BASE_URL),
    )
    return RetryingModel(MeteredModel(client), on_retry=metrics.model_retried)


@cache
def model_connections() -> ConnectionPool:
    """The process's connections to the model provider, kept on its turn loop: every turn and
    compaction of the process reuses them (a step no longer pays a TCP and TLS handshake)."""
    return ConnectionPool(long_lived_loop=_turn_loop)


def _turn_loop() -> asyncio.AbstractEventLoop | None:
    turns = current_host()
    return turns.loop if turns is not None else None
