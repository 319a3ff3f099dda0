"""Disk bytes of ten sessions' clones in a repository channel (issue 18): a full clone each vs
clones that borrow one shared mirror's objects (jobs/turn/mirrors.py).

    python -m bench.clones [--sessions 10] [--commits 200]

The repository is made here: `--commits` commits of a 20 kB incompressible file each. "Full
clone each" is `git clone --no-local` per session, as a clone over the network copies every
object; "shared" is `ensure_workspace`, as a worker does it. Bytes are `du`'s blocks.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

from jobs.keys import SessionKey
from jobs.settings import Settings
from jobs.turn.mirrors import MIRRORS_DIR
from jobs.turn.workspace import disk_bytes, ensure_workspace

GIT = ["git", "-c", "user.email=b@b", "-c", "user.name=bench"]


def make_repository(path: Path, commits: int) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for index in range(commits):
        (path / f"file{index % 20}.bin").write_bytes(os.urandom(20_000))
        subprocess.run([*GIT, "-C", str(path), "add", "."], check=True)
        subprocess.run([*GIT, "-C", str(path), "commit", "-qm", f"c{index}"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--commits", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repository(root / "repo", args.commits)
        full = root / "full"
        for index in range(args.sessions):
            clone = ["git", "clone", "-q", "--no-local", str(root / "repo"), str(full / str(index))]
            subprocess.run(clone, check=True)
        settings = Settings.load(AGENT_WORKDIR=root / "ws", CHANNEL_REPOS={"C1": str(root / "repo")})
        for index in range(args.sessions):
            key = SessionKey(team="T1", channel="C1", thread_ts=f"1700000000.{index:06d}")
            ensure_workspace(settings, key)
        shared = disk_bytes(root / "ws" / "T1")
        mirror = disk_bytes(root / "ws" / MIRRORS_DIR)
        print(f"repository: {args.commits} commits; {args.sessions} sessions")
        print(f"full clone each:       {disk_bytes(full):>14,} bytes")
        total = shared + mirror
        print(f"shared object store:   {total:>14,} bytes (workspaces {shared:,} + mirror {mirror:,})")


if __name__ == "__main__":
    main()
