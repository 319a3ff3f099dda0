"""The directory where the processes of one `web` (gunicorn's workers) or one `worker` (the RQ
workers its supervisor starts; the work horses a lone forking worker forks) keep their metric
values, so one scrape adds them all up. A process that records alone keeps them in memory.

prometheus_client picks between in-memory values and these files when it is first imported, so
this runs before anything imports it (the CLI calls it first), and this module must not import
it. Values left by an earlier run would be counted again, so the directory starts empty; a
process that would empty one still in use (the same PORT or METRICS_PORT twice on one machine)
stops at start instead, before it could wipe the running process's values.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import sys
import tempfile
from io import TextIOWrapper
from pathlib import Path

from jobs.settings import SettingsError

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's variable; ours names a base


def prepare_metrics_dir(name: str) -> Path:
    """`<PROMETHEUS_MULTIPROC_DIR>/<name>` emptied, or a fresh temporary directory removed when
    this process exits. The name says the process and the port it serves on (`web-3000`,
    `worker-9100`): the processes of one machine never share a port, so never a directory."""
    if "prometheus_client" in sys.modules:
        raise RuntimeError("prepare_metrics_dir must run before prometheus_client is imported")
    base = os.environ.get(MULTIPROC_DIR)
    if base:
        path = Path(base) / name
        _hold(path)
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    else:
        path = Path(tempfile.mkdtemp(prefix=f"threadline-{name}-metrics-"))
        _remove_at_exit(path, os.getpid())
    os.environ[MULTIPROC_DIR] = str(path)
    return path


_held: list[TextIOWrapper] = []  # open for the life of the process (and of its forks)


def _hold(path: Path) -> None:
    """Lock `<path>.lock` for as long as this process lives: the kernel lets go when it ends,
    however it ends, so a crashed run never blocks the next one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = open(path.with_name(f"{path.name}.lock"), "a")  # noqa: SIM115 - held until exit
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise SettingsError(
            f"threadline: another process on this machine keeps its metrics in {path} (the same PORT"
            " or METRICS_PORT twice): give each process its own port"
        ) from None
    _held.append(lock)


_temporary: list[tuple[Path, int]] = []  # this process's temporary directory, and its owner


def _remove_at_exit(path: Path, owner_pid: int) -> None:
    _temporary.append((path, owner_pid))
    atexit.register(remove_temporary_metrics_dir)


def remove_temporary_metrics_dir() -> None:
    """Remove the temporary directory this process made, if any: at exit, or before an
    `os._exit` (a worker's), which skips the exit handlers."""
    for path, owner_pid in _temporary:
        if os.getpid() == owner_pid:  # a forked worker exiting must not take the directory along
            shutil.rmtree(path, ignore_errors=True)


def keep_metrics_in_memory() -> None:
    """For a process whose metrics nobody serves: files there would pile up, never emptied."""
    os.environ.pop(MULTIPROC_DIR, None)
