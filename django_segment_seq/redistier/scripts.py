"""The Lua scripts the tier runs in Redis, as named constants (as db/statements.py holds the SQL).

One hash per row holds the super-segment being handed out as base (the number before its first, an
exact decimal text), size and used (offsets, exact as Lua doubles since SUPER_STEP <= 2**53), a pending
successor (pbase, psize), top (the end of the highest super-segment installed, as 20 digits) and run:
the run_id of the Redis server process that installed it. Every script first compares run with the
run_id of the server running it, so a state that survived a restart, a reload or a promotion (a
foreign run_id) is never used: it is dropped, and the next super-segment comes from the table.
"""

from __future__ import annotations

# The run_id of the server process running the script; a server that hides it cannot be fenced.
_RUN_ID = """
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
if not run then return redis.error_reply('SEGSEQ INFO server shows no run_id: the Redis tier cannot fence') end
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

# KEYS[1] state; ARGV base, size, first (20 digits), top (20 digits) of a super-segment reserved from the table.
# -> {1} current | {2} pending | {0} refused (not above what this server holds, or a pending one waits)
# | {1, foreign run} current, replacing a foreign state. Sent once, never retried: a lost reply is a gap.
INSTALL = (
    _RUN_ID
    + """
local function above(a, b)
  local ah, bh = tonumber(string.sub(a, 1, 10)), tonumber(string.sub(b, 1, 10))
  if ah ~= bh then return ah > bh end
  return tonumber(string.sub(a, 11)) > tonumber(string.sub(b, 11))
end
local s = redis.call('HMGET', KEYS[1], 'run', 'top', 'pbase', 'used', 'size')
if s[1] ~= run then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'run', run, 'base', ARGV[1], 'used', 0, 'size', ARGV[2], 'top', ARGV[4])
  if s[1] then return {1, s[1]} end
  return {1}
end
if not above(ARGV[3], s[2]) then return {0} end
if s[3] then return {0} end
if tonumber(s[5]) - tonumber(s[4]) <= 0 then
  redis.call('HSET', KEYS[1], 'base', ARGV[1], 'used', 0, 'size', ARGV[2], 'top', ARGV[4])
  return {1}
end
redis.call('HSET', KEYS[1], 'pbase', ARGV[1], 'psize', ARGV[2], 'top', ARGV[4])
return {2}
"""
)

# KEYS[1] lease; ARGV token -> 1 released, 0 held by another (expired and taken since).
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS[1] state -> {run of the state or false, run of this server, base, used, size, pbase, psize}: for the admin.
READ = (
    _RUN_ID
    + """
local s = redis.call('HMGET', KEYS[1], 'run', 'base', 'used', 'size', 'pbase', 'psize')
return {s[1], run, s[2], s[3], s[4], s[5], s[6]}
"""
)
