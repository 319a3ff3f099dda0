"""Every Redis key threadline writes, and the field names of a session's hashes (docs/architecture.md,
"Redis layout").

This is the one place a key string is assembled: modules call the function for the key they
use, so the whole layout can be read here. Each key says what it holds and which module owns
it (writes it; others may read). A session's keys share one hash tag, `{team:channel:thread_ts}`,
which groups them; it does not make threadline run on a Redis Cluster, which is not supported
(RQ does not run on one, and a mention's one script also writes keys outside the session:
docs/architecture.md, "Redis"). RQ's own keys (`rq:job:<id>`, `rq:queue:<name>`, `rq:queues`) are RQ's: we
take them from RQ (`Job.key_for`, `Queue.key`), never spell them.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, field_validator

PREFIX = "tl"
# Joins a sub-agent's id to its parent's thread_ts. A Slack ts never contains it, so a key with
# it names a sub-agent session, which has no Slack thread of its own (nothing is posted for it).
SUBAGENT_SEPARATOR = "-"


class SessionKey(BaseModel):
    """A Slack thread: the workspace, the channel and the ts of the thread's first message."""

    model_config = ConfigDict(frozen=True)

    team: str
    channel: str
    thread_ts: str

    @field_validator("team", "channel", "thread_ts")
    @classmethod
    def _no_separators(cls, value: str) -> str:
        if not value or any(ch in value for ch in ":{} "):
            raise ValueError(f"not a Slack id: {value!r}")
        return value

    def __str__(self) -> str:
        return f"{self.team}:{self.channel}:{self.thread_ts}"

    @classmethod
    def parse(cls, text: str) -> SessionKey:
        team, channel, thread_ts = text.split(":")
        return cls(team=team, channel=channel, thread_ts=thread_ts)

    def redis_key(self, part: str) -> str:
        """The session's key `part`; call the named functions below rather than this."""
        before, after = session_key_around(part)
        return f"{before}{self}{after}"

    @property
    def is_subagent(self) -> bool:
        return SUBAGENT_SEPARATOR in self.thread_ts

    def subagent(self, agent_id: str) -> SessionKey:
        """The session of this session's sub-agent `agent_id`."""
        thread_ts = f"{self.thread_ts}{SUBAGENT_SEPARATOR}{agent_id}"
        return SessionKey(team=self.team, channel=self.channel, thread_ts=thread_ts)


# -- a session's state: jobs.session -------------------------------------------------------------


def wire_key(key: SessionKey) -> str:
    """Stream: the wire log, every record as JSON in field RECORD_FIELD (jobs.session.store)."""
    return key.redis_key("wire")


def wire_index_key(key: SessionKey) -> str:
    """Hash: idempotency key → wire entry id, so a retried append writes once (jobs.session.store)."""
    return key.redis_key("wireidx")


def inbox_key(key: SessionKey) -> str:
    """List: UserInput JSON waiting for the running turn's next step (jobs.input, jobs.session.inbox)."""
    return key.redis_key("inbox")


def early_replies_key(key: SessionKey) -> str:
    """Hash: Slack ts → a thread reply that came before the session's first input, held until that
    input folds it in (jobs.input, jobs.session.early)."""
    return key.redis_key("early")


def outbox_key(key: SessionKey) -> str:
    """Stream: notices for the thread, each as JSON in field NOTICE_FIELD (jobs.session.store)."""
    return key.redis_key("outbox")


def session_key_around(part: str) -> tuple[str, str]:
    """What comes before and after a session (`str(SessionKey)`) in its key `part`: for a Lua
    script that reads the key of a session it found in a set (jobs/input.lua)."""
    return f"{PREFIX}:{{", f"}}:{part}"


def meta_key(key: SessionKey) -> str:
    """Hash: the session's meta, fields MetaField below (jobs.session.meta; jobs.input records input)."""
    return key.redis_key("meta")


def lease_key(key: SessionKey) -> str:
    """String: the token of the turn (or compaction) that holds the session (jobs.session.lease)."""
    return key.redis_key("lease")


def checkpoint_key(key: SessionKey) -> str:
    """String: JSON of the folded history after a compaction and the wire id it covers
    (jobs.session.history)."""
    return key.redis_key("checkpoint")


def approvals_key(key: SessionKey) -> str:
    """Hash: approval id → the parked call's Approval JSON (jobs.session.approvals)."""
    return key.redis_key("approvals")


