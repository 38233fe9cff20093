-- Sliding log: an exact sliding window over a sorted set of call times.
--
-- KEYS[1]  the log: one member per allowed call, scored with its time (us)
-- ARGV[1]  limit: calls allowed in any window
-- ARGV[2]  window, microseconds
-- ARGV[3]  n: calls asked for, 1 <= n <= limit
-- ARGV[4]  a token unique to this call (members must stay unique even for
--          calls in the same microsecond)
--
-- Returns {allowed (0/1), remaining, retry after us, reset after us, now us}.
--
-- The window is (now - window, now]: a call made exactly one window ago no
-- longer counts. Only allowed calls are logged.
--
-- The expiry only cleans up: the state is judged by TIME, so it gets a
-- second of margin against Redis' coarser expiry clock.
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local n = tonumber(ARGV[3])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])

if count + n <= limit then
  -- ZADD in batches: unpack is bounded by Lua's C stack.
  local i = 1
  while i <= n do
    local args = {}
    for j = i, math.min(n, i + 99) do
      args[#args + 1] = now
      args[#args + 1] = ARGV[4] .. ':' .. j
    end
    redis.call('ZADD', KEYS[1], unpack(args))
    i = i + 100
  end
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000) + 1000)
  return {1, limit - count - n, 0, window, now}
end

-- Refused: the call fits once the (count + n - limit)-th oldest call has
-- left the window.
local reset = 0
local newest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if newest[2] then
  reset = tonumber(newest[2]) + window - now
end
local retry = reset
local nth = redis.call('ZRANGE', KEYS[1], count + n - limit - 1, count + n - limit - 1, 'WITHSCORES')
if nth[2] then
  retry = tonumber(nth[2]) + window - now
end
return {0, limit - count, retry, reset, now}
