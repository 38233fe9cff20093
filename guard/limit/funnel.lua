-- Funnel (leaky bucket): each call pours n units in, the funnel leaks at a
-- constant rate, and a call that would overflow it is refused.
--
-- KEYS[1]  a hash: level (units in the funnel, a double), ts (time of
--          that level, microseconds since the Unix epoch)
-- ARGV[1]  capacity: units the funnel holds
-- ARGV[2]  leak: units leaked per period
-- ARGV[3]  period, microseconds
-- ARGV[4]  n: units asked for, 1 <= n <= capacity
--
-- Returns {allowed (0/1), remaining, retry after us, reset after us, now us}.
--
-- The expiry only cleans up: the state is judged by TIME, so it gets a
-- second of margin against Redis' coarser expiry clock.
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local capacity = tonumber(ARGV[1])
local leak = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local n = tonumber(ARGV[4])

local st = redis.call('HMGET', KEYS[1], 'level', 'ts')
local level = tonumber(st[1]) or 0
local ts = tonumber(st[2]) or now
if now > ts then
  level = level - (now - ts) * leak / period
end
if level < 0 then
  level = 0
end

if level + n <= capacity then
  level = level + n
  local drain = math.ceil(level * period / leak)
  redis.call('HSET', KEYS[1], 'level', level, 'ts', now)
  redis.call('PEXPIRE', KEYS[1], math.ceil(drain / 1000) + 1000)
  return {1, math.floor(capacity - level), 0, drain, now}
end

local retry = math.ceil((level + n - capacity) * period / leak)
return {0, math.floor(capacity - level), retry, math.ceil(level * period / leak), now}
