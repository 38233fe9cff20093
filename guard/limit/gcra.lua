-- GCRA (generic cell rate algorithm): a token bucket kept as one number, the
-- theoretical arrival time (TAT) of the next call at the sustained rate.
--
-- KEYS[1]  the TAT, microseconds since the Unix epoch (a string)
-- ARGV[1]  emission interval T: microseconds per call at the sustained rate
-- ARGV[2]  burst B: calls a full bucket allows at once
-- ARGV[3]  n: calls asked for, 1 <= n <= burst
--
-- Returns {allowed (0/1), remaining, retry after us, reset after us, now us}.
--
-- n calls are allowed at now if max(TAT, now) + n*T - B*T <= now; the TAT
-- then moves to max(TAT, now) + n*T. All values are integers below 2^53.
--
-- The expiry only cleans up: the state is judged by TIME, so it gets a
-- second of margin against Redis' coarser expiry clock.
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local n = tonumber(ARGV[3])

local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then
  tat = now
end
local new_tat = tat + n * interval
local allow_at = new_tat - burst * interval

if allow_at <= now then
  redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil((new_tat - now) / 1000) + 1000)
  return {1, math.floor((now - allow_at) / interval), 0, new_tat - now, now}
end

local remaining = math.floor((now - (tat - burst * interval)) / interval)
return {0, remaining, allow_at - now, tat - now, now}