def approval_states_key(key: SessionKey) -> str:
    """Hash: approval id → pending / approved / denied / cancelled (jobs.session.approvals)."""
    return key.redis_key("approval_state")


def approval_deciders_key(key: SessionKey) -> str:
    """Hash: approval id → the Slack user who decided it (jobs.session.approvals)."""
    return key.redis_key("approval_by")


# -- scheduling and control: jobs.queues, jobs.control, jobs.janitor ------------------------------


def turn_queued_key(key: SessionKey) -> str:
    """String: the token of the turn job queued and not yet started; one per session (jobs.queues,
    jobs.input)."""
    return key.redis_key("queued")


def turn_wanted_key(key: SessionKey) -> str:
    """String: a turn job found the session leased; whoever holds the lease schedules a turn when
    it gives the session back (jobs.session.lease)."""
    return key.redis_key("wanted")


def delivery_queued_key(key: SessionKey) -> str:
    """String: the id of the delivery job queued and not yet started (jobs.queues)."""
    return key.redis_key("delivery_queued")


def cancel_key(key: SessionKey) -> str:
    """String: who asked to cancel the turn; the running loop stops when it sees it (jobs.control)."""
    return key.redis_key("cancel")


# Pub/sub: a session key, published with every cancel of a running turn; the process running
# that turn hears it (jobs.turn.cancels). The `cancel` flag above is the durable record.
CANCELS_CHANNEL: Final = f"{PREFIX}:cancels"
# Written just before web's WAIT, on its connection (jobs.replication): the replicas that hold it
# hold every earlier write.
REPLICATION_MARK: Final = f"{PREFIX}:replicated"


def unknown_result_notice_key(key: SessionKey, tool_call_id: str) -> str:
    """String: set once the janitor posted the unknown-result notice of this call (jobs.janitor)."""
    return key.redis_key(f"unknown:{tool_call_id}")


def mcp_down_notice_key(key: SessionKey, server: str) -> str:
    """String: set once the thread was told an MCP server its model called is not answering
    (jobs.turn.mcp)."""
    return key.redis_key(f"mcp-down:{server}")


RUNNING_SESSIONS: Final = f"{PREFIX}:running"
"""Set: sessions that hold (or held) a lease, which the janitor sweeps (jobs.session.lease)."""

QUEUED_SESSIONS: Final = f"{PREFIX}:queued"
"""Set: sessions whose turn job was queued; the janitor re-queues one whose job was lost (a
worker killed between taking it off the queue and taking the lease) (jobs.janitor)."""

JANITOR_LOCK: Final = f"{PREFIX}:janitor"
"""String: held for one sweep, so one worker at a time sweeps (jobs.janitor)."""


# -- retention: jobs.retention, jobs.session.touched ------------------------------------------------

SESSION_INDEX: Final = f"{PREFIX}:sessions"
"""Sorted set: root session → ms it (or any sub-agent under it) was last touched; the retention
sweep's list, oldest first (jobs.session.touched)."""

RETENTION_LOCK: Final = f"{PREFIX}:retention"
"""String: held for one retention sweep's interval, so one worker sweeps at a time (jobs.retention)."""

RETENTION_SCAN: Final = f"{PREFIX}:retention:scan"
"""String: where the index's catch-up SCAN over meta hashes goes on next (jobs.session.touched)."""


def subagents_key(root: SessionKey) -> str:
    """Set: every sub-agent session ever started under this root, at any depth, so removing the
    root finds them (jobs.session.touched)."""
    return root.redis_key("subagents")


# -- recording input: jobs.input, jobs.session.dedupe, jobs.session.state ---------------------------------


def dedupe_key(*parts: str) -> str:
    """String: a Slack delivery seen in the last hour; its claim token (jobs.session.dedupe)."""
    return f"{PREFIX}:dedupe:" + ":".join(parts)


def event_dedupe_key(team: str, event_id: str) -> str:
    """The dedupe key of one Slack event id (a redelivery has the same)."""
    return dedupe_key(team, "event", event_id)


def message_dedupe_key(team: str, channel: str, ts: str) -> str:
    """The dedupe key of one Slack message (an @mention's `message` twin has the same)."""
    return dedupe_key(team, "message", channel, ts)


def command_dedupe_key(team: str, trigger_id: str) -> str:
    """The dedupe key of one slash command: Slack's `trigger_id` names one request."""
    return dedupe_key(team, "command", trigger_id)


