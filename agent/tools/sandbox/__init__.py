"""The OS sandbox every `shell` command runs in (bubblewrap), and its configuration.

A command a model wrote is hostile until proven otherwise: it must not read the worker's
environment or files, see other sessions' workspaces, reach Redis or the network, exhaust the
machine, or leave processes behind. `bwrap` gives it its own user, PID, mount, IPC, UTS and
network namespaces, a read-only minimal system, a private /tmp, and the session workspace as
the only writable path. When the worker runs as root, bwrap itself is started as an
unprivileged uid (the kernel never enforces RLIMIT_NPROC for uid 0), and the workspace belongs
to that uid.

The caller (jobs/) builds a `SandboxConfig` from its settings and injects it; nothing here
reads settings or the environment.
"""

from __future__ import annotations

from agent.tools.sandbox._bwrap import Launch, launch
from agent.tools.sandbox._config import UNSANDBOXED, SandboxConfig, SandboxLimits, sandbox_user
from agent.tools.sandbox._probe import FIX, REACH_FIX, bwrap_version, sandbox_problem, workspace_problem
from agent.tools.sandbox._processes import descendants, processes_inside

__all__ = [
    "FIX",
    "REACH_FIX",
    "UNSANDBOXED",
    "Launch",
    "SandboxConfig",
    "SandboxLimits",
    "bwrap_version",
    "descendants",
    "launch",
    "processes_inside",
    "sandbox_problem",
    "sandbox_user",
    "workspace_problem",
]
