-- Recording input (jobs/input.py): the one script that routes what a person said to a session.
--
-- Routing: to the inbox while a turn holds the lease (the running loop takes it at its next
-- step), straight onto the wire log otherwise (the next turn folds it). Either way `created`
-- is noted once. Two modes:
--   'record' (jobs.input.record_input, a person's message) also, all in this one step: drops
--            a delivery whose dedupe key was seen, claims the dedupe keys, notes the owner and
--            the caller's latest session, and, when the input went to the wire of a session
--            that is not parked, claims the turn (the `queued` flag, SET NX, and state
--            `queued`) and returns its token. This script touches no RQ key: the caller then
--            enqueues the turn's job through RQ (jobs.queues.enqueue_turn). A caller that dies
--            in between leaves a `queued` session with no job, which the janitor's lost-turn
--            check queues again (jobs/janitor.py). A reply in a thread without a session yet
--            may instead be held (the `early` hash, jobs/session/early.py) and is folded in
--            after the session's first recorded input, in Slack ts order, when that input comes;
--   'route'  (jobs.input.route_input, SessionStore.submit) only routes: KEYS 5.. and ARGV 5..
--            are not passed, and the caller schedules what follows.
--
-- KEYS
--   1 lease_key      the session's lease: set while a turn runs
--   2 inbox_key      the session's inbox (list of UserInput JSON)
--   3 wire_key       the session's wire log (stream)
--   4 meta_key       the session's meta hash
--   'record' only:
--   5 queued_key     the turn's `queued` flag (holds the turn token)
--   6 recent_key     the caller's latest session in this channel
--   7 queued_sessions the sessions with a queued turn, which the janitor watches
--   8 early_key      replies held until the session exists (hash: Slack ts → held reply JSON)
--   9 working_key    the sessions whose turn the speaker's messages started (sorted set)
--   10.. quota counters (jobs/quotas.py), ARGV 15 of them, then
--        the daily usage hashes of the budgets (jobs/usage.py), ARGV 18 of them, then
--        the dedupe keys of the Slack delivery (none: nothing to deduplicate); always last
--
-- ARGV
--   1 record         the wire record of the input (JSON)
--   2 input_json     the UserInput (JSON), as the inbox holds it
--   3 now_ms         the time, for `created` and `updated`
--   4 mode           'record' or 'route'
--   'record' only:
--   5 user           the Slack user who spoke: the session's owner if it is new
--   6 token          the turn token: the `queued` flag's value, the dedupe keys' value, and
--                    what a claim returns (its RQ job id is `turn-<token>`, jobs.queues)
--   7 flag_ttl_s     the `queued` flag's TTL
--   8 session        the session key, as the recent key holds it
--   9 recent_ttl_s   the recent key's TTL
--   10 no_session    a thread without a session: 'start' one, 'hold' the input until one
--                    starts (claiming the dedupe keys), or 'ignore' it (claiming nothing)
--   11 dedupe_ttl_s  the dedupe keys' TTL
--   12 ts            the input's Slack ts: the held reply's field, the fold's cut-off
--   13 early_ttl_s   how long a held reply waits for its session
--   14 parked_count  how many parked states follow (no worker is held in them)
--   15 quota_count   how many quota counters KEYS holds from 10
--   16 working_limit how many sessions the speaker may have working at once (0: no limit)
--   17 working_ttl_s how long working_key is kept after its latest session
--   18 budget_count  how many daily budgets KEYS holds after the quota counters
--   19.. per quota its limit and window (s), then per budget its limit (tokens), then the parked
--        states
--
-- Spelled in when the script text is built (jobs/input.py, script_text): the meta field names
-- (jobs.keys.MetaField), the working states (jobs.session.state.WORKING_STATES), how a
-- session's meta key is spelled, and count_working (jobs.quotas.COUNT_WORKING, which a
-- resume's claim shares).
--
-- Counting the speaker's working sessions reads the meta hash of each session working_key
-- names: keys this script is not given, which a standalone Redis allows (the quota keys already
-- live outside the session's hash slot, so this script is not Cluster-safe anyway).
--
-- Returns 'turn <token>' (the input went onto the wire and claimed the session's turn, whose
-- job the caller enqueues), 'inbox', 'wire', 'held', 'duplicate', 'no session',
-- 'quota <i>[ tell]' (the i-th quota is used up: nothing is recorded but the dedupe keys and
-- that quota's count; ' tell' on its first refusal in the window), 'working' (the input would
-- start a turn and the speaker has working_limit sessions working: nothing recorded but the
-- dedupe keys and the quota counts) or 'budget <i>' (the input would start a turn and the
-- i-th daily budget is spent: recorded as little as for 'working').

local lease_key, inbox_key, wire_key, meta_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local queued_key, recent_key, queued_sessions = KEYS[5], KEYS[6], KEYS[7]
local early_key, working_key = KEYS[8], KEYS[9]
local quota_from, quota_count = 10, tonumber(ARGV[15] or '0')
local budget_count = tonumber(ARGV[18] or '0')
local budget_from = quota_from + quota_count
local dedupe_from = budget_from + budget_count

local record, input_json, now_ms, recording = ARGV[1], ARGV[2], ARGV[3], ARGV[4] == 'record'
local user, token, flag_ttl_s, session = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local recent_ttl_s, no_session, dedupe_ttl_s = ARGV[9], ARGV[10], ARGV[11]
local ts, early_ttl_s = ARGV[12], ARGV[13]
local working_limit, working_ttl_s = tonumber(ARGV[16] or '0'), ARGV[17]
local budget_limits_from = 19 + 2 * quota_count
local parked_from = budget_limits_from + budget_count

local STATE, UPDATED, CREATED, OWNER = ${state}, ${updated}, ${created}, ${owner}
local WORKING = {${working}}
local META_BEFORE, META_AFTER = ${meta_before}, ${meta_after}

-- Slack ts order: "<seconds>.<micro>", the seconds by their digits, then the fraction.
local function ts_parts(value)
  local dot = string.find(value, '.', 1, true)
  if not dot then return value, '' end
  return string.sub(value, 1, dot - 1), string.sub(value, dot + 1)
end

local function ts_before(a, b)
  local a_s, a_f = ts_parts(a)
  local b_s, b_f = ts_parts(b)
  if #a_s ~= #b_s then return #a_s < #b_s end
  if a_s ~= b_s then return a_s < b_s end
  return a_f .. string.rep('0', 6 - #a_f) < b_f .. string.rep('0', 6 - #b_f)
end

-- The held replies (field, value, …) and those still in time (field → value).
local function held_in_time()
  local held, kept = redis.call('HGETALL', early_key), {}
  local oldest_kept = tonumber(now_ms) - 1000 * tonumber(early_ttl_s)
  for i = 1, #held, 2 do
    if tonumber(cjson.decode(held[i + 1]).at) >= oldest_kept then kept[held[i]] = held[i + 1] end
  end
  return held, kept
end

local function hold()
  local held, kept = held_in_time()
  for i = 1, #held, 2 do
    if not kept[held[i]] then redis.call('HDEL', early_key, held[i]) end
  end
  redis.call('HSET', early_key, ts, cjson.encode({record = record, input = input_json, at = now_ms}))
  redis.call('EXPIRE', early_key, early_ttl_s)
end

-- The held replies written after this input, in ts order, to where this input went.
local function fold_early(to_inbox)
  local held, kept = held_in_time()
  if #held == 0 then return end
  redis.call('DEL', early_key)
  local later = {}
  for at, _ in pairs(kept) do
    if ts_before(ts, at) then later[#later + 1] = at end
  end
  table.sort(later, ts_before)
  for _, at in ipairs(later) do
    local reply = cjson.decode(kept[at])
    if to_inbox then
      redis.call('RPUSH', inbox_key, reply.input)
    else
      redis.call('XADD', wire_key, '*', ${record_field}, reply.record)
    end
  end
end

-- The first quota used up (and whether this is its first refusal in the window), or nil;
-- counts the input against every quota when none is. A refusal is counted too, in that quota
-- only, so a flood is told once per window rather than once per message.
local function over_quota()
  for i = 1, quota_count do
    local counter, limit = KEYS[quota_from + i - 1], tonumber(ARGV[17 + 2 * i])
    if tonumber(redis.call('GET', counter) or '0') >= limit then
      return i, redis.call('INCR', counter) == limit + 1
    end
  end
  for i = 1, quota_count do
    local counter = KEYS[quota_from + i - 1]
    if redis.call('INCR', counter) == 1 then redis.call('EXPIRE', counter, ARGV[18 + 2 * i]) end
  end
  return nil
end

-- Whether this input would start a turn: nothing holds or has claimed the session's turn, and
-- the session is not working (a reply to a running or parked turn joins work already counted).
local function starts_work()
  if redis.call('EXISTS', lease_key) == 1 or redis.call('EXISTS', queued_key) == 1 then return false end
  return not WORKING[redis.call('HGET', meta_key, STATE) or 'idle']
end

${count_working}
-- Whether the speaker already has working_limit sessions working.
local function too_many_working()
  if working_limit == 0 or not starts_work() then return false end
  return count_working(working_key, session) >= working_limit
end

-- The first daily budget spent (its usage hash's `tokens` at its limit), for an input that
-- would start a turn: a reply to work already going on still reaches it.
local function spent_budget()
  if budget_count == 0 or not starts_work() then return nil end
  for j = 1, budget_count do
    local used = tonumber(redis.call('HGET', KEYS[budget_from + j - 1], 'tokens') or '0')
    if used >= tonumber(ARGV[budget_limits_from + j - 1]) then return j end
  end
  return nil
end

if recording then
  for i = dedupe_from, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then return 'duplicate' end
  end
  local waiting = no_session ~= 'start' and redis.call('EXISTS', meta_key) == 0
  if waiting and no_session == 'ignore' then return 'no session' end
  local over, first = over_quota()
  for i = dedupe_from, #KEYS do
    redis.call('SET', KEYS[i], token, 'EX', dedupe_ttl_s)
  end
  if over then return 'quota ' .. over .. (first and ' tell' or '') end
  if waiting then
    hold()
    return 'held'
  end
  if too_many_working() then return 'working' end
  local spent = spent_budget()
  if spent then return 'budget ' .. spent end
end
redis.call('HSETNX', meta_key, CREATED, now_ms)
if recording then
  redis.call('HSETNX', meta_key, OWNER, user)
  redis.call('SET', recent_key, session, 'EX', recent_ttl_s)
end

if redis.call('EXISTS', lease_key) == 1 then
  redis.call('RPUSH', inbox_key, input_json)
  if recording then fold_early(true) end
  return 'inbox'
end
redis.call('XADD', wire_key, '*', ${record_field}, record)
if not recording then return 'wire' end
fold_early(false)

local parked_to = parked_from - 1 + tonumber(ARGV[14])
local state = redis.call('HGET', meta_key, STATE) or 'idle'
for i = parked_from, parked_to do
  if state == ARGV[i] then return 'wire' end
end
if not redis.call('SET', queued_key, token, 'NX', 'EX', flag_ttl_s) then return 'wire' end
redis.call('SADD', queued_sessions, session)
if working_limit > 0 then
  redis.call('ZADD', working_key, now_ms, session)
  redis.call('EXPIRE', working_key, working_ttl_s)
end
redis.call('HSET', meta_key, STATE, 'queued', UPDATED, now_ms)
return 'turn ' .. token
