"""Replies that come before their thread's session: held, then folded in after its first input.

A person mentions the agent and types a follow-up at once, or Slack delivers the follow-up
first: the reply reaches us before the mention has made the session. jobs/input.lua holds it in
the session's `early` hash (Slack ts → the input, as the wire and the inbox would take it) and,
when the session's first input is recorded, folds the held replies written after that input in
after it, in ts order, in the same step. Replies older than that input were talk between people
before anyone asked the agent; they are dropped, as they were before holding existed. A thread
that never gets a session lets its held replies expire.

Until the fold, an edit replaces a held reply and a delete withdraws it (`change_held`).
"""

from __future__ import annotations

import json

from redis import Redis

from agent.wire import AppendMessage
from jobs.keys import SessionKey, early_replies_key, meta_key
from jobs.lua import lua
from jobs.session.store import encode_record
from jobs.session.user_input import UserInput

# Long enough for any delivery delay or retry Slack makes (it gives up within the hour, but a
# mention that far behind its reply is not "the same moment"); short enough that chatter in
# threads that never get a session does not pile up.
EARLY_REPLY_TTL_S = 600

_ATTEMPTS = 3  # a held reply changed under us (another edit, the fold) is read again

# KEYS: 1 the early hash, 2 the meta hash. ARGV: 1 ts, 2 the held value as read, 3 the new value
# ('' withdraws). Returns 1 changed, 0 not held (or the session exists now), -1 changed meanwhile.
_CHANGE_HELD = """
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local held = redis.call('HGET', KEYS[1], ARGV[1])
if not held then return 0 end
if held ~= ARGV[2] then return -1 end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
end
return 1
"""


def held_value(record: str, input_json: str, at_ms: str) -> str:
    """One held reply as jobs/input.lua writes it: the wire record, the inbox's UserInput, and when
    it was held (epoch ms, as a string)."""
    return json.dumps({"record": record, "input": input_json, "at": at_ms}, separators=(",", ":"))


def change_held(redis: Redis, key: SessionKey, ts: str, text: str | None) -> bool:
    """Edit (`text`) or withdraw (`text=None`) the held reply sent as `ts`; False when none is held
    (never was, already folded into the session, or expired)."""
    early = early_replies_key(key)
    for _ in range(_ATTEMPTS):
        raw = redis.hget(early, ts)
        if raw is None:
            return False
        new = "" if text is None else _edited(raw, text)
        changed = lua(redis, _CHANGE_HELD)(keys=[early, meta_key(key)], args=[ts, raw, new])
        if changed != -1:
            return bool(changed)
    return False


def _edited(raw: bytes | str, text: str) -> str:
    held = json.loads(raw)
    user_input = UserInput.model_validate_json(held["input"]).model_copy(update={"text": text})
    record = encode_record(AppendMessage(message=user_input.to_message()))
    return held_value(record, user_input.model_dump_json(), held["at"])