def action_dedupe_key(team: str, user: str, action_id: str, action_ts: str) -> str:
    """The dedupe key of one button click: its `action_ts`, which button and who clicked."""
    return dedupe_key(team, "action", user, action_id, action_ts)


def quota_key(team: str, *parts: str) -> str:
    """String: a quota's count in its current window, expiring with the window (jobs.quotas)."""
    return f"{PREFIX}:quota:{team}:" + ":".join(parts)


def working_sessions_key(team: str, user: str) -> str:
    """Sorted set: the sessions whose turn a message of this person started (score: when), pruned
    of those no longer working each time it is counted (quota `QUOTA_SESSIONS_PER_USER`,
    jobs/input.lua)."""
    return f"{PREFIX}:working:{team}:{user}"


def usage_key(key: SessionKey) -> str:
    """Hash: the model usage of the session's turns (and, for a root, its sub-agents' too):
    input, output, cached, tokens, steps, estimated (jobs.usage)."""
    return key.redis_key("usage")


def turn_usage_key(key: SessionKey, turn_id: str) -> str:
    """Hash: one turn's model usage (fields as `usage_key`), plus `step:<uuid>` for each step
    counted, so a step is counted once whatever retries its record (jobs.usage)."""
    return key.redis_key(f"usage:{turn_id}")


def daily_usage_key(day: str, team: str, kind: str, who: str) -> str:
    """Hash: the model usage of a channel (`kind` channel) or a person (`kind` user) on one UTC
    day, `day` as YYYY-MM-DD (jobs.usage; the daily budgets read `tokens`)."""
    return f"{PREFIX}:usage:{day}:{team}:{kind}:{who}"


def spawned_key(key: SessionKey, turn_id: str) -> str:
    """String: how many sub-agents this turn of the session started (jobs.delegation.launcher)."""
    return key.redis_key(f"spawned:{turn_id}")


def starting_key(root: SessionKey) -> str:
    """String: (root session) sub-agents being started right now, not yet counted as alive
    (jobs.delegation.limits)."""
    return root.redis_key("starting")


def recent_session_key(team: str, channel: str, user: str) -> str:
    """String: the session this user last spoke in, in this channel (jobs.input; jobs.session.state
    reads it for `/agent cancel` without a link)."""
    return f"{PREFIX}:recent:{team}:{channel}:{user}"


# -- delegation: jobs.delegation -----------------------------------------------------------------


def children_key(parent: SessionKey) -> str:
    """Set: the parent's sub-agent sessions still working, which a cancel walks
    (jobs.delegation.children)."""
    return parent.redis_key("children")


def approval_routes_key(root: SessionKey) -> str:
    """Hash: approval id → the sub-agent session that asked, kept by its root (whose thread shows
    the request) (jobs.delegation.child_approvals)."""
    return root.redis_key("approval_routes")


def waits_key(key: SessionKey) -> str:
    """Hash: a step parked on sub-agents, tool call id → `pending` or the result's JSON, plus
    WAIT_STEP_FIELD and WAIT_ARMED_FIELD (jobs.delegation.waits)."""
    return key.redis_key("waits")


def swarm_key(parent: SessionKey, call_id: str) -> str:
    """Hash: an AgentSwarm call, fields SwarmField below (jobs.delegation.swarms)."""
    return parent.redis_key(f"swarm:{call_id}")


def swarm_next_key(parent: SessionKey, call_id: str) -> str:
    """List: the indexes of the swarm's items not started yet (jobs.delegation.swarms)."""
    return parent.redis_key(f"swarm:{call_id}:next")


def repairs_key(key: SessionKey) -> str:
    """Hash: each distinct projection repair of the session's history, `<kind>:<digest of its call
    ids>` → JSON (kind, call ids, turn, step, when), written once (jobs.session.repairs)."""
    return key.redis_key("repairs")


def reacted_key(key: SessionKey) -> str:
    """Set: ts of the people's messages marked seen (👀) whose turn has not ended yet
    (jobs.session.reactions)."""
    return key.redis_key("reacted")


def pull_request_key(key: SessionKey) -> str:
    """String: the thread's pull request (jobs.forge.record.PullRequestRecord JSON)."""
    return key.redis_key("pull_request")


