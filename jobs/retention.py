"""Retention: a session tree untouched for SESSION_RETENTION_DAYS loses its Redis keys and workspace.

Every worker process calls `sweep` every few seconds; the lock lets one of them through per
`RETENTION_EVERY_S`, and a run removes at most `RETENTION_BATCH` trees, oldest first, from the
index `tl:sessions` (jobs.session.touched). A tree is the session people started and every
sub-agent under it: sub-agents share the root's workspace, and a sub-agent's activity keeps
its root. Nothing live is removed: a session `running`, `queued` or parked (awaiting approval or
agents), or holding a lease, keeps its whole tree, and so does one touched since the index's
time. The root's keys go in one transaction that watches its meta, lease, inbox and wire, so input
arriving mid-removal cancels it instead of landing in a half-removed session.

`threadline purge` (gateway.purge) removes on request through the same `remove`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import cast

from redis import Redis, WatchError

from jobs.keys import (
    PREFIX,
    QUEUED_SESSIONS,
    RETENTION_LOCK,
    RUNNING_SESSIONS,
    SESSION_INDEX,
    SUBAGENT_SEPARATOR,
    SessionKey,
    fixed_session_keys,
    inbox_key,
    lease_key,
    meta_key,
    recent_session_key,
    subagents_key,
    wire_key,
)
from jobs.redis_text import text
from jobs.session.meta import MetaHash
from jobs.session.state import PARKED_STATES
from jobs.session.store import now_ms
from jobs.session.touched import catch_up
from jobs.settings import Settings
from jobs.turn.workspace import remove_workspace

log = logging.getLogger(__name__)

DAY_MS = 24 * 3600 * 1000
RETENTION_EVERY_S = 600  # a sweep per 10 minutes: at most 28,800 trees a day with the batch below
RETENTION_BATCH = 200  # trees per sweep; each is a few round trips and one rmtree
LIVE_STATES = frozenset({"running", "queued"}) | PARKED_STATES


@dataclass(frozen=True)
class Removed:
    """What removing one session tree took away."""

    session: SessionKey
    sub_agents: int
    keys: int
    redis_bytes: int  # MEMORY USAGE of the keys, summed, just before they went
    workspace_bytes: int  # disk bytes, as du counts them


@dataclass(frozen=True)
class Kept:
    session: SessionKey
    why: str  # a live state, "holds a lease" or "touched since"
    forcible: bool  # parked only: `purge --force` may remove it
    touched: int = 0  # ms of the tree's newest touch, where that is why it stays


def sweep(
    redis: Redis, settings: Settings, *, batch: int = RETENTION_BATCH, every_s: float = RETENTION_EVERY_S
) -> list[Removed]:
    """One retention run if no other worker ran one within `every_s`; returns what it removed."""
    if not redis.set(RETENTION_LOCK, "1", nx=True, px=int(every_s * 1000)):
        return []
    catch_up(redis)
    days = settings.SESSION_RETENTION_DAYS
    removed, kept = remove_untouched(redis, settings, now_ms() - days * DAY_MS, batch)
    log.info("retention sweep: removed %d session(s) untouched for %d days, kept %d", len(removed), days,
             len(kept))  # fmt: skip
    return removed


def remove_untouched(
    redis: Redis, settings: Settings, cutoff_ms: int, batch: int
) -> tuple[list[Removed], list[Kept]]:
    """Remove up to `batch` trees last touched before `cutoff_ms`. One kept (or raced) goes to
    the back of the index with the time it was seen live, so it cannot hold up the rest."""
    removed, kept = [], []
    members = cast(list[bytes], redis.zrangebyscore(SESSION_INDEX, 0, cutoff_ms, start=0, num=batch))
    for member in members:
        root = SessionKey.parse(text(member))
        outcome = remove(redis, settings, root, cutoff_ms=cutoff_ms)
        if isinstance(outcome, Removed):
            removed.append(outcome)
        else:
            kept.append(outcome)
            redis.zadd(SESSION_INDEX, {str(root): outcome.touched or now_ms()}, gt=True)
    return removed, kept


def remove(
    redis: Redis,
    settings: Settings,
    root: SessionKey,
    *,
    cutoff_ms: int | None = None,
    force: bool = False,
    extra_keys: tuple[str, ...] = (),
) -> Removed | Kept:
    """Remove the tree of `root` unless it is live (parked may be `force`d) or, with
    `cutoff_ms`, touched since; `extra_keys` (tree_keys_by_scan) are removed too."""
    tree = subagents(redis, root)
    owner = MetaHash(redis, root).read().owner
    own = [*fixed_session_keys(root), *(name for name in extra_keys if name.startswith(root.redis_key("")))]
    others = [name for name in extra_keys if name not in set(own)]  # sub-agents' keys of other names
    names = list(dict.fromkeys(own))
    below = [name for key in tree for name in fixed_session_keys(key)]
    sizes = memory_usage(redis, [*names, *others, *below])
    with redis.pipeline() as pipe:
        pipe.watch(meta_key(root), lease_key(root), inbox_key(root), wire_key(root))  # type: ignore[no-untyped-call]  # redis-py leaves Pipeline.watch unannotated
        kept = why_kept(redis, [root, *tree], cutoff_ms)
        if kept is not None and not (force and kept.forcible):
            return kept
        pipe.multi()
        pipe.delete(*names)
        pipe.zrem(SESSION_INDEX, str(root))
        for members in (RUNNING_SESSIONS, QUEUED_SESSIONS):
            pipe.srem(members, str(root), *map(str, tree))
        try:
            deleted = pipe.execute()[0]
        except WatchError:
            return Kept(root, "touched since", False)
    deleted += sum(_remove_subagent(redis, key, force) for key in tree)
    deleted += sum(int(redis.delete(name)) for name in others)
    _forget_recent(redis, root, owner)
    disk = 0 if MetaHash(redis, root).exists() else remove_workspace(settings, root)
    return Removed(root, len(tree), deleted, sum(sizes.values()), disk)


def subagents(redis: Redis, root: SessionKey) -> list[SessionKey]:
    return [SessionKey.parse(name) for name in sorted(map(text, redis.smembers(subagents_key(root))))]


def why_kept(redis: Redis, tree: list[SessionKey], cutoff_ms: int | None) -> Kept | None:
    """Why the tree must stay, or None. Parked (and nothing else live) is `forcible`."""
    with redis.pipeline(transaction=False) as pipe:
        for key in tree:
            MetaHash.read_touch(pipe, key)
            pipe.exists(lease_key(key))
        read = pipe.execute()
    reasons, touched = [], 0
    for (state, updated, created), leased in zip(read[::2], read[1::2], strict=True):
        state = text(state) if state else "idle"
        reasons += [state] if state in LIVE_STATES else []
        reasons += ["holds a lease"] if leased else []
        stamp = updated or created  # `updated` is the last touch; `created` stands in before one
        touched = max(touched, int(text(stamp)) if stamp and text(stamp).isdigit() else 0)
    if reasons:
        return Kept(tree[0], reasons[0], all(reason in PARKED_STATES for reason in reasons))
    if cutoff_ms is not None and touched > cutoff_ms:
        return Kept(tree[0], "touched since", False, touched)
    return None


def memory_usage(redis: Redis, names: list[str]) -> dict[str, int]:
    """Bytes of each key that exists (MEMORY USAGE, every element of a stream sampled)."""
    with redis.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.memory_usage(name, samples=0)
        sizes = pipe.execute()
    return {name: size for name, size in zip(names, sizes, strict=True) if size is not None}


def tree_keys_by_scan(redis: Redis, root: SessionKey) -> list[str]:
    """Every key of the tree, whatever its name (`unknown:<id>`, `swarm:<id>`): one pass over the
    whole keyspace, which is why only `purge` pays for it."""
    pattern = f"{PREFIX}:{{{root}[{SUBAGENT_SEPARATOR}}}]*"
    return [text(name) for name in redis.scan_iter(match=pattern, count=1000)]


def sessions_in_thread(redis: Redis, channel: str, thread_ts: str) -> list[SessionKey]:
    """The root sessions of a thread in any workspace (a thread link does not name the team)."""
    found = redis.scan_iter(match=f"{PREFIX}:{{*:{channel}:{thread_ts}}}:meta", count=1000)
    return [SessionKey.parse(name[len(PREFIX) + 2 : -len("}:meta")]) for name in sorted(map(text, found))]


def _remove_subagent(redis: Redis, key: SessionKey, force: bool) -> int:
    """A sub-agent's keys, unless it came alive meanwhile (then the catch-up indexes it again)."""
    with redis.pipeline() as pipe:
        pipe.watch(meta_key(key), lease_key(key))  # type: ignore[no-untyped-call]  # as above
        kept = why_kept(redis, [key], None)
        if kept is not None and not (force and kept.forcible):
            return 0
        pipe.multi()
        pipe.delete(*fixed_session_keys(key))
        try:
            return int(pipe.execute()[0])
        except WatchError:
            return 0


def _forget_recent(redis: Redis, root: SessionKey, owner: str | None) -> None:
    """The owner's "latest session here" pointer, if it still names this one (it expires in 30 d)."""
    if owner is None:
        return
    recent = recent_session_key(root.team, root.channel, owner)
    if text(redis.get(recent) or b"") == str(root):
        redis.delete(recent)
