-- Concurrency limiter: give a lease back, or extend it.
--
-- KEYS[1]  the sorted set of leases (see acquire.lua)
-- ARGV[1]  the lease's token
-- ARGV[2]  0 to release the lease; > 0 to refresh it: its new time to live,
--          microseconds
--
-- Returns 1 if the lease was held (unexpired) and is now released or
-- refreshed, 0 if it had expired or was gone (an expired lease is removed).
--
-- The expiry only cleans up: the state is judged by TIME, so it gets a
-- second of margin against Redis' coarser expiry clock.
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local ttl = tonumber(ARGV[2])

local expiry = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
local held = expiry ~= nil and expiry > now
if not held or ttl == 0 then
  redis.call('ZREM', KEYS[1], ARGV[1])
  if held then
    return 1
  end
  return 0
end

redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[1])
local last = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
redis.call('PEXPIRE', KEYS[1], math.ceil((last - now) / 1000) + 1000)
return 1
