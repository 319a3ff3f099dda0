"""`threadline doctor`: one line per dependency, with the fix when something is wrong.

Its output is pasted into tickets and chats, so every URL it shows goes through
`agent.redaction` (REDIS_URL's password, a token in LLM_BASE_URL) and so does every error it
quotes; Slack's answer is reduced to its error code by the client (gateway/slack_client.py).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from redis import Redis
from redis.exceptions import ResponseError
from rq import Worker
from slack_sdk.errors import SlackApiError

from agent.redaction import redact_text, redact_url
from agent.tools.sandbox import (
    FIX,
    REACH_FIX,
    bwrap_version,
    sandbox_problem,
    sandbox_user,
    workspace_problem,
)
from gateway.authz import nobody_approves
from gateway.manifest import BOT_SCOPES
from gateway.slack_client import web_client
from jobs.forge.api import ForgeRefused
from jobs.forge.forges import open_forge
from jobs.forge.tokens import forge_token
from jobs.queues import SERIALIZER, TURNS_QUEUE
from jobs.redis_connect import RedisTarget, connect
from jobs.settings import Settings
from jobs.storage import StorageSeen, storage_seen_by
from jobs.turn.mcp import McpCatalog, McpServerState
from jobs.turn.sandbox import shell_sandbox
from jobs.turn.tools import tools_that_ask

CHECK_TIMEOUT_S = 5


@dataclass(frozen=True)
class Check:
    ok: bool
    name: str
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        fix = f" -- fix: {self.fix}" if self.fix and not self.ok else ""
        return f"{mark} {self.name:<10} {self.detail}{fix}"


def _said(error: Exception) -> str:
    """An error's class and words, redacted: drivers may put the URL they were given in it."""
    return f"{type(error).__name__}: {redact_text(str(error))[:300]}"


def _redis(settings: Settings) -> Redis:
    return connect(
        RedisTarget.of(settings), socket_timeout_s=CHECK_TIMEOUT_S, connect_timeout_s=CHECK_TIMEOUT_S
    )


def _where(settings: Settings) -> str:
    shown = redact_url(settings.REDIS_URL or "")
    if not settings.sentinels:
        return shown
    sentinels = ",".join(f"{host}:{port}" for host, port in settings.sentinels)
    return f"{settings.REDIS_SENTINEL_SERVICE or '?'} via Sentinel {sentinels} ({shown})"


def check_redis(settings: Settings) -> Check:
    if not settings.REDIS_URL:
        return Check(
            False, "redis", "REDIS_URL is not set", "set REDIS_URL, or use `threadline sandbox` (embedded)"
        )
    try:
        info = _redis(settings).info("server")
    except Exception as error:
        fix = "start redis-server or correct REDIS_URL (and REDIS_SENTINELS, REDIS_SENTINEL_SERVICE)"
        return Check(False, "redis", f"{_where(settings)}: {_said(error)}", fix)
    return Check(True, "redis", f"{_where(settings)} (Redis {info.get('redis_version', '?')})")


REPLICAS_FIX = (
    "start a replica (`replicaof`), or set REDIS_MIN_REPLICAS_ACK=0 to acknowledge unreplicated input"
)


def check_replicas(settings: Settings) -> Check:
    """The topology (what Sentinel names, the primary's replicas), and whether the replicas an
    acknowledgement waits for (REDIS_MIN_REPLICAS_ACK) are there: if not, every input is refused."""
    if not settings.REDIS_URL:
        return Check(False, "replicas", "no Redis to ask (REDIS_URL is not set)", "see the redis line")
    wanted = settings.replicas_to_ack
    try:
        replication = _redis(settings).info("replication")
        watched = _sentinels_answering(settings)
    except Exception as error:
        return Check(False, "replicas", f"could not ask Redis: {_said(error)}", "see the redis line")
    replicas = [
        value for name, value in replication.items() if name.startswith("slave") and isinstance(value, dict)
    ]
    online = [each for each in replicas if each.get("state") == "online"]
    shown = ", ".join(
        f"{each.get('ip')}:{each.get('port')} {each.get('state')}, lag {each.get('lag')} s"
        for each in replicas
    )
    detail = f"{watched}{replication.get('role', '?')} with {len(replicas)} replica(s)"
    detail += f" ({shown})" if shown else ""
    detail += f"; an acknowledgement waits for {wanted}"
    if len(online) < wanted:
        return Check(
            False,
            "replicas",
            f"{detail}, but only {len(online)} is online: every input is refused",
            REPLICAS_FIX,
        )
    return Check(True, "replicas", detail)


