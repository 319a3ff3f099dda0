"""The tools, system prompt and policy of one turn, on top of the per-process tool setup.

Schemas and validators are built once per process (`ToolSetup`); each turn binds what is
its own: the Skill tool to the session's skill catalog and depth, Agent and AgentSwarm to
the session's launcher and history, http_get to the internal hosts the settings open, shell to
the sandbox of the session's channel, send_file to the session's outbox, open_pull_request to
the channel's forge (jobs.forge), the tools of the MCP servers that serve the channel
(jobs.turn.mcp), the workspace write
lock around every tool, and the profile of a sub-agent (its disabled tools, same policy and
approval rules as its parent; no send_file).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from agent.delegation import AgentBinding, AgentSwarmTool, AgentTool
from agent.delegation.profiles import DEFAULT_PROFILE, profile_named
from agent.messages import Message
from agent.prompts import system_prompt
from agent.skills import SkillCatalog, SkillTool, listing_text, session_skill_roots
from agent.tools.base import Tool
from agent.tools.builtin import HttpGet, SendFile, Shell, builtin_tools
from agent.tools.builtin.http_policy import HttpGetPolicy
from agent.tools.builtin.pull_request import OpenPullRequest
from agent.tools.overlay import ToolOverlay
from agent.tools.policy import AskForApproval
from agent.tools.registry import ToolRegistry, openai_tool_declarations
from agent.tools.write_lock import LockedTool
from jobs.delegation.children import ChildInfo
from jobs.delegation.launcher import RedisLauncher
from jobs.delegation.limits import SubagentLimits
from jobs.delegation.write_lock import RedisWriteLock
from jobs.forge.pull_requests import ForgePullRequests
from jobs.session.store import SessionStore
from jobs.settings import Settings
from jobs.turn.attachments import OutboxFileSender
from jobs.turn.mcp import TurnServers, down_text, listed_catalog
from jobs.turn.mirrors import channel_mirror
from jobs.turn.publisher import Publisher
from jobs.turn.sandbox import shell_sandbox

DELEGATION_TOOLS = ("Agent", "AgentSwarm")


@cache
def process_registry() -> ToolRegistry:
    """Every tool a turn may offer, with schemas and validators built once per process."""
    return ToolRegistry(
        [*builtin_tools(), SendFile(), OpenPullRequest(), SkillTool(), AgentTool(), AgentSwarmTool()]
    )


@cache
def http_get_tool(allowlist: str) -> HttpGet:
    """http_get reaching public addresses and what HTTP_GET_ALLOW_HOSTS opens (the registry's
    own instance opens nothing)."""
    return HttpGet(HttpGetPolicy.from_allowlist(allowlist))


def approval_policy(settings: Settings) -> AskForApproval:
    """Who asks: every tool that declares it, plus APPROVAL_TOOLS, less an explicit waiver."""
    return AskForApproval(named=settings.approval_tools, waived=settings.approval_waived_tools)


def check_approval_settings(settings: Settings) -> Settings:
    """At start: an approval setting naming a tool this registry lacks stops the process."""
    registry = process_registry()
    declared = [name for name in registry.names if _declares_approval(registry, name)]
    return settings.require_known_tools(registry.names, declared)


def tools_that_ask(settings: Settings) -> list[str]:
    """The tools whose calls wait for a person's approval under these settings (open_pull_request
    only where a channel's repository has a forge: elsewhere it is refused before anyone is asked;
    `<server>__*` for an MCP server some of whose tools ask)."""
    registry = process_registry()
    named, waived = settings.approval_tools, settings.approval_waived_tools
    usable = set(registry.names)
    if not any(repo.forge for repo in settings.CHANNEL_REPOS.values()):
        usable.discard("open_pull_request")
    declared = [name for name in usable if _declares_approval(registry, name) and name not in waived]
    servers = [f"{name}__*" for name, entry in settings.MCP_SERVERS.items() if entry.approval != "never"]
    return sorted({*declared, *(named & usable)}) + servers


def _declares_approval(registry: ToolRegistry, name: str) -> bool:
    tool = registry.get(name)
    return tool is not None and tool.requires_approval


@dataclass(frozen=True)
class TurnTools:
    registry: ToolRegistry
    declarations: list[dict[str, Any]]
    system_prompt: str
    close: Callable[[], Awaitable[None]]  # on the turns' loop, when the turn ends: its stdio MCP servers


def load_catalog(settings: Settings, workspace: Path) -> SkillCatalog:
    return SkillCatalog.load(session_skill_roots(workspace, settings.SHARED_SKILLS_DIR))


def turn_tools(
    store: SessionStore,
    settings: Settings,
    workspace: Path,
    info: ChildInfo | None,
    history: Callable[[], list[Message]],
    publisher: Publisher | None = None,
) -> TurnTools:
    """`publisher`: the turn's, which tells the thread what it must know off the loop."""
    depth = info.depth if info is not None else 0
    profile = profile_named(info.profile if info is not None else None) or profile_named(DEFAULT_PROFILE)
    assert profile is not None
    catalog = load_catalog(settings, workspace)
    binding = AgentBinding(
        launcher=RedisLauncher(
            store,
            turn_timeout_s=settings.TURN_TIMEOUT_SECONDS,
            swarm_concurrency=settings.AGENT_SWARM_MAX_CONCURRENCY,
            limits=SubagentLimits.of(settings),
        ),
        history=history,
        depth=depth,
        profile=profile.name,
        model=settings.LLM_MODEL,
    )
    bound: dict[str, Tool[Any]] = {
        "Skill": SkillTool(catalog, query_depth=depth, session_id=str(store.key)),
        "Agent": AgentTool(binding),
        "AgentSwarm": AgentSwarmTool(binding),
        "http_get": http_get_tool(settings.HTTP_GET_ALLOW_HOSTS),
        "shell": Shell(sandbox=shell_sandbox(settings, store.key.channel)),
        "send_file": SendFile(OutboxFileSender(store), settings.UPLOAD_MAX_BYTES),
        "open_pull_request": OpenPullRequest(
            ForgePullRequests(store, settings, workspace, channel_mirror(settings, store.key.channel))
        ),
    }
    hidden = set(profile.disabled_tools)
    if info is not None:  # a sub-agent's work reaches the thread, and the repository, through its parent
        hidden.update(("send_file", "open_pull_request"))
    if not catalog.for_model():
        hidden.add("Skill")  # nothing to load: the tool would only invite "not found"
    if not binding.may_delegate:
        hidden.update(DELEGATION_TOOLS)
    lock = RedisWriteLock(store.redis, workspace)
    mcp = listed_catalog(settings)
    servers = TurnServers(settings, store.key.channel, workspace)
    told = publisher or Publisher()
    registry = ToolOverlay(
        process_registry(),
        bound=bound,
        hidden=hidden,
        wrap=lambda tool: LockedTool(tool, lock),
        added=mcp.tools_for(store.key.channel, servers),
        missing=lambda name: down_text(mcp, store, told, name),
    )
    prompt = system_prompt(registry.names)
    skills = listing_text(catalog.for_model())
    return TurnTools(
        registry=registry,
        declarations=openai_tool_declarations(registry),
        system_prompt=f"{prompt}\n\n{skills}" if skills else prompt,
        close=lambda: servers.close(mcp),
    )