def card_key(key: SessionKey) -> str:
    """String: the turn's progress card JSON, without its sub-agents' lines
    (jobs.delegation.tree_cards)."""
    return key.redis_key("card")


def progress_key(key: SessionKey) -> str:
    """Hash: per turn, the newest progress card the thread should show (`<turn>`), its version
    (`<turn>#v`) and the one outbox entry that places it in the thread (`<turn>#at`)
    (jobs.session.store)."""
    return key.redis_key("progress")


def live_key(key: SessionKey) -> str:
    """Hash: `<turn>:<step>` → the step's text and tool calls as the model writes them (JSON),
    `<turn>:<step>#at` → the outbox entry that places the step's stream (jobs.session.live)."""
    return key.redis_key("live")


def feedback_key(key: SessionKey) -> str:
    """Hash: `<turn>:<user>` → that person's 👍/👎 on the turn's answer and when (JSON)
    (jobs.session.feedback)."""
    return key.redis_key("feedback")


def card_children_key(key: SessionKey) -> str:
    """Hash: tool call id (`<id>#<item>` for a swarm item) → its sub-agent's card lines JSON
    (jobs.delegation.tree_cards)."""
    return key.redis_key("card_children")


def workspace_writers_key(workspace_digest: str) -> str:
    """Hash: holder → lease expiry and the entries it writes, for one workspace
    (jobs.delegation.write_lock). A hash tag of its own: sessions of one workspace share it."""
    return f"{PREFIX}:{{ws:{workspace_digest}}}:writers"


# -- delivery to Slack: gateway.delivery ---------------------------------------------------------


def delivering_key(key: SessionKey) -> str:
    """String: the lock of the one delivery run posting to the thread (gateway.delivery.job)."""
    return key.redis_key("delivering")


def deliver_again_key(key: SessionKey) -> str:
    """String: a delivery run found the thread's lock taken; its holder looks again before it
    returns (gateway.delivery.job)."""
    return key.redis_key("deliver_again")


def ledger_key(key: SessionKey) -> str:
    """Hash: outbox entry (or a part of one) → the Slack ts it was posted as (gateway.delivery.ledger)."""
    return key.redis_key("ledger")


def in_flight_key(key: SessionKey) -> str:
    """Hash: entry → when its post began, until the ts is recorded (gateway.delivery.ledger)."""
    return key.redis_key("inflight")


def ledger_notes_key(key: SessionKey) -> str:
    """Hash: small facts of delivery, by name: how an answer was split, card timings, retries
    (gateway.delivery.ledger)."""
    return key.redis_key("ledger_notes")


def pending_cards_key(key: SessionKey) -> str:
    """Hash: turn id → the version of its newest card not shown yet: a snapshot written after the
    turn's outbox entry, or one waiting for its edit slot (jobs.session.store, gateway.delivery.cards)."""
    return key.redis_key("cards_pending")


def timer_key(key: SessionKey, purpose: str) -> str:
    """String: set while a delivery for `purpose` is scheduled, one per purpose
    (gateway.delivery.timers)."""
    return key.redis_key(f"timer:{purpose}")


# The purposes gateway.delivery.timers passes to timer_key.
TIMER_PURPOSES: Final = ("card", "status", "retry", "sweep", "watchdog")


def agent_sessions_off_key(team: str) -> str:
    """String: set for a while once Slack said the workspace or app has no agent sessions
    (gateway.delivery.agent_session), so deliveries stop asking."""
    return f"{PREFIX}:agent_sessions_off:{team}"


def slack_pause_key(team: str) -> str:
    """String: set while Slack's Retry-After runs for the workspace (gateway.delivery.job)."""
    return f"{PREFIX}:slack_pause:{team}"


def pace_key(team: str, channel: str) -> str:
    """String: the channel's next free posting slot, in ms (gateway.delivery.pacing)."""
    return f"{PREFIX}:pace:{team}:{channel}"


def fixed_session_keys(key: SessionKey) -> list[str]:
    """Every key of the session whose name is fixed: all but `unknown:<call id>`,
    `swarm:<call id>` and `usage:<turn id>`, which expire on their own after 7 days
    (docs/architecture.md)."""
    named = (wire_key, wire_index_key, checkpoint_key, meta_key, inbox_key, outbox_key, lease_key,
             turn_queued_key, turn_wanted_key, cancel_key, approvals_key, approval_states_key,
             approval_deciders_key, waits_key, children_key, approval_routes_key, card_key,
             card_children_key, delivery_queued_key, delivering_key, deliver_again_key,
             ledger_key, in_flight_key, ledger_notes_key, pending_cards_key, progress_key, subagents_key,
             live_key, feedback_key, repairs_key, usage_key, pull_request_key)  # fmt: skip
    return [each(key) for each in named] + [timer_key(key, purpose) for purpose in TIMER_PURPOSES]


