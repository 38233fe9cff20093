-- Sliding window, two-counter approximation: the calls of the previous
-- window, weighted by how much of it the sliding window still covers, plus
-- the calls of the current one. Windows are aligned on the Unix epoch.
--
-- KEYS[1]  a hash: w (the current window's number), cur, prev (counts of
--          allowed calls in windows w and w-1)
-- ARGV[1]  limit: calls allowed per window
-- ARGV[2]  window, milliseconds
-- ARGV[3]  n: calls asked for, 1 <= n <= limit
--
-- Returns {allowed (0/1), remaining, retry after us, reset after us, now us}.
--
-- A call is allowed if prev * (window - elapsed) / window + cur + n <= limit,
-- with elapsed the milliseconds since window w began. The test is computed
-- multiplied by window, in integers (the caller keeps 2 * limit * window
-- below 2^53 so that doubles hold them exactly).
--
-- The expiry only cleans up: the state is judged by TIME, so it gets a
-- second of margin against Redis' coarser expiry clock.
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local n = tonumber(ARGV[3])

local ms = math.floor(now / 1000)
local w = math.floor(ms / window)
local elapsed = ms - w * window

local st = redis.call('HMGET', KEYS[1], 'w', 'cur', 'prev')
local sw = tonumber(st[1])
local cur = tonumber(st[2]) or 0
local prev = tonumber(st[3]) or 0
if sw == nil then
  cur, prev = 0, 0
elseif sw > w then
  -- Redis' clock went back: stay in the stored window.
  w, elapsed = sw, 0
elseif sw == w - 1 then
  prev, cur = cur, 0
elseif sw < w - 1 then
  prev, cur = 0, 0
end

local weighted = prev * (window - elapsed)
if weighted + (cur + n) * window <= limit * window then
  cur = cur + n
  redis.call('HSET', KEYS[1], 'w', w, 'cur', cur, 'prev', prev)
  -- Keep the state until the current window has slid out completely.
  redis.call('PEXPIRE', KEYS[1], (w + 2) * window - ms + 1000)
  local remaining = math.floor((limit * window - weighted - cur * window) / window)
  return {1, remaining, 0, (w + 2) * window * 1000 - now, now}
end

local reset = 0
if cur > 0 then
  reset = (w + 2) * window * 1000 - now
elseif prev > 0 then
  reset = (w + 1) * window * 1000 - now
end
local remaining = math.floor((limit * window - weighted - cur * window) / window)

-- The first millisecond at which the call would fit.
local at
if cur + n <= limit then
  -- Later in this window, once prev's weight has dropped enough (prev > 0,
  -- or the call would have been allowed).
  at = w * window + window - math.floor((limit - cur - n) * window / prev)
else
  -- In the next window, where cur becomes prev (cur > 0 since n <= limit).
  at = (w + 1) * window + window - math.floor((limit - n) * window / cur)
end
return {0, remaining, at * 1000 - now, reset, now}
