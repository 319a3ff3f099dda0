"""The inbox: input waiting for the running turn, and edits and deletes of waiting input.

Recording input (jobs.input) puts what is said while a turn runs in the session's inbox, where
it waits until the loop's next step takes it (`SessionStore.take_inbox`, the turn sink). Until
then the person can still change their mind: an edit replaces the waiting text, a delete
withdraws it. Each is one Lua script; `take_inbox` moves only the items it read, unchanged, so
an input is either changed before the loop takes it or taken as it was, never half of each.
"""

from __future__ import annotations

from typing import Literal

from jobs.lua import lua
from jobs.session.store import SessionStore
from jobs.session.user_input import UserInput

Outcome = Literal["changed", "already_read", "unknown"]

_CHANGE_WAITING = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
for index, raw in ipairs(items) do
  local item = cjson.decode(raw)
  if item['ts'] == ARGV[1] then
    if ARGV[2] == 'withdraw' then
      redis.call('LREM', KEYS[1], 1, raw)
    else
      item['text'] = ARGV[3]
      redis.call('LSET', KEYS[1], index - 1, cjson.encode(item))
    end
    return 1
  end
end
return 0
"""


def edit_waiting(store: SessionStore, ts: str, text: str) -> bool:
    """Replace the text of the waiting input sent as `ts`; False when it is not waiting."""
    return bool(lua(store.redis, _CHANGE_WAITING)(keys=[store.inbox_key], args=[ts, "edit", text]))


def withdraw_waiting(store: SessionStore, ts: str) -> bool:
    """Remove the waiting input sent as `ts`; False when it is not waiting."""
    return bool(lua(store.redis, _CHANGE_WAITING)(keys=[store.inbox_key], args=[ts, "withdraw", ""]))


def waiting(store: SessionStore) -> list[UserInput]:
    return store.peek_inbox()


def was_read(store: SessionStore, ts: str) -> bool:
    """Whether the input sent as `ts` is already part of the session's history (the wire log)."""
    for record in store.read_wire():
        message = record.get("message") if record.get("type") == "context.append_message" else None
        if message and (message.get("origin") or {}).get("ts") == ts:
            return True
    return False


def change_of(store: SessionStore, ts: str, *, text: str | None) -> Outcome:
    """Apply an edit (`text`) or a delete (`text=None`) and say what became of it."""
    changed = withdraw_waiting(store, ts) if text is None else edit_waiting(store, ts, text)
    if changed:
        return "changed"
    return "already_read" if was_read(store, ts) else "unknown"