# -- the gateway ----------------------------------------------------------------------------------


def usergroup_cache_key(team: str, group: str) -> str:
    """String: JSON of a Slack user group's members, cached for a while (gateway.authz)."""
    return f"{PREFIX}:usergroup:{team}:{group}"


def channel_members_cache_key(team: str, channel: str) -> str:
    """Set: a channel's member ids from conversations.members, plus "" so that an empty answer is
    cached too (gateway.authz)."""
    return f"{PREFIX}:members:{team}:{channel}"


def storage_key(host: str, pid: int) -> str:
    """String: the AGENT_WORKDIR storage a turn worker process sees (jobs.storage.StorageSeen, JSON),
    refreshed while it lives; `threadline doctor` compares those of the live workers."""
    return f"{PREFIX}:storage:{host}:{pid}"


def user_name_cache_key(team: str, user: str) -> str:
    """String: the name a person is shown by to the model, from users.info (gateway.people)."""
    return f"{PREFIX}:username:{team}:{user}"


def user_kind_cache_key(team: str, user: str) -> str:
    """String: what a person is in this workspace, `member`, `guest` or `external`, from users.info
    (gateway.authz)."""
    return f"{PREFIX}:userkind:{team}:{user}"


# -- field names ----------------------------------------------------------------------------------

RECORD_FIELD: Final = "r"  # the one field of a wire log entry
NOTICE_FIELD: Final = "n"  # the one field of an outbox entry


class MetaField:
    """The fields of a session's meta hash (read and written through jobs.session.meta)."""

    STATE: Final = "state"  # lifecycle state (jobs.session.state); absent means idle
    UPDATED: Final = "updated"  # ms of the last state change
    CREATED: Final = "created"  # ms the session was first written
    OWNER: Final = "owner"  # the Slack user whose message started the session (gateway.authz reads it)
    TURN_ID: Final = "turn_id"  # the running (or last) turn
    JOB: Final = "job"  # that turn's RQ job id, which the janitor stops a turn that ignores a cancel by
    LAST_TURN_REASON: Final = "last_turn_reason"  # how the last turn ended (a TurnEndReason)
    PARKED_STEP: Final = "parked_step"  # the step waiting for approvals (jobs.turn.sink)
    RESUME_REQUESTED: Final = "resume_requested"  # who said resume; the next turn runs even with no input
    CANCEL_AT: Final = "cancel_at"  # ms a running turn was asked to cancel (jobs.control, jobs.janitor)
    DELIVERED: Final = "delivered"  # the outbox id delivered through (gateway.delivery.job)
    WORKSPACE: Final = "workspace"  # the storage id its workspace was made on (jobs.storage)
    # A sub-agent's place under its parent (jobs.delegation.children.ChildInfo).
    SUB_PARENT: Final = "sub_parent"
    SUB_ROOT: Final = "sub_root"
    SUB_DEPTH: Final = "sub_depth"
    SUB_AGENT_ID: Final = "sub_agent_id"
    SUB_CALL_ID: Final = "sub_call_id"
    SUB_MODE: Final = "sub_mode"
    SUB_DESCRIPTION: Final = "sub_description"
    SUB_PROFILE: Final = "sub_profile"
    SUB_ITEM: Final = "sub_item"


WAIT_STEP_FIELD: Final = "~step"  # waits_key: the parked step's uuid
WAIT_ARMED_FIELD: Final = "~armed"  # waits_key: '1' once the step's batch is done and it waits


class SwarmField:
    """The fields of a swarm's hash (swarm_key)."""

    DESCRIPTION: Final = "description"
    TOTAL: Final = "total"  # how many items
    LABELS: Final = "labels"  # JSON list of the items' labels
    SEED: Final = "seed"  # JSON of the forked history every item starts from (stored once)
    SPEC: Final = "spec:"  # + item index: the item's ChildSpec JSON
    RESULT: Final = "result:"  # + item index: the item's ChildOutcome JSON
    DONE: Final = "done"  # how many items have ended
