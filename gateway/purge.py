"""`threadline purge`: remove sessions on request (a person asked for their data to go), saying what went.

`--thread <link>` removes every session of that Slack thread (a link does not name the
workspace, so each team's is found), keys of any name included; `--older-than <days>` every
session tree untouched that long. A running, queued or leased session is never removed: a
worker is writing into it, and what it writes next would bring half a session back. Stop it
first (`!stop`). A parked one (awaiting approval or agents) holds no worker, so `--force`
removes it; without it, it is refused too, since a person is expected to act on it.
"""

from __future__ import annotations

from collections.abc import Callable

from redis import Redis

from gateway.links import parse_thread_link
from jobs import retention
from jobs.keys import SessionKey
from jobs.session.store import now_ms
from jobs.session.touched import catch_up
from jobs.settings import Settings

BATCH = 500

Say = Callable[[str], None]


def purge_thread(redis: Redis, settings: Settings, link: str, *, force: bool, say: Say = print) -> int:
    ref = parse_thread_link(link)
    if ref is None:
        say(f"threadline: not a Slack thread link: {link}")
        return 2
    roots = retention.sessions_in_thread(redis, ref.channel, ref.thread_ts)
    if not roots:
        say(f"nothing stored for {ref.channel} {ref.thread_ts}")
    outcomes = [_remove_all(redis, settings, root, force) for root in roots]
    return _report(outcomes, say, force=force)


def _remove_all(
    redis: Redis, settings: Settings, root: SessionKey, force: bool
) -> retention.Removed | retention.Kept:
    """Keys of any name too: a person asked, so the whole keyspace is looked through for them."""
    every_key = tuple(retention.tree_keys_by_scan(redis, root))
    return retention.remove(redis, settings, root, force=force, extra_keys=every_key)


def purge_older_than(redis: Redis, settings: Settings, days: float, *, say: Say = print) -> int:
    cutoff = now_ms() - int(days * retention.DAY_MS)
    catch_up(redis, calls=None)  # sessions the index has not seen yet
    outcomes: list[retention.Removed | retention.Kept] = []
    while True:
        removed, kept = retention.remove_untouched(redis, settings, cutoff, BATCH)
        outcomes += [*removed, *kept]
        if not removed and not kept:
            break
    _report(outcomes, say, force=False)  # live ones stay, as they would in a sweep
    total = sum(isinstance(each, retention.Removed) for each in outcomes)
    say(f"removed {total} session(s) untouched for {days:g} days")
    return 0


def _report(outcomes: list[retention.Removed | retention.Kept], say: Say, *, force: bool) -> int:
    refused = False
    for outcome in outcomes:
        if isinstance(outcome, retention.Removed):
            say(_removed_line(outcome))
        elif outcome.why != "touched since":
            refused = True
            hint = "" if force or not outcome.forcible else "; --force removes it"
            say(f"kept {outcome.session}: {outcome.why} (stop it first{hint})")
    return 1 if refused else 0


def _removed_line(removed: retention.Removed) -> str:
    under = f" with {removed.sub_agents} sub-agent(s)" if removed.sub_agents else ""
    return (
        f"removed {removed.session}{under}: {removed.keys} Redis keys ({removed.redis_bytes:,} bytes), "
        f"workspace {removed.workspace_bytes:,} bytes"
    )
