-- Fixed window counter with an optional lockout.
--
-- KEYS[1]  the counter: calls allowed in the current window (a string)
-- ARGV[1]  limit: calls allowed per window
-- ARGV[2]  window, milliseconds
-- ARGV[3]  n: calls asked for, 1 <= n <= limit
-- ARGV[4]  lock time, milliseconds; 0 = no lockout
--
-- Returns {allowed (0/1), remaining, retry after us, reset after us, now us}.
-- Redis keeps a key until its expiry time has passed (now > expiry, in ms),
-- so both durations are the key's PTTL plus one millisecond.
--
-- The window starts with its first allowed call: INCRBY creates the counter
-- and its expiry is set then. A refused call leaves the counter alone unless
-- there is a lock time: then the first refusal sets the counter past the
-- limit with the lock time as its expiry, so that every call is refused until
-- the key expires and a new window starts.
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local lock = tonumber(ARGV[4])

local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count + n <= limit then
  local ttl = window
  local after = redis.call('INCRBY', KEYS[1], n)
  if count == 0 then
    redis.call('PEXPIRE', KEYS[1], window)
  else
    ttl = redis.call('PTTL', KEYS[1])
    if ttl < 0 then -- a counter without expiry: never expected, repair it
      redis.call('PEXPIRE', KEYS[1], window)
      ttl = window
    end
  end
  return {1, limit - after, 0, (ttl + 1) * 1000, now}
end

if lock > 0 and count <= limit then
  redis.call('SET', KEYS[1], limit + 1, 'PX', lock)
  return {0, 0, (lock + 1) * 1000, (lock + 1) * 1000, now}
end

local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], window)
  ttl = window
end
return {0, limit - count, (ttl + 1) * 1000, (ttl + 1) * 1000, now}