def _sentinels_answering(settings: Settings) -> str:
    """ "k of n Sentinels name host:port; " (nothing without Sentinel)."""
    if not settings.sentinels:
        return "no Sentinel; "
    target = RedisTarget.of(settings)
    named = []
    for host, port in target.sentinels:
        single = RedisTarget(
            "", ((host, port),), target.service, target.sentinel_username, target.sentinel_password
        )
        try:
            named.append(single.sentinel(CHECK_TIMEOUT_S).discover_master(target.service))
        except Exception:
            continue
    primaries = ", ".join(sorted({f"{host}:{port}" for host, port in named})) or "no primary"
    return f"{len(named)} of {len(target.sentinels)} Sentinels name {primaries}; "


# What keeps the guarantees across a Redis restart and under memory pressure (README, "Running on
# several machines"): every write in the append-only file, and nothing evicted to make room.
DURABLE = {"appendonly": "yes", "maxmemory-policy": "noeviction"}
DURABLE_FIX = "set appendonly yes, appendfsync everysec (or always) and maxmemory-policy noeviction"


def check_persistence(settings: Settings) -> Check:
    """Whether Redis keeps what threadline wrote: a restart that forgets, or an eviction, loses input."""
    if not settings.REDIS_URL:
        return Check(False, "persist", "no Redis to ask (REDIS_URL is not set)", "see the redis line")
    try:
        redis = _redis(settings)
        found = {name: str(redis.config_get(name).get(name, "?")) for name in (*DURABLE, "appendfsync")}
    except ResponseError as error:  # a managed Redis may refuse CONFIG: say what to check, never fail forever
        return Check(True, "persist", f"Redis refused CONFIG GET ({_said(error)}); make sure: {DURABLE_FIX}")
    except Exception as error:
        return Check(False, "persist", f"could not ask Redis: {_said(error)}", "see the redis line")
    said = ", ".join(f"{name} {value}" for name, value in found.items())
    wrong = [name for name, wanted in DURABLE.items() if found[name] != wanted]
    if wrong or found["appendfsync"] == "no":
        return Check(False, "persist", f"{said}: a restart or full memory loses input", DURABLE_FIX)
    return Check(True, "persist", said)


SHARE_FIX = (
    "mount one shared storage at AGENT_WORKDIR on every worker machine (README: Running on several machines)"
)


def check_storage(settings: Settings) -> Check:
    """Whether every live turn worker sees the same AGENT_WORKDIR storage (jobs.storage)."""
    if not settings.REDIS_URL:
        return Check(False, "storage", "no Redis to ask (REDIS_URL is not set)", "see the redis line")
    try:
        seen = _storage_of_turn_workers(settings)
    except Exception as error:
        return Check(False, "storage", f"could not ask Redis: {_said(error)}", "see the redis line")
    if not seen:
        return Check(True, "storage", "no turn worker is running (each says which storage it sees)")
    storages: dict[str, list[StorageSeen]] = {}
    for each in seen:
        if each is not None:
            storages.setdefault(each.storage, []).append(each)
    silent = sum(1 for each in seen if each is None)
    shown = "; ".join(_storage_line(storage, by) for storage, by in sorted(storages.items()))
    shown += f"; {silent} worker(s) not reported yet" if silent else ""
    if len(storages) > 1:
        return Check(
            False, "storage", f"turn workers see different storage as AGENT_WORKDIR: {shown}", SHARE_FIX
        )
    return Check(True, "storage", f"one storage for every turn worker: {shown}")


def _storage_of_turn_workers(settings: Settings) -> list[StorageSeen | None]:
    """What each live turn worker published about its storage (None: nothing yet)."""
    redis = _redis(settings)
    workers = Worker.all(connection=redis, serializer=SERIALIZER)
    turn_workers = [worker for worker in workers if TURNS_QUEUE in worker.queue_names()]
    return [storage_seen_by(redis, worker.hostname or "", worker.pid or 0) for worker in turn_workers]


