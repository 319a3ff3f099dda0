"""Where sessions' files live, and whether every worker sees the same place.

The model (README, "Running on several machines"): AGENT_WORKDIR is one storage that every
turn worker mounts (a network filesystem when workers run on several machines). Nothing routes
a session to a machine. What makes a wrong setup impossible to miss:

- The storage names itself: the first worker to use it writes a random id into
  `AGENT_WORKDIR/.threadline-storage`; every worker that mounts the same storage reads the same
  id, and a worker with a disk of its own makes a different one.
- Every turn worker publishes that id in Redis (`tl:storage:<host>:<pid>`, refreshed while it
  lives), so `threadline doctor` can say whether all live workers see the same storage.
- A session notes the id of the storage its workspace was made on (meta field `workspace`);
  a worker that finds the workspace missing stops the turn and says why instead of starting
  an empty one (jobs.turn.workspace.open_workspace).
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

from pydantic import BaseModel
from redis import Redis

from jobs.keys import storage_key

STORAGE_ID_FILE = ".threadline-storage"


class StorageSeen(BaseModel):
    """What one worker process publishes about its AGENT_WORKDIR."""

    storage: str  # the id in the storage's STORAGE_ID_FILE
    path: str  # AGENT_WORKDIR as that worker resolves it
    host: str
    pid: int


def storage_id(workdir: Path) -> str:
    """The id of the storage under `workdir`, written by whichever worker got there first."""
    workdir.mkdir(parents=True, exist_ok=True)
    marker = workdir / STORAGE_ID_FILE
    try:
        return marker.read_text().strip()
    except FileNotFoundError:
        pass
    mine = workdir / f"{STORAGE_ID_FILE}.{uuid.uuid4().hex}"
    mine.write_text(uuid.uuid4().hex + "\n")
    try:
        os.link(mine, marker)  # atomic, and refused if another worker wrote it meanwhile
    except FileExistsError:
        pass
    finally:
        mine.unlink()
    return marker.read_text().strip()


def publish_storage(redis: Redis, workdir: Path, ttl_s: int) -> StorageSeen:
    """Say, for `ttl_s`, which storage this worker process sees."""
    seen = StorageSeen(
        storage=storage_id(workdir), path=str(workdir.resolve()), host=socket.gethostname(), pid=os.getpid()
    )
    redis.set(storage_key(seen.host, seen.pid), seen.model_dump_json(), ex=ttl_s)
    return seen


def storage_seen_by(redis: Redis, host: str, pid: int) -> StorageSeen | None:
    raw = redis.get(storage_key(host, pid))
    return StorageSeen.model_validate_json(raw) if raw else None
