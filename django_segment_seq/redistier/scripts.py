"""The Lua scripts the tier runs in Redis, as named constants (as db/statements.py holds the SQL).

One hash per row holds the super-segment being handed out as base (the number before its first, an
exact decimal text), size and used (offsets, exact as Lua doubles since SUPER_STEP <= 2**53), a pending
successor (pbase, psize), top (the end of the highest super-segment installed, as 20 digits) and run:
the run_id of the Redis server process that installed it joined with its replication id. Every script
first compares run with that of the server running it, so a state that survived a restart, a reload or
a promotion is never used: it is dropped, and the next super-segment comes from the table. The
replication id (`master_replid`) is new at every promotion: a server that was master, became a replica
(taking its new master's older copy of the states it had installed) and is master again no longer
matches the states it installed before.
"""

from __future__ import annotations

# The run_id of the server process running the script and its replication id, which a promotion renews: the
# history a state belongs to. A server that hides either cannot be fenced.
_RUN_ID = """
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
local replid = string.match(redis.call('INFO', 'replication'), 'master_replid:(%x+)')
if not run or not replid then
  return redis.error_reply('SEGSEQ INFO shows no run_id or master_replid: the Redis tier cannot fence')
end
run = run .. ':' .. replid
"""

# KEYS[1] state; ARGV need (the fewest numbers of use), want (the most), refill_at (share of a super-segment).
# -> {1, base, first offset, last offset, refill wanted} | {0} empty | {-1} no state | {-2, foreign run} dropped
TAKE = (
    _RUN_ID
    + """
local s = redis.call('HMGET', KEYS[1], 'run', 'base', 'used', 'size', 'pbase', 'psize')
if s[1] ~= run then
  if s[1] then redis.call('DEL', KEYS[1]); return {-2, s[1]} end
  return {-1}
end
local need, want = tonumber(ARGV[1]), tonumber(ARGV[2])
local base, used, size, pending = s[2], tonumber(s[3]), tonumber(s[4]), s[5]
if size - used < need then
  if not pending then return {0} end
  base, used, size, pending = s[5], 0, tonumber(s[6]), false
  redis.call('HSET', KEYS[1], 'base', base, 'used', 0, 'size', size)
  redis.call('HDEL', KEYS[1], 'pbase', 'psize')
  if size < need then return {0} end
end
local n = math.min(want, size - used)
redis.call('HSET', KEYS[1], 'used', used + n)
local refill = 0
if (not pending) and (size - used - n) <= tonumber(ARGV[3]) * size then refill = 1 end
return {1, base, used + 1, used + n, refill}
"""
)

# Whether one 20-digit number is above another, compared exactly (Lua numbers are doubles).
_ABOVE = """
local function above(a, b)
  local ah, bh = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if ah ~= bh then return ah > bh end
  return tonumber(string.sub(a, 11)) > tonumber(string.sub(b, 11))
end
"""

# KEYS[1] state; ARGV base, size, first (20 digits), top (20 digits) of a super-segment reserved from the table.
# -> {1} current | {2} pending | {3} already there (the same INSTALL sent twice) | {4} refused: a pending one waits
# | {0, top} refused: not above the highest super-segment this server holds (the table lent it again, or a
# later reservation came first) | {1, foreign run} current, replacing a foreign state. Sent once, never retried.
INSTALL = (
    _RUN_ID
    + _ABOVE
    + """
local s = redis.call('HMGET', KEYS[1], 'run', 'top', 'pbase', 'used', 'size', 'base')
if s[1] ~= run then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'run', run, 'base', ARGV[1], 'used', 0, 'size', ARGV[2], 'top', ARGV[4])
  if s[1] then return {1, s[1]} end
  return {1}
end
if ARGV[4] == s[2] and (ARGV[1] == s[6] or ARGV[1] == s[3]) then return {3} end
if not above(ARGV[3], s[2]) then return {0, s[2]} end
if s[3] then return {4} end
if tonumber(s[5]) - tonumber(s[4]) <= 0 then
  redis.call('HSET', KEYS[1], 'base', ARGV[1], 'used', 0, 'size', ARGV[2], 'top', ARGV[4])
  return {1}
end
redis.call('HSET', KEYS[1], 'pbase', ARGV[1], 'psize', ARGV[2], 'top', ARGV[4])
return {2}
"""
)

# KEYS[1] state; ARGV floor (20 digits): the state is emptied (what it held becomes a gap) and its top raised to
# floor, so no INSTALL of a super-segment at or below floor is taken (one reserved before the table moved past it).
# -> 1. Run after `segment_seq advance`, a restore the app detected, or the table found behind Redis.
RETIRE = (
    _RUN_ID
    + _ABOVE
    + """
local top = redis.call('HGET', KEYS[1], 'top')
if redis.call('HGET', KEYS[1], 'run') ~= run or not top or above(ARGV[1], top) then top = ARGV[1] end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'run', run, 'base', '0', 'used', 0, 'size', 0, 'top', top)
return 1
"""
)

# KEYS[1] state -> {run of the state or false, run of this server, base, used, size, pbase, psize}: for the admin.
READ = (
    _RUN_ID
    + """
local s = redis.call('HMGET', KEYS[1], 'run', 'base', 'used', 'size', 'pbase', 'psize')
return {s[1], run, s[2], s[3], s[4], s[5], s[6]}
"""
)
