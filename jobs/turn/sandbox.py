"""The shell sandbox of a turn, from the settings: on or off, its uid, limits, and network.

Network is per channel (SHELL_NETWORK_CHANNELS): a sub-agent's session key keeps its root's
channel, so a sub-agent gets exactly the network its thread's channel has.
"""

from __future__ import annotations

from agent.tools.sandbox import SandboxConfig, SandboxLimits
from jobs.settings import Settings
from jobs.turn.mirrors import channel_mirror


def shell_sandbox(settings: Settings, channel: str | None = None) -> SandboxConfig:
    """The sandbox for shell commands of a session in `channel` (None: no channel, no network);
    a repository channel's mirror is readable in it, so git finds the objects its clone borrows."""
    mirror = channel_mirror(settings, channel)
    return SandboxConfig(
        enabled=settings.SHELL_SANDBOX == "on",
        bwrap=settings.SHELL_BWRAP,
        uid=settings.SHELL_SANDBOX_UID,
        network=channel is not None and channel in settings.network_channels,
        read_only=() if mirror is None else (str(mirror),),
        limits=SandboxLimits(
            cpu_seconds=settings.SHELL_CPU_SECONDS,
            memory_mb=settings.SHELL_MEMORY_MB,
            processes=settings.SHELL_MAX_PROCESSES,
            file_size_mb=settings.SHELL_MAX_FILE_MB,
        ),
    )
