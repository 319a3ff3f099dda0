"""What a person said, recorded in one round trip: dedupe, the input, the turn and its RQ job.

A mention is on Slack's clock (it waits for our 200), so everything it writes is one Lua
script: the dedupe keys (`SET NX EX`, all or none), `SessionStore.submit`'s routing of the input (inbox
while a turn holds the lease, wire otherwise), `created` / `owner` noted once, the caller's
latest session in the channel, and, when the input went to the wire of a session that is not
parked, the turn: the `queued` flag (SET NX, so concurrent inputs claim one turn), the
`queued` state, and the RQ job RQ would have written, pushed onto the `turns` queue.

The job's fields are RQ's (`jobs.queues.turn_job`); only its storage happens here, so it is
written in the same step as the state that says it exists. A queue that refuses the
push (WRONGTYPE) leaves the input recorded and no claim behind: resume or the next message
schedules the turn, and Slack's retry of this delivery is a duplicate, as it should be.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from redis import Redis

from agent.wire import AppendMessage
from jobs.keys import SessionKey, meta_key, recent_session_key, turn_queued_key
from jobs.lua import lua
from jobs.queues import OWN_FIELDS, QUEUED_FLAG_TTL_S, Fields, new_turn_token, turn_job
from jobs.session.state import RECENT_TTL_S
from jobs.session.store import SessionStore, encode_record, now_ms
from jobs.session.user_input import UserInput

Recorded = Literal["wire", "inbox", "duplicate", "no session"]

# KEYS: 1 lease, 2 inbox, 3 wire, 4 meta, 5 queued flag, 6 recent, 7 job, 8 queue, 9 rq:queues,
#       10.. dedupe keys
# ARGV: 1 record, 2 input json, 3 now ms, 4 user, 5 token, 6 flag ttl, 7 session key, 8 recent ttl,
#       9 '1' when only an existing session takes input, 10 dedupe ttl, 11 job id,
#       12 number of parked states, then the parked states, then the values of the job's own fields
# The job fields every turn shares are written into the script (see _script_for): as arguments
# they would be most of what each call sends and Redis unpacks.
_RECORD = """
local dedupe_from = 10
for i = dedupe_from, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return 'duplicate' end
end
if ARGV[9] == '1' and redis.call('EXISTS', KEYS[4]) == 0 then return 'no session' end
for i = dedupe_from, #KEYS do
  redis.call('SET', KEYS[i], ARGV[5], 'EX', ARGV[10])
end
redis.call('HSETNX', KEYS[4], 'created', ARGV[3])
redis.call('HSETNX', KEYS[4], 'owner', ARGV[4])
redis.call('SET', KEYS[6], ARGV[7], 'EX', ARGV[8])
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RPUSH', KEYS[2], ARGV[2])
  return 'inbox'
end
redis.call('XADD', KEYS[3], '*', 'r', ARGV[1])
local parked_to = 12 + tonumber(ARGV[12])
local state = redis.call('HGET', KEYS[4], 'state') or 'idle'
for i = 13, parked_to do
  if state == ARGV[i] then return 'wire' end
end
if not redis.call('SET', KEYS[5], ARGV[5], 'NX', 'EX', ARGV[6]) then return 'wire' end
local pushed = redis.pcall('RPUSH', KEYS[8], ARGV[11])
if type(pushed) == 'table' and pushed.err then
  redis.call('DEL', KEYS[5])
  return redis.error_reply(pushed.err)
end
local own = parked_to
redis.call('HSET', KEYS[7], %(job_fields)s)
redis.call('SADD', KEYS[9], KEYS[8])
redis.call('HSET', KEYS[4], 'state', 'queued', 'updated', ARGV[3])
return 'wire'
"""

_scripts: dict[Fields, str] = {}


def _script_for(shared: Fields) -> str:
    """The script with `shared` written in as Lua literals and the job's own fields read from ARGV."""
    source = _scripts.get(shared)
    if source is None:
        pairs = [f"{_literal(name)}, ARGV[own + {i}]" for i, name in enumerate(OWN_FIELDS, 1)]
        pairs += [f"{_literal(name)}, {_literal(value)}" for name, value in shared]
        source = _scripts[shared] = _RECORD % {"job_fields": ", ".join(pairs)}
    return source


def _literal(value: str | bytes) -> str:
    """A Lua string literal for any bytes: ASCII letters and digits as they are, the rest as \\ddd
    (three digits always, so a digit that follows is never read as part of the escape)."""
    raw = value.encode() if isinstance(value, str) else value
    return '"' + "".join(chr(b) if chr(b).isascii() and chr(b).isalnum() else f"\\{b:03d}" for b in raw) + '"'


def record_input(
    redis: Redis,
    key: SessionKey,
    user_input: UserInput,
    *,
    turn_timeout_s: int,
    parked: Iterable[str],
    dedupe_keys: Sequence[str] = (),
    dedupe_ttl_s: int = 0,
    only_existing_session: bool = False,
) -> Recorded:
    """Record `user_input` unless a dedupe key was seen, and claim and enqueue the turn if free.

    With `only_existing_session`, a thread without a session takes nothing (and claims nothing).
    """
    store = SessionStore(redis, key)
    token = new_turn_token()
    job = turn_job(redis, key, token, turn_timeout_s=turn_timeout_s)
    parked = list(parked)
    record = encode_record(AppendMessage(message=user_input.to_message()))
    keys = [
        store.lease_key, store.inbox_key, store.wire_key, meta_key(key), turn_queued_key(key),
        recent_session_key(key.team, key.channel, user_input.user), job.key, job.queue_key, job.queues_key,
        *dedupe_keys,
    ]  # fmt: skip
    args = [
        record, user_input.model_dump_json(), str(now_ms()), user_input.user, token, QUEUED_FLAG_TTL_S,
        str(key), RECENT_TTL_S, "1" if only_existing_session else "0", dedupe_ttl_s, job.id,
        len(parked), *parked, *(value for _, value in job.own),
    ]  # fmt: skip
    script = _script_for(job.shared)
    return lua(redis, script)(keys=keys, args=args).decode()  # type: ignore[no-any-return]
