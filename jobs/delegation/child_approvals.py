"""A sub-agent's approval requests, shown in its root's thread and decided from there.

A sub-agent runs under its parent's permission policy, so a call that needs a person's
approval parks the sub-agent's step as it would park the parent's. The request card is
posted in the root session's thread (the sub-agent has none) and the approval id is routed
back: deciding it in the root's session decides it in the sub-agent's.
"""

from __future__ import annotations

from redis import Redis

from jobs.delegation.children import child_info
from jobs.keys import SessionKey, approval_routes_key
from jobs.queues import schedule_delivery
from jobs.redis_text import text
from jobs.session.approvals import ApprovalStore
from jobs.session.notices import ApprovalRequestNotice
from jobs.session.store import SessionStore

ROUTES_TTL_S = 7 * 24 * 3600  # as long as an approval card is worth clicking


def forward_approvals(store: SessionStore) -> None:
    info = child_info(store)
    if info is None:
        return
    root = SessionStore(store.redis, info.root)
    for approval in ApprovalStore(store).pending():
        store.redis.hset(approval_routes_key(info.root), approval.approval_id, str(store.key))
        reason = f"Asked by the sub-agent “{info.description}”." + (
            f" {approval.reason}" if approval.reason else ""
        )
        root.post_notice(
            ApprovalRequestNotice(
                turn_id=approval.turn_id,
                approval_id=approval.approval_id,
                tool_call_id=approval.tool_call_id,
                tool_name=approval.tool_name,
                summary=approval.summary,
                details=approval.details,  # a person in the root thread approves what they can read
                reason=reason,
            )
        )
    store.redis.expire(approval_routes_key(info.root), ROUTES_TTL_S)
    schedule_delivery(store.redis, info.root)


def approval_route(redis: Redis, key: SessionKey, approval_id: str) -> SessionKey | None:
    """The sub-agent session an approval shown in this thread belongs to, if any."""
    raw = redis.hget(approval_routes_key(key), approval_id)
    return SessionKey.parse(text(raw)) if raw else None
