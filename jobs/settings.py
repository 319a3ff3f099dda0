"""Configuration from the environment (pydantic-settings), checked once at process start.

Each process asks for the settings it cannot run without (`Settings.require`); a missing or
invalid one stops the process with a single line naming the variable and what it expects.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings import SettingsError as PydanticSettingsError

from agent.redaction import MASK, redact_text, redact_url
from agent.tools.builtin.http_policy import HttpGetPolicy
from agent.tools.mcp.servers import McpServer, valid_server_name

SLACK_DEFAULT_API_URL = "https://slack.com/api/"
# The conversation itself: LLM_EXTRA_BODY may add to a request, never replace what it says.
RESERVED_BODY_FIELDS = frozenset({"messages", "tools", "stream"})
_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]+")  # a channel, private channel or DM id

# What each setting is, said once: used for "missing" and "invalid" lines alike.
EXPECTED: dict[str, str] = {
    "SLACK_BOT_TOKEN": "the bot token (xoxb-…) from your Slack app's OAuth & Permissions page",
    "SLACK_SIGNING_SECRET": "the signing secret from your Slack app's Basic Information page",
    "SLACK_APP_TOKEN": "an app-level token (xapp-…) with connections:write, for Socket Mode",
    "SLACK_API_URL": "the base URL of the Slack Web API, ending in a slash",
    "SLACK_COMMAND": "the slash command name, starting with '/'",
    "SLACK_TIMEOUT_SECONDS": "how long to wait for a Slack Web API answer (seconds)",
    "SLACK_REACTIONS": "true or false: 👀 on a message the agent takes, ✅ or ⚠️ when its turn ends",
    "SLACK_STREAMING": "on or off: answers stream as the model writes them (off: posted at the end)",
    "SLACK_BROADCAST_CHANNELS": (
        "comma-separated channel ids where the agent's @channel, @here, @everyone and user-group"
        " mentions notify (empty: nowhere)"
    ),
    "SLACK_UNFURL": "true or false: Slack previews (fetches) the links and media in the agent's messages",
    "REDIS_URL": "a Redis URL such as redis://127.0.0.1:6379/0",
    "REDIS_SENTINELS": "comma-separated host:port of your Redis Sentinels, e.g. s1:26379,s2:26379,s3:26379",
    "REDIS_SENTINEL_SERVICE": "the name your Sentinels monitor the primary under (`sentinel monitor NAME …`)",
    "REDIS_SENTINEL_USERNAME": "the user to authenticate to the Sentinels as (ACL)",
    "REDIS_SENTINEL_PASSWORD": "the password of the Sentinels (`requirepass` in sentinel.conf)",
    "REDIS_MIN_REPLICAS_ACK": "how many replicas must hold an input before Slack gets its 200 (0 or more)",
    "REDIS_ACK_TIMEOUT_MS": "how long web waits for those replicas before answering 503 (milliseconds)",
    "PORT": "a TCP port number (1-65535)",
    "METRICS_PORT": "a TCP port (1-65535) where worker or web --socket serves its Prometheus metrics",
    "WEB_KEEPALIVE_SECONDS": "seconds web keeps an idle connection open (above your load balancer's)",
    "LLM_BASE_URL": "the base URL of an OpenAI-compatible API, e.g. https://api.moonshot.ai/v1",
    "LLM_API_KEY": "the API key for LLM_BASE_URL",
    "LLM_MODEL": "the model name to request, e.g. kimi-k2.6",
    "LLM_CONTEXT_WINDOW": "the model's context window in tokens (a positive integer)",
    "LLM_TIMEOUT_SECONDS": "how long to wait for the model's next bytes before retrying (seconds)",
    "LLM_EXTRA_BODY": (
        'a JSON object merged into every model request body, e.g. {"reasoning_effort": "high"}'
        " (not messages, tools or stream)"
    ),
    "LLM_HTTP2": "true or false: offer HTTP/2 to an https:// model endpoint (experimental, see the README)",
    "LLM_PRICE_INPUT": "US dollars per million input tokens not served from the provider's cache (≥ 0)",
    "LLM_PRICE_OUTPUT": "US dollars per million output tokens (≥ 0)",
    "LLM_PRICE_CACHED": "US dollars per million input tokens served from the cache (≥ 0; unset: as input)",
    "AGENT_WORKDIR": "a writable directory that holds one workspace per session",
    "LLM_VISION": "true or false: the model accepts images (a shared image reaches it as an image part)",
    "UPLOAD_MAX_BYTES": "the largest file, in bytes, taken from or sent to the thread (a positive integer)",
    "UPLOAD_TYPES": "comma-separated MIME types (text/*, image/png, …; * for any) taken from the thread",
    "TURN_TIMEOUT_SECONDS": "the longest a turn may run, in seconds (a positive integer)",
    "SLACK_OPERATORS": (
        "comma-separated user ids (U…) or user-group ids (S…), each optionally T…:-scoped to one"
        " workspace, who may act on any session"
    ),
    "SLACK_APPROVERS": (
        "comma-separated user ids (U…) or user-group ids (S…), each optionally T…:-scoped to one"
        " workspace, who approve or deny tool calls"
    ),
    "SLACK_ALLOWED_CHANNELS": "comma-separated channel ids where sessions may start (empty: every channel)",
    "SLACK_ALLOWED_USERS": (
        "comma-separated user ids (U…, or T…:U… for one workspace) who may start sessions"
        " (empty: the workspace's own members)"
    ),
    "SLACK_ALLOW_EXTERNAL": "true or false: guests and other organisations' people may use the agent",
    "SLACK_ALLOWED_BOTS": "comma-separated bot ids whose messages may start or steer sessions (empty: none)",
    "APPROVAL_TOOLS": "comma-separated tools that ask first, beyond those that declare it (shell, http_get)",
    "APPROVAL_WAIVED_TOOLS": "comma-separated tools that declare approval but run unasked here (unsafe)",
    "APPROVAL_TIMEOUT_SECONDS": "seconds a call waits for approval before it is denied (a positive number)",
    # What http_get may reach besides public addresses.
    "HTTP_GET_ALLOW_HOSTS": (
        "comma-separated host names, IPs or CIDRs (each with an optional :port; IPv6 as [addr]:port)"
        " that http_get may reach although they are not public (empty: public addresses only)"
    ),
    "MCP_SERVERS": (
        'a JSON object naming MCP servers: {"tracker": {"url": "https://…/mcp", "headers": {"Authorization":'
        ' "$TRACKER_TOKEN"}}} or {"docs": {"command": ["docs-mcp"], "read_only": ["/opt/docs-mcp"]}};'
        ' optional "channels", "approval" ("always", "never" or tool names), "tools" (allow-list),'
        ' "transport": "sse", "internal": true, "timeout_seconds" (README, MCP servers)'
    ),
    # -- the OS sandbox of `shell` (agent/tools/sandbox) --
    "SHELL_SANDBOX": "on (every shell command runs in bubblewrap) or off (unsafe: commands run bare)",
    "SHELL_BWRAP": "the bubblewrap executable, a path or a name on PATH",
    "SHELL_SANDBOX_UID": "the uid and gid sandboxed commands run as when the worker is root (1-4294967294)",
    "SHELL_NETWORK_CHANNELS": "comma-separated channel ids whose shell commands may use the network",
    "SHELL_CPU_SECONDS": "CPU seconds each sandboxed process may use (a positive integer)",
    "SHELL_MEMORY_MB": "MiB of data memory (RLIMIT_DATA) each sandboxed process may use (≥ 16)",
    "SHELL_MAX_PROCESSES": "processes and threads one sandboxed command may run at once (≥ 2)",
    "SHELL_MAX_FILE_MB": "the largest file, in MiB, a sandboxed command may write (a positive integer)",
    "CHANNEL_REPOS": (
        'a JSON object mapping channel ids to a git repository, e.g. {"C123": "/srv/repo"}, or to '
        '{"url": ..., "forge": "github" or "gitlab", "repo": "owner/name", "base": "main"} for pull requests'
    ),
    "GITHUB_API_URL": "the base URL of GitHub's REST API (https://api.github.com or a GitHub Enterprise one)",
    "GITLAB_API_URL": "the base URL of GitLab's REST API (https://gitlab.com/api/v4 or a server's /api/v4)",
    "GITHUB_APP_ID": "the numeric id of the GitHub App pull requests are made as",
    "GITHUB_APP_PRIVATE_KEY_FILE": "the path of the GitHub App's private key (PEM)",
    "COMMIT_AUTHOR_NAME": "the author name of the commits a pull request carries",
    "COMMIT_AUTHOR_EMAIL": "the author email of the commits a pull request carries",
    "MAX_STEPS_PER_TURN": "the most model steps one turn may take (a positive integer)",
    "LEASE_TTL_SECONDS": "seconds a silent worker keeps its session (a dead one is noticed after this)",
    "JANITOR_INTERVAL_SECONDS": "how often each worker looks for turns whose worker died (seconds)",
    "SESSION_RETENTION_DAYS": "days an untouched session keeps its Redis keys and workspace (an integer ≥ 1)",
    "SHARED_SKILLS_DIR": "a directory of shared skills, one <name>/SKILL.md per skill",
    "AGENT_SWARM_MAX_CONCURRENCY": "how many sub-agents of one AgentSwarm call run at once (an integer ≥ 1)",
    "WORKER_NICENESS": "how much lower than web the workers' CPU priority is (0-19; 0: the same as web)",
    "TURN_CONCURRENCY": "turns one turn worker runs at once (tasks on one event loop; `--turn-concurrency`)",
    "DELIVERY_CONCURRENCY": "threads the delivery worker posts to Slack with, each for a different thread",
    "LOOP_STALL_WARN_MS": "a stall of a worker's event loop longer than this (ms) is logged as a warning",
    "WORKER_DRAIN_SECONDS": "how long a stopping worker lets running tools finish before handing turns back",
    "LOG_LEVEL": "DEBUG, INFO, WARNING or ERROR: the least severe log lines every process writes",
    "LOG_FORMAT": "text (a line for people, fields as key=value) or json (one object per line)",
    "THREAD_CONTEXT_MESSAGES": "earlier thread messages a mid-thread mention shows the model (0: none)",
    "THREAD_CONTEXT_TOKENS": "estimated tokens those earlier thread messages may take at most",
    # -- quotas (jobs/quotas.py); 0 turns one off --
    "QUOTA_MENTIONS_PER_USER_PER_MINUTE": "messages one person may give the agent per minute (0: no limit)",
    "QUOTA_MENTIONS_PER_CHANNEL_PER_MINUTE": "messages a channel may give the agent per minute (0: no limit)",
    "QUOTA_BOT_TURNS_PER_THREAD_PER_HOUR": "bot messages one thread takes per hour (0: no limit)",
    "QUOTA_SUBAGENTS_ALIVE_PER_ROOT": "sub-agents working at once under one session people started (≥ 1)",
    "QUOTA_SUBAGENTS_PER_TURN": "sub-agents one turn may start, swarm items included (≥ 1)",
    "QUOTA_SWARM_ITEMS_PER_CALL": "items one AgentSwarm call may have (1-128)",
    "QUOTA_SESSIONS_PER_USER": "sessions one person may have working at once (0: no limit)",
    "BUDGET_TOKENS_PER_USER_PER_DAY": "model tokens one person's turns may use per UTC day (0: no limit)",
    "BUDGET_TOKENS_PER_CHANNEL_PER_DAY": "model tokens one channel's turns may use per UTC day (0: no limit)",
}


class SettingsError(SystemExit):
    """Raised (and printed as one line) when the environment cannot run this process."""


class ChannelRepo(BaseModel):
    """A channel's repository: where its sessions' workspaces are cloned from and, with a forge,
    where their pull requests go. A plain string is the URL alone."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(min_length=1)
    forge: Literal["github", "gitlab"] | None = None
    # owner/name; on GitLab the project's whole path (group/subgroup/name)
    repo: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+$")
    base: str = Field(default="main", pattern=r"^[A-Za-z0-9_./-]+$")

    @model_validator(mode="before")
    @classmethod
    def _url_alone(cls, value: Any) -> Any:
        return {"url": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _forge_and_base_are_usable(self) -> ChannelRepo:
        if self.forge is not None and self.repo is None:
            raise ValueError('a forge needs "repo": "owner/name"')
        if self.forge == "github" and self.repo is not None and self.repo.count("/") != 1:
            raise ValueError('a GitHub "repo" is "owner/name"')
        if self.repo is not None and ".." in self.repo:
            raise ValueError("not a repository path")
        if ".." in self.base or self.base.startswith(("/", "-")) or self.base.endswith("/"):
            raise ValueError("not a branch name")
        return self


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=True, extra="ignore")

    SLACK_BOT_TOKEN: str | None = None
    SLACK_SIGNING_SECRET: str | None = None
    SLACK_APP_TOKEN: str | None = None
    SLACK_API_URL: str = SLACK_DEFAULT_API_URL
    SLACK_COMMAND: str = "/agent"
    SLACK_TIMEOUT_SECONDS: int = Field(default=15, gt=0)
    # 👀 on a message as soon as the agent takes it, ✅ / ⚠️ when its turn ends (jobs.session.reactions).
    SLACK_REACTIONS: bool = True
    # Answers stream as the model writes them (chat.startStream …); off: the card and one final post.
    SLACK_STREAMING: bool = True
    # The model's broadcast mentions (<!channel>, <!here>, <!everyone>, <!subteam^…>) reach Slack
    # broken, so a prompt injection cannot ping a channel, except in these channels
    # (gateway.render.mentions).
    SLACK_BROADCAST_CHANNELS: str = ""
    # Off: posts ask Slack not to preview their links and media, so a URL carrying data is not
    # fetched by Slack on the bot's behalf.
    SLACK_UNFURL: bool = False
    REDIS_URL: str | None = None
    # High availability (jobs/redis_connect.py): the primary is the one these Sentinels name;
    # REDIS_URL then gives only the database, the credentials and TLS.
    REDIS_SENTINELS: str = ""
    REDIS_SENTINEL_SERVICE: str = ""
    REDIS_SENTINEL_USERNAME: str | None = None
    REDIS_SENTINEL_PASSWORD: str | None = None
    # An input is acknowledged once this many replicas hold it (WAIT); unset: 1 with Sentinel, 0
    # without. Bounded by REDIS_ACK_TIMEOUT_MS, within Slack's 3 s.
    REDIS_MIN_REPLICAS_ACK: int | None = Field(default=None, ge=0)
    REDIS_ACK_TIMEOUT_MS: int = Field(default=1000, ge=1, le=2500)
    PORT: int = Field(default=3000, ge=1, le=65535)
    # Above common load-balancer idle timeouts (60 s): the balancer, not web, must close an idle
    # connection, or a request it sends just as web closes it is lost.
    WEB_KEEPALIVE_SECONDS: int = Field(default=75, ge=1, le=3600)
    # Unset: the workers' metrics are not served (web always serves its own on /metrics).
    METRICS_PORT: int | None = Field(default=None, ge=1, le=65535)
    LLM_BASE_URL: str | None = None
    LLM_API_KEY: str | None = None
    LLM_MODEL: str | None = None
    LLM_CONTEXT_WINDOW: int = Field(default=128_000, gt=0)
    LLM_TIMEOUT_SECONDS: float = Field(default=300, gt=0)
    # Provider-specific request fields (reasoning effort, thinking switches, output limits).
    LLM_EXTRA_BODY: dict[str, Any] = Field(default_factory=dict)
    # Off: httpx's HTTP/2 leaks a stream per cancelled request and, after 100, refuses every new
    # one on that connection (encode/httpcore#1022); people stop turns mid-step all the time.
    LLM_HTTP2: bool = False
    # Prices turn the recorded usage into cost (jobs/usage.py); unset: tokens only.
    LLM_PRICE_INPUT: float | None = Field(default=None, ge=0)
    LLM_PRICE_OUTPUT: float | None = Field(default=None, ge=0)
    LLM_PRICE_CACHED: float | None = Field(default=None, ge=0)

    @field_validator("LLM_EXTRA_BODY")
    @classmethod
    def _extra_body_leaves_the_conversation_alone(cls, value: dict[str, Any]) -> dict[str, Any]:
        if RESERVED_BODY_FIELDS & set(value):
            raise ValueError("sets a field threadline owns")
        return value

    AGENT_WORKDIR: Path = Path(".threadline-local/workspaces")
    # Off by default: a model without vision answers an image part with HTTP 400, every step.
    LLM_VISION: bool = False
    # Files in and out of the thread (jobs/turn/uploads.py, the send_file tool). 20 MiB holds
    # logs, screenshots and PDFs and keeps one download to seconds; Slack itself allows 1 GB.
    UPLOAD_MAX_BYTES: int = Field(default=20 * 1024 * 1024, gt=0)
    # What a coding agent reads: text of any kind, images, documents and archives. Executables
    # and the rest are refused unless the operator opens them ("*").
    UPLOAD_TYPES: str = (
        "text/*,image/png,image/jpeg,image/gif,image/webp,application/json,application/pdf,"
        "application/xml,application/x-yaml,application/yaml,application/zip,application/gzip,"
        "application/x-gzip,application/x-tar,application/javascript,application/x-sh,"
        "application/x-python,application/sql,application/csv"
    )
    TURN_TIMEOUT_SECONDS: int = Field(default=3600, gt=0)
    MAX_STEPS_PER_TURN: int = Field(default=50, gt=0)
    LEASE_TTL_SECONDS: float = Field(default=20, gt=0)
    JANITOR_INTERVAL_SECONDS: float = Field(default=10, gt=0)
    # A session untouched this long is removed, Redis keys and workspace (jobs.retention); a
    # live or parked one never is.
    SESSION_RETENTION_DAYS: int = Field(default=30, ge=1)
    SLACK_OPERATORS: str = ""
    # Who approves or denies tool calls; empty: the operators (see gateway/authz.py).
    SLACK_APPROVERS: str = ""
    SLACK_ALLOWED_CHANNELS: str = ""
    SLACK_ALLOWED_USERS: str = ""
    SLACK_ALLOWED_BOTS: str = ""
    # Guests and other organisations' people (Slack Connect) are refused unless this opens the
    # door to all of them, or SLACK_ALLOWED_USERS names them (gateway/authz.py).
    SLACK_ALLOW_EXTERNAL: bool = False
    # shell and http_get ask by their own declaration; this only adds tools (checked at start).
    APPROVAL_TOOLS: str = ""
    # Unsafe by design and never a default: the explicit way to let a tool
    # that declares it needs approval run unasked (a trusted, sandboxed deployment).
    APPROVAL_WAIVED_TOOLS: str = ""
    APPROVAL_TIMEOUT_SECONDS: float = Field(default=24 * 3600, gt=0)

    # Internal hosts http_get may reach; everything else non-public is refused.
    HTTP_GET_ALLOW_HOSTS: str = ""

    @field_validator("HTTP_GET_ALLOW_HOSTS")
    @classmethod
    def _http_get_allowlist_parses(cls, value: str) -> str:
        HttpGetPolicy.from_allowlist(value)  # a ValueError names the entry
        return value

    # Tools from MCP servers (agent/tools/mcp, jobs/turn/mcp.py), by server name.
    MCP_SERVERS: dict[str, McpServer] = Field(default_factory=dict)

    @field_validator("MCP_SERVERS")
    @classmethod
    def _mcp_servers_are_usable(cls, value: dict[str, McpServer]) -> dict[str, McpServer]:
        for name, entry in value.items():
            if not valid_server_name(name):
                raise ValueError(f"the server name {name!r} is not 1-32 letters, digits or '-'")
            missing = [variable for variable in entry.environment_names() if variable not in os.environ]
            if missing:
                raise ValueError(f"server {name!r}: its headers name {', '.join(missing)}, which is not set")
        return value

    # -- the OS sandbox of `shell`; the defaults and why are in agent/tools/sandbox --
    SHELL_SANDBOX: Literal["on", "off"] = "on"
    SHELL_BWRAP: str = "bwrap"
    SHELL_SANDBOX_UID: int = Field(default=65534, ge=1, le=4_294_967_294)  # 65534: Debian's nobody
    SHELL_NETWORK_CHANNELS: str = ""
    SHELL_CPU_SECONDS: int = Field(default=600, gt=0)
    SHELL_MEMORY_MB: int = Field(default=2048, ge=16)
    SHELL_MAX_PROCESSES: int = Field(default=256, ge=2)
    SHELL_MAX_FILE_MB: int = Field(default=1024, gt=0)
    CHANNEL_REPOS: dict[str, ChannelRepo] = Field(default_factory=dict)
    # Pull requests (jobs/forge): the worker pushes and calls the forge with this; never the sandbox.
    GITHUB_TOKEN: str | None = None
    # Or a GitHub App: an installation token is minted per clone and per push (jobs/forge/tokens.py).
    GITHUB_APP_ID: int | None = Field(default=None, gt=0)
    GITHUB_APP_PRIVATE_KEY_FILE: Path | None = None
    GITHUB_API_URL: str = "https://api.github.com"
    GITLAB_TOKEN: str | None = None  # a personal, project or group token: scopes api, write_repository
    GITLAB_API_URL: str = "https://gitlab.com/api/v4"
    COMMIT_AUTHOR_NAME: str = "threadline"
    COMMIT_AUTHOR_EMAIL: str = Field(
        default="threadline@users.noreply.github.com", pattern=r"^[^<>\s]+@[^<>\s]+$"
    )
    SHARED_SKILLS_DIR: Path | None = None
    # A swarm of up to 128 items must not fill the turns queue ahead of every other thread's
    # turn; 4 keeps a swarm busy on a few workers and leaves room for the rest.
    AGENT_SWARM_MAX_CONCURRENCY: int = Field(default=4, gt=0)
    # Where web and workers share cores, Slack's 3-second ack must not queue behind turn work,
    # which waits on the model most of the time anyway.
    WORKER_NICENESS: int = Field(default=10, ge=0, le=19)
    # A deploy's SIGTERM: the worker stops taking jobs, hands its turns back to the queue and
    # exits within this. Platforms kill about 30 s after SIGTERM (Heroku, Kubernetes' default).
    WORKER_DRAIN_SECONDS: float = Field(default=20, gt=0)
    # A turn waits on the model or a subprocess nearly all its life: one process holds many.
    # 16 keeps a small team's work on one worker; raise it for more (bench.concurrency: 200).
    TURN_CONCURRENCY: int = Field(default=16, ge=1)
    # Posting waits on Slack; one thread is delivered by one deliverer at a time (its lock), so
    # more threads only let different Slack threads be posted to at once. Pacing per channel and
    # Retry-After hold across them (gateway.delivery).
    DELIVERY_CONCURRENCY: int = Field(default=8, ge=1)
    # The turn host's stall probe (jobs/turn/host.py) logs any stall of the turns' loop over this.
    LOOP_STALL_WARN_MS: int = Field(default=1000, ge=1)
    # Every line names its team, channel, thread, turn and job (jobs.log_context, gateway/processes/logs.py).
    LOG_LEVEL: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    LOG_FORMAT: Literal["text", "json"] = "text"

    # -- the thread as context (gateway/thread_context.py): a mention mid-thread shows the model
    # the thread's earlier messages, newest kept. 50 messages covers nearly every real thread;
    # 8,000 tokens is a few percent of a model's window, so a long thread never crowds the work.
    THREAD_CONTEXT_MESSAGES: int = Field(default=50, ge=0, le=1000)
    THREAD_CONTEXT_TOKENS: int = Field(default=8000, ge=0)

    # -- quotas (jobs/quotas.py): what one person, channel, bot or prompt may make the agent do.
    # A person typing fast sends a few messages a minute; 10 leaves room for that and stops a
    # script. A channel of people working together: 30.
    QUOTA_MENTIONS_PER_USER_PER_MINUTE: int = Field(default=10, ge=0)
    QUOTA_MENTIONS_PER_CHANNEL_PER_MINUTE: int = Field(default=30, ge=0)
    # Two allowed bots answering each other take a turn each per exchange; a real integration
    # posts a few times an hour in one thread. 20 breaks a loop within minutes.
    QUOTA_BOT_TURNS_PER_THREAD_PER_HOUR: int = Field(default=20, ge=0)
    # Sub-agents: depth is bounded by MAX_AGENT_DEPTH (3). Without these a prompt could fan out
    # to 128 items per swarm at each level (about two million sessions). 64 items is a large
    # batch; 16 starts per turn and 32 alive per tree keep one request to a few workers' worth.
    QUOTA_SUBAGENTS_ALIVE_PER_ROOT: int = Field(default=32, ge=1)
    QUOTA_SUBAGENTS_PER_TURN: int = Field(default=16, ge=1)
    QUOTA_SWARM_ITEMS_PER_CALL: int = Field(default=64, ge=1, le=128)
    # Sessions working at once (queued, running, or parked on an approval or sub-agents) that one
    # person's messages started: a person follows a few threads at a time; 5 stops a script from
    # occupying every worker, and a new request waits until one of theirs ends.
    QUOTA_SESSIONS_PER_USER: int = Field(default=5, ge=0)
    # Daily token budgets (jobs/usage.py), off by default: what a team spends is its decision.
    # Tokens rather than money, so they work with unpriced (local) models too.
    BUDGET_TOKENS_PER_USER_PER_DAY: int = Field(default=0, ge=0)
    BUDGET_TOKENS_PER_CHANNEL_PER_DAY: int = Field(default=0, ge=0)

    @property
    def operators(self) -> frozenset[str]:
        return _id_set(self.SLACK_OPERATORS)

    @property
    def approvers(self) -> frozenset[str]:
        """Who approves: SLACK_APPROVERS, or the operators when it is empty."""
        return _id_set(self.SLACK_APPROVERS) or self.operators

    @property
    def nobody_approves(self) -> bool:
        """No approver, and no closed group whose members may approve their own calls."""
        return not self.approvers and not self.allowed_users

    @property
    def allowed_channels(self) -> frozenset[str]:
        return _id_set(self.SLACK_ALLOWED_CHANNELS)

    @property
    def allowed_users(self) -> frozenset[str]:
        return _id_set(self.SLACK_ALLOWED_USERS)

    @property
    def allowed_bots(self) -> frozenset[str]:
        return _id_set(self.SLACK_ALLOWED_BOTS)

    @property
    def approval_tools(self) -> frozenset[str]:
        return _id_set(self.APPROVAL_TOOLS)

    @property
    def upload_types(self) -> frozenset[str]:
        return frozenset(t.strip().lower() for t in self.UPLOAD_TYPES.split(",") if t.strip())

    @property
    def network_channels(self) -> frozenset[str]:
        return _id_set(self.SHELL_NETWORK_CHANNELS)

    @property
    def broadcast_channels(self) -> frozenset[str]:
        return _id_set(self.SLACK_BROADCAST_CHANNELS)

    @property
    def approval_waived_tools(self) -> frozenset[str]:
        return _id_set(self.APPROVAL_WAIVED_TOOLS)

    @field_validator("SLACK_BROADCAST_CHANNELS")
    @classmethod
    def _channel_ids(cls, value: str) -> str:
        if not all(_CHANNEL_ID.fullmatch(item) for item in _id_set(value)):
            raise ValueError("not channel ids")
        return value

    @field_validator("SLACK_API_URL")
    @classmethod
    def _slack_api_url_ends_with_slash(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("not an http(s) URL")
        return value if value.endswith("/") else value + "/"

    @field_validator("LOG_LEVEL", "LOG_FORMAT", mode="before")
    @classmethod
    def _log_words_in_either_case(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str):
            return value
        return value.upper() if info.field_name == "LOG_LEVEL" else value.lower()

    @field_validator("SLACK_COMMAND")
    @classmethod
    def _command_starts_with_slash(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("must start with '/'")
        return value

    @field_validator("REDIS_SENTINELS")
    @classmethod
    def _sentinels_are_addresses(cls, value: str) -> str:
        sentinel_addresses(value)  # a ValueError names the entry
        return value

    @property
    def sentinels(self) -> tuple[tuple[str, int], ...]:
        return sentinel_addresses(self.REDIS_SENTINELS)

    @property
    def replicas_to_ack(self) -> int:
        """How many replicas must hold an input before it is acknowledged."""
        if self.REDIS_MIN_REPLICAS_ACK is not None:
            return self.REDIS_MIN_REPLICAS_ACK
        return 1 if self.sentinels else 0

    @field_validator("REDIS_URL", "LLM_BASE_URL")
    @classmethod
    def _url_has_scheme(cls, value: str | None) -> str | None:
        if value is not None and "://" not in value:
            raise ValueError("not a URL")
        return value

    @classmethod
    def load(cls, **overrides: Any) -> Settings:
        """Read the environment; an invalid value becomes one SettingsError line."""
        try:
            return cls(**overrides)
        except ValidationError as error:
            first = error.errors()[0]
            name = str(first["loc"][0]) if first["loc"] else "settings"
            if name in FAULT_NAMED:
                raise SettingsError(_fault_line(name, first["loc"][1:], first["msg"])) from None
            raise SettingsError(_invalid_line(name, first.get("input"))) from None
        except PydanticSettingsError as error:  # a complex value (JSON) that does not parse
            match = re.search(r'field "(\w+)"', str(error))
            name = match.group(1) if match else "settings"
            if name in FAULT_NAMED:
                raise SettingsError(_fault_line(name, (), "not a JSON object")) from None
            raise SettingsError(_invalid_line(name, os.environ.get(name))) from None

    def require(self, *names: str) -> Settings:
        missing = [name for name in names if not getattr(self, name)]
        if missing:
            raise SettingsError(_missing_line(missing))
        return self

    def require_known_tools(self, known: Collection[str], declared: Collection[str]) -> Settings:
        """Stops on a tool name in the approval settings that does not mean what it says.

        `known` are the registry's tool names (matched exactly: names are case-sensitive, so
        `Shell` is unknown rather than silently nothing); `declared` the tools that ask by their
        own declaration, the only ones a waiver can apply to.
        """
        lists = {"APPROVAL_TOOLS": self.approval_tools, "APPROVAL_WAIVED_TOOLS": self.approval_waived_tools}
        for name, names in lists.items():
            unknown = sorted(names - set(known))
            if unknown:
                raise SettingsError(_unknown_tools_line(name, getattr(self, name), unknown, known))
        useless = sorted(self.approval_waived_tools - set(declared))
        if useless:
            raise SettingsError(
                _invalid_line("APPROVAL_WAIVED_TOOLS", self.APPROVAL_WAIVED_TOOLS)
                + f" ({', '.join(useless)} never asks; only {', '.join(sorted(declared))} can be waived)"
            )
        both = sorted(self.approval_waived_tools & self.approval_tools)
        if both:
            raise SettingsError(
                _invalid_line("APPROVAL_WAIVED_TOOLS", self.APPROVAL_WAIVED_TOOLS)
                + f" ({', '.join(both)} is also in APPROVAL_TOOLS, which asks; keep it in one of the two)"
            )
        return self


def sentinel_addresses(value: str) -> tuple[tuple[str, int], ...]:
    """`host:port,host:port` (IPv6 as `[::1]:26379`) as pairs; a ValueError names a bad entry."""
    addresses = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        host, _, port = item.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ValueError(f"{item!r} is not host:port")
        addresses.append((host, int(port)))
    return tuple(addresses)


def _id_set(value: str) -> frozenset[str]:
    return frozenset(item.strip() for item in value.split(",") if item.strip())


def in_team(ids: frozenset[str], team: str) -> frozenset[str]:
    """The ids of a list that count in workspace `team`: plain entries, and `team:` entries
    without their prefix (`T123:U456` is U456 in T123 only, for org-wide installs)."""
    counted = set()
    for item in ids:
        scope, _, bare = item.rpartition(":")
        if not scope or scope == team:
            counted.add(bare)
    return frozenset(counted)


def listed(ids: frozenset[str], team: str, user: str) -> bool:
    """User `user` of workspace `team` is on the list `ids` (by id, or by a `team:user` entry)."""
    return user in in_team(ids, team)


def _missing_line(names: list[str]) -> str:
    described = "; ".join(f"{name} ({EXPECTED.get(name, 'required')})" for name in names)
    return f"threadline: missing setting{'s' if len(names) > 1 else ''}: {described}"


# An invalid value is echoed so the operator can see the typo, except where it holds a secret.
SECRET_SETTINGS = frozenset(
    {
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "LLM_API_KEY",
        "REDIS_SENTINEL_PASSWORD",
        "GITHUB_TOKEN",
        "GITLAB_TOKEN",
    }
)
URL_SETTINGS = frozenset({"REDIS_URL", "LLM_BASE_URL", "SLACK_API_URL"})


def _unknown_tools_line(name: str, value: str, unknown: list[str], known: Collection[str]) -> str:
    return (
        f"threadline: invalid setting {name}={value!r}: unknown tool{'s' if len(unknown) > 1 else ''} "
        f"{', '.join(unknown)} (names are case-sensitive); known tools: {', '.join(sorted(known))}"
    )


# Settings whose one line names the fault and where it is, not the value: theirs is a JSON object
# that may hold a secret in a place no redaction knows (an MCP server's literal header).
FAULT_NAMED = frozenset({"MCP_SERVERS"})


def _fault_line(name: str, where: tuple[int | str, ...], message: str) -> str:
    place = f" at {'.'.join(str(part) for part in where)}" if where else ""
    return f"threadline: invalid setting {name}{place}: {message.removeprefix('Value error, ')}"


def _invalid_line(name: str, value: Any) -> str:
    expected = EXPECTED.get(name, "a valid value")
    return f"threadline: invalid setting {name}={_shown(name, value)}: expected {expected}"


def _shown(name: str, value: Any) -> str:
    if name in SECRET_SETTINGS:
        return repr(MASK)
    if name in URL_SETTINGS and isinstance(value, str):
        return repr(redact_url(value))  # "pw@host" without a scheme is still a password
    return redact_text(repr(value))
