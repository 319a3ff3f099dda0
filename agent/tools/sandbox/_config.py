"""What the caller decides about the sandbox: on or off, which bwrap, which uid, network, limits."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of every process in the sandbox (soft and hard rlimits, set before the command runs).

    Per process, as rlimits are: total memory and disk of a command need cgroups and quotas,
    which stay the operator's job. Wall time is the call's own `timeout` (tools/defaults.py).
    """

    # Ten CPU-minutes per process: a test run or a build step stays far below (compilers are
    # one process per file); a spinning loop or a miner is stopped well within the turn.
    cpu_seconds: int = 600
    # RLIMIT_DATA rather than RLIMIT_AS: it counts what a process can actually fill (heap,
    # private writable mappings) and not address space merely reserved, which Go, the JVM,
    # V8 and sanitizers reserve by the gigabyte and would fail under an AS limit. 2 GiB
    # fits a linker or a test suite; also the size of the private /tmp and /dev/shm.
    memory_mb: int = 2048
    # RLIMIT_NPROC, processes and threads, counted per sandbox (set inside its user namespace):
    # room for `make -j`, pytest-xdist and threaded runtimes; a fork bomb stops at 256.
    processes: int = 256
    # RLIMIT_FSIZE: a build artefact fits in 1 GiB; `yes > file` stops there (many files still
    # fill a disk: a quota on AGENT_WORKDIR is the operator's).
    file_size_mb: int = 1024


@dataclass(frozen=True)
class SandboxConfig:
    enabled: bool = True
    bwrap: str = "bwrap"  # a path, or a name looked up on PATH
    uid: int = 65534  # the uid (and gid) commands run as when the worker is root
    network: bool = False  # True: the host's network (egress); False: an empty network namespace
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    # Paths the sandbox may read besides the system's (bound read-only at the same path): the
    # shared object store of a repository clone; the workspace stays the only writable path.
    read_only: tuple[str, ...] = ()


UNSANDBOXED = SandboxConfig(enabled=False)


def sandbox_user(config: SandboxConfig) -> tuple[int, int] | None:
    """The (uid, gid) bwrap is started as, when it is not the worker's own: the worker is root.

    Root's processes are exempt from RLIMIT_NPROC, and a root-owned workspace would be
    read-only to a command without capabilities; so a root worker hands both to this uid.
    """
    if not config.enabled or os.geteuid() != 0:
        return None
    return config.uid, config.uid
