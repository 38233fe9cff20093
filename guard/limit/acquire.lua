-- Concurrency limiter: take a lease on one of limit slots.
--
-- KEYS[1]  a sorted set of leases: member = lease token, score = the
--          lease's expiry, microseconds since the Unix epoch
-- ARGV[1]  limit: leases allowed at once
-- ARGV[2]  lease time to live, microseconds
-- ARGV[3]  the new lease's token (unique)
--
-- Returns {acquired (0/1), slots left, retry after us, reset after us, now us}:
-- retry after is the time until the first lease expires (a release may come
-- sooner), reset after the time until the last one does.
--
-- The expiry only cleans up: the state is judged by TIME, so it gets a
-- second of margin against Redis' coarser expiry clock.
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local limit = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])

-- Expired leases are gone: their holders crashed or overran.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local count = redis.call('ZCARD', KEYS[1])

if count < limit then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
  local last = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
  redis.call('PEXPIRE', KEYS[1], math.ceil((last - now) / 1000) + 1000)
  return {1, limit - count - 1, 0, last - now, now}
end

local first = tonumber(redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2])
local last = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
return {0, 0, first - now, last - now, now}