def _storage_line(storage: str, by: list[StorageSeen]) -> str:
    places = sorted({f"{each.host}:{each.path}" for each in by})
    return f"storage {storage[:8]} ({len(by)} at {', '.join(places)})"


def check_slack(settings: Settings) -> Check:
    if not settings.SLACK_BOT_TOKEN:
        return Check(
            False, "slack", "SLACK_BOT_TOKEN is not set", "copy the bot token from OAuth & Permissions"
        )
    try:
        identity = web_client(settings, retry_handlers=[]).auth_test()
    except SlackApiError as error:
        code = error.response.get("error", "error")
        return Check(
            False, "slack", f"auth.test answered {code}", "check SLACK_BOT_TOKEN (xoxb-…) and SLACK_API_URL"
        )
    except Exception as error:
        return Check(
            False,
            "slack",
            f"{redact_url(settings.SLACK_API_URL)}: {_said(error)}",
            "check SLACK_API_URL and the network",
        )
    who = f"bot {identity.get('user_id')} in team {identity.get('team_id')} ({identity.get('team')})"
    granted = _granted_scopes(identity.headers)
    if granted is None:
        return Check(True, "slack", f"{who}; Slack did not say the token's scopes (x-oauth-scopes)")
    missing = sorted(set(BOT_SCOPES) - granted)
    if missing:
        return Check(
            False, "slack", f"{who}, but the token lacks scopes the manifest asks for: {', '.join(missing)}",
            "add them under OAuth & Permissions (or from `threadline manifest`) and reinstall the app",
        )  # fmt: skip
    return Check(True, "slack", f"{who}; every scope of the manifest granted")


def _granted_scopes(headers: Mapping[str, Any]) -> set[str] | None:
    """The bot token's scopes, from the `x-oauth-scopes` header Slack sends with each answer."""
    value = next((v for k, v in headers.items() if k.lower() == "x-oauth-scopes"), None)
    if isinstance(value, list):  # slack_sdk keeps some headers as lists of values
        value = ",".join(value)
    if not isinstance(value, str):
        return None
    return {scope.strip() for scope in value.split(",") if scope.strip()}


def check_model(settings: Settings) -> Check:
    if not settings.LLM_BASE_URL:
        return Check(True, "model", "no LLM_BASE_URL: the built-in demo model answers (scripted)")
    if not settings.LLM_MODEL:
        return Check(False, "model", "LLM_MODEL is not set", "set LLM_MODEL to a model your endpoint serves")
    headers = {"Authorization": f"Bearer {settings.LLM_API_KEY}"} if settings.LLM_API_KEY else {}
    url = settings.LLM_BASE_URL.rstrip("/") + "/models"
    shown = redact_url(url)
    try:
        response = httpx.get(url, headers=headers, timeout=CHECK_TIMEOUT_S)
    except httpx.HTTPError as error:
        return Check(False, "model", f"{shown}: {_said(error)}", "check LLM_BASE_URL and the network")
    if response.status_code in (401, 403):
        return Check(False, "model", f"{shown} answered {response.status_code}", "check LLM_API_KEY")
    if response.status_code >= 400 and response.status_code != 404:
        return Check(False, "model", f"{shown} answered {response.status_code}", "check LLM_BASE_URL")
    return Check(True, "model", f"{redact_url(settings.LLM_BASE_URL)} answers; model {settings.LLM_MODEL}")


def check_workspace(settings: Settings) -> Check:
    root = settings.AGENT_WORKDIR
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root):
            pass
    except OSError as error:
        return Check(
            False, "workspace", f"{root}: {error.strerror}", "set AGENT_WORKDIR to a writable directory"
        )
    return Check(True, "workspace", f"{root.resolve()} is writable ({_free_gb(root):.1f} GB free)")


def _free_gb(path: os.PathLike[str]) -> float:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize / 1e9


