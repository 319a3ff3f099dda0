"""`threadline status`: the system at a glance (or one thread in detail), as text or `--json`.

The figures come from `jobs.overview` and `jobs.session.detail`, which read Redis alone; this
module only lays them out.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from redis import Redis

from gateway.links import parse_thread_link
from jobs import retention
from jobs.overview import Overview, overview
from jobs.session.detail import SessionDetail, session_detail
from jobs.usage import Prices

Say = Callable[[str], None]


def print_status(
    redis: Redis, *, as_json: bool, thread: str | None, priced: Prices | None = None, say: Say = print
) -> int:
    if thread is None:
        found = overview(redis)
        say(found.model_dump_json(indent=2) if as_json else "\n".join(overview_lines(found, priced)))
        return 0
    ref = parse_thread_link(thread)
    if ref is None:
        say(f"threadline: not a Slack thread link: {thread}")
        return 2
    roots = retention.sessions_in_thread(redis, ref.channel, ref.thread_ts)
    details = [session_detail(redis, root) for root in roots]
    if as_json:
        say(json.dumps([detail.model_dump(mode="json") for detail in details], indent=2))
    elif not details:
        say(f"nothing stored for {ref.channel} {ref.thread_ts}")
    else:
        say("\n\n".join("\n".join(detail_lines(detail, priced)) for detail in details))
    return 0


def overview_lines(found: Overview, priced: Prices | None = None) -> list[str]:
    lines = [f"threadline status at {found.at}", "", "sessions:"]
    for row in found.sessions:
        where = f" on {row.worker}" if row.worker else ""
        lines.append(
            f"  {row.state:<17} {row.key}  owner {row.owner or '-'}  for {_duration(row.age_s)}"
            f"{where}  waiting inputs {row.waiting_inputs}"
        )
        if row.usage.steps:
            lines.append(f"    model usage: {row.usage.describe(priced)}")
    if not found.sessions:
        lines.append("  none working")
    lines.append(f"  ({found.idle_or_done} more idle, done or cancelled this week)")
    lines += ["", "workers:"]
    for worker in found.workers:
        lines.append(
            f"  {worker.name}  {worker.state}  {','.join(worker.queues)}  up {_duration(worker.up_s)}"
            f"  heartbeat {_duration(worker.heartbeat_age_s)} ago  running {len(worker.running)}"
        )
        lines += [
            f"    {job.queue} {job.session or job.job_id} for {_duration(job.since_s)}"
            for job in worker.running
        ]
    if not found.workers:
        lines.append("  none alive")
    lines += ["", "queues:"]
    for queued in found.queues:
        lines.append(
            f"  {queued.name:<6} waiting {queued.waiting} (oldest {_duration(queued.oldest_s)})"
            f"  running {queued.running}  scheduled {queued.scheduled}  failed {queued.failed}"
        )
    oldest = found.oldest_waiting_input
    waiting = f"{oldest.session} ({oldest.where}) for {_duration(oldest.age_s)}" if oldest else "none"
    lines += ["", f"oldest waiting input: {waiting}"]
    return lines


def detail_lines(detail: SessionDetail, priced: Prices | None = None) -> list[str]:
    lines = [
        f"session {detail.key}",
        f"  state {detail.state}  owner {detail.owner or '-'}  last turn {detail.last_turn_reason or '-'}"
        f"  waiting inputs {detail.waiting_inputs}",
        f"  model usage: {detail.usage.describe(priced) if detail.usage.steps else 'none yet'}",
    ]
    for turn in detail.turns:
        ended = turn.ended or "not ended"
        took = f" in {turn.duration_ms / 1000:.1f}s" if turn.duration_ms is not None else ""
        calls = len(turn.tool_calls)
        lines.append(f"  turn {turn.turn_id}: {turn.steps} steps, {calls} tool calls, {ended}{took}")
        if turn.usage.steps:
            lines.append(f"    model usage: {turn.usage.describe(priced)}")
        lines += [f"    {call.name} {call.call_id}: {call.outcome}" for call in turn.tool_calls]
    for approval in detail.approvals:
        by = f" by {approval.decided_by}" if approval.decided_by else ""
        lines.append(f"  approval {approval.tool} ({approval.summary}): {approval.state}{by}")
    lines += [f"  repair {repair.summary()}" for repair in detail.repairs]
    lines += [f"  sub-agent {child}" for child in detail.subagents]
    return lines


def _duration(seconds: int | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
