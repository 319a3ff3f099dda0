"""The command line that runs one shell command in bubblewrap, and how it is started.

Order matters to bwrap: mounts apply in the order given, so the workspace is bound after the
private /tmp (a workspace under /tmp stays visible), the root is made read-only last, and the
environment is cleared before the few variables the command gets. bwrap itself is started
with an empty environment: its init process (pid 1 inside) keeps the environment it was
started with, readable in /proc/1/environ.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from agent.tools.sandbox._config import SandboxConfig, sandbox_user

# The merged-/usr links (or, on older systems, the directories themselves).
SYSTEM_ROOTS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
# What programs read from /etc to resolve users and hosts, verify TLS and load libraries:
# nothing with a secret in it (no shadow, no ssh keys, no machine credentials).
ETC_ENTRIES = (
    "passwd", "group", "nsswitch.conf", "hosts", "host.conf", "gai.conf", "ssl", "ca-certificates",
    "ca-certificates.conf", "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime",
    "timezone", "protocols", "services", "mime.types",
)  # fmt: skip
NETWORK_ETC_ENTRIES = ("resolv.conf",)
INSIDE_PATH = "/usr/local/bin:/usr/bin:/bin"
PASSED_LOCALE = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
HOSTNAME = "sandbox"
# Runs inside, before the command: hard and soft limits (so the command cannot raise them),
# no core files in the workspace, then the command's own bash. CPU gets one second between
# soft and hard so an overrun ends with SIGXCPU (nameable) rather than a bare SIGKILL. The
# limits are set inside, not on bwrap, so that the kernel counts RLIMIT_NPROC per sandbox
# (per user namespace) rather than across every sandbox of the same uid.
LIMITS_SCRIPT = (
    'ulimit -S -H -c 0 -d "$2" -u "$3" -f "$4" && ulimit -S -t "$1" && ulimit -H -t "$(($1 + 1))" '
    '|| exit 126; exec /bin/bash -c "$5"'
)


@dataclass(frozen=True)
class Launch:
    """What to execute: argv, its environment and cwd, the (uid, gid) to switch to first."""

    argv: list[str]
    environment: dict[str, str]
    cwd: Path
    user: tuple[int, int] | None = None
    sandboxed: bool = False


def launch(
    config: SandboxConfig, command: str, workspace: Path | None, environment: Mapping[str, str]
) -> Launch:
    """How to run `command` in `workspace` (None: in the sandbox's /tmp, for the probe)."""
    if not config.enabled:
        assert workspace is not None
        return Launch(["bash", "-c", command], dict(environment), workspace)
    argv = [bwrap_path(config), *_namespaces(config), *_filesystem(config, workspace)]
    argv += _environment(environment)
    argv += ["--", "/bin/bash", "-c", LIMITS_SCRIPT, "threadline-limits", *_limits(config), command]
    # cwd "/": bwrap may run as a uid that cannot enter the workspace's parents; it binds by path.
    return Launch(argv, {}, Path("/"), sandbox_user(config), sandboxed=True)


def bwrap_path(config: SandboxConfig) -> str:
    return shutil.which(config.bwrap) or config.bwrap


def _namespaces(config: SandboxConfig) -> list[str]:
    argv = ["--unshare-all", "--unshare-user", "--disable-userns"]
    if config.network:
        argv.append("--share-net")
    return [*argv, "--die-with-parent", "--new-session", "--hostname", HOSTNAME]


def _filesystem(config: SandboxConfig, workspace: Path | None) -> list[str]:
    scratch = str(config.limits.memory_mb * 1024 * 1024)
    etc = ETC_ENTRIES + (NETWORK_ETC_ENTRIES if config.network else ())
    argv = ["--ro-bind", "/usr", "/usr", *_system_roots()]
    for entry in etc:
        argv += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", scratch, "--tmpfs", "/tmp", "--size", scratch, "--tmpfs", "/dev/shm"]
    if workspace is not None:
        argv += ["--bind", str(workspace), str(workspace)]
    for shared in config.read_only:  # e.g. the object store a workspace's clone borrows from
        argv += ["--ro-bind-try", shared, shared]
    # The root and /dev are bwrap's own tmpfs without a size limit: read-only, so the only
    # places to write are the workspace and the size-capped /tmp and /dev/shm.
    argv += ["--remount-ro", "/", "--remount-ro", "/dev"]
    return [*argv, "--chdir", str(workspace) if workspace is not None else "/tmp"]


@cache
def _system_roots() -> tuple[str, ...]:
    argv: list[str] = []
    for name in SYSTEM_ROOTS:
        path = Path("/") / name
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
    return tuple(argv)


def _environment(environment: Mapping[str, str]) -> list[str]:
    inside = {"PATH": INSIDE_PATH, "HOME": "/tmp", "TMPDIR": "/tmp", "TERM": "dumb", "LANG": "C.UTF-8"}
    inside.update({name: environment[name] for name in PASSED_LOCALE if name in environment})
    argv = ["--clearenv"]
    for name, value in inside.items():
        argv += ["--setenv", name, value]
    return argv


def _limits(config: SandboxConfig) -> list[str]:
    limits = config.limits
    # bash's units: seconds, KiB of data, processes, 1024-byte blocks of file size.
    return [
        str(limits.cpu_seconds),
        str(limits.memory_mb * 1024),
        str(limits.processes),
        str(limits.file_size_mb * 1024),
    ]