def check_sandbox(settings: Settings) -> Check:
    """Which mode shell runs in: sandboxed (how), unsandboxed by choice, or refused (and the fix)."""
    config = shell_sandbox(settings)
    if not config.enabled:
        return Check(True, "sandbox", "SHELL_SANDBOX=off: shell runs UNSANDBOXED, as the worker (unsafe)")
    problem = sandbox_problem(config)
    if problem is not None:
        return Check(False, "sandbox", f"shell is refused: {problem}", FIX)
    unreachable = workspace_problem(config, settings.AGENT_WORKDIR.resolve())
    if unreachable is not None:
        return Check(False, "sandbox", f"shell is refused: {unreachable}", REACH_FIX)
    user = sandbox_user(config)
    who = f"uid {user[0]}" if user is not None else "the worker's uid"
    channels = settings.network_channels
    network = f"network for {', '.join(sorted(channels))} only" if channels else "no network"
    return Check(True, "sandbox", f"{bwrap_version(config)}: shell runs sandboxed as {who}, {network}")


def check_approvers(settings: Settings) -> Check:
    problem = nobody_approves(settings)
    if problem is not None:
        return Check(False, "approvers", problem, "set SLACK_APPROVERS to user or user-group ids")
    asking = ", ".join(tools_that_ask(settings)) or "no tool"
    who = "approvers" if settings.approvers else "the initiators (SLACK_ALLOWED_USERS is a closed group)"
    return Check(True, "approvers", f"{asking} ask; {who} may approve")


TOKEN_SETTINGS = {"github": "GITHUB_TOKEN, or GITHUB_APP_ID and its key", "gitlab": "GITLAB_TOKEN"}
FORGE_FIX = "give the forge a token with the rights the README names (GITHUB_TOKEN or an App; GITLAB_TOKEN)"


def check_forges(settings: Settings) -> Check | None:
    """Whether the token reaches each repository channels send pull requests to; None: none does."""
    forged = {(r.forge, r.repo): r for r in settings.CHANNEL_REPOS.values() if r.forge and r.repo}
    if not forged:
        return None
    problems, reached = [], []
    for (forge, repo), channel_repo in sorted(forged.items()):
        try:
            token = forge_token(settings, channel_repo)
            if token is None:
                raise ForgeRefused(f"no token ({TOKEN_SETTINGS[forge]})")
            with open_forge(settings, forge, repo, token) as api:
                api.check()
        except ForgeRefused as refused:
            problems.append(f"{forge} {repo}: {redact_text(str(refused))}")
        else:
            reached.append(f"{forge} {repo}")
    if problems:
        return Check(False, "forges", "; ".join(problems), FORGE_FIX)
    return Check(True, "forges", f"the token reaches {', '.join(reached)}")


MCP_FIX = 'start the server, or correct its MCP_SERVERS entry (an internal URL needs "internal": true)'


def check_mcp(settings: Settings) -> Check | None:
    """Whether each MCP server answers, and its tools; None: no server is configured."""
    if not settings.MCP_SERVERS:
        return None
    catalog = McpCatalog.of(settings)
    asyncio.run(_listed(catalog))
    said = [_server_line(server) for server in catalog.servers.values()]
    ok = all(server.registry is not None for server in catalog.servers.values())
    return Check(ok, "mcp", "; ".join(said), MCP_FIX)


async def _listed(catalog: McpCatalog) -> None:
    try:
        await catalog.refresh()
    finally:
        await catalog.close()


def _server_line(server: McpServerState) -> str:
    if server.registry is None:
        return f"{server.name}: not answering ({redact_text(server.error)[:200]})"
    names = [tool.name for tool in server.registry]
    return f"{server.name}: {len(names)} tool(s) ({', '.join(names)})"


CHECKS: tuple[Callable[[Settings], Check | None], ...] = (
    check_redis,
    check_persistence,
    check_replicas,
    check_storage,
    check_slack,
    check_model,
    check_workspace,
    check_sandbox,
    check_approvers,
    check_forges,
    check_mcp,
)


def run_doctor(settings: Settings, out: Callable[[str], None] = print) -> int:
    results = [result for check in CHECKS if (result := check(settings)) is not None]
    for result in results:
        out(result.line())
    return 0 if all(result.ok for result in results) else 1
