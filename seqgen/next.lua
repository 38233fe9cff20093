-- next.lua: issue consecutive numbers of one (biz, day), the hot path.
--
-- KEYS[1] counter  ns:seq:{biz}:day       string, the last number issued
-- KEYS[2] meta     ns:seq:{biz}:day:hw    hash: mark = highest number the
--                                         counter may reach; lo, hi = a
--                                         buffered segment (lo, hi], if any
-- KEYS[3] lease    ns:seq:{biz}:day:lease who may reserve in the DB now
-- ARGV[1] n        how many numbers, >= 1
-- ARGV[2] max      the highest number a day may have
-- ARGV[3] low      ask for a refill once mark - last <= low
-- ARGV[4] token    this caller's lease token
-- ARGV[5] lease    lease lifetime, ms
-- ARGV[6] upto     "1": take up to n numbers (a batch of joined calls):
--                  what is left of the segment, or of the day, if fewer;
--                  otherwise all n or none
--
-- Returns {status, value, leased, count}:
--   {0, last, refill, k} issued the k numbers last-k+1 .. last (k = n unless
--                        upto); refill = 1 if the caller took the lease and
--                        should reserve the next segment
--   {1, counter, got, 0} need a segment: the counter is at its mark
--   {2, 0, got, 0}       need a seed: the counter key is missing
--   {3, counter, 0, 0}   exhausted: counter + n > max (upto: counter = max)
-- got = 1 if the caller now holds the lease, 0 if someone else does.
--
-- The numbers issued are those of the reply, so a replayed call (a client
-- retry after a lost reply) issues new numbers and the lost ones are
-- skipped: never handed out twice.
local n = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local upto = ARGV[6] == '1'

-- A replayed call (same token) finds the lease its first run took: it
-- holds it still, rather than leave it to expire unused.
local function lease()
  if redis.call('SET', KEYS[3], ARGV[4], 'NX', 'PX', ARGV[5])
      or redis.call('GET', KEYS[3]) == ARGV[4] then
    return 1
  end
  return 0
end

local c = redis.call('GET', KEYS[1])
if not c then
  return {2, 0, lease(), 0}
end
c = tonumber(c)
if upto and c < max and c + n > max then
  n = max - c
end
if c + n > max then
  return {3, c, 0, 0}
end

local m = redis.call('HMGET', KEYS[2], 'mark', 'lo', 'hi')
-- A missing mark (the meta key alone was lost) allows nothing until a
-- segment is installed.
local mark = tonumber(m[1]) or c
local lo, hi = tonumber(m[2]), tonumber(m[3])

if c + n > mark then
  if upto and c < mark then
    -- The rest of the segment; the batch's other calls wait for the next.
    n = mark - c
  elseif lo and hi and lo >= mark and (lo + n <= hi or (upto and lo < hi)) then
    -- Move to the buffered segment; numbers left in the current one, if
    -- any, are skipped (only an all-or-nothing batch can leave some).
    if upto then
      n = math.min(n, hi - lo)
    end
    redis.call('SET', KEYS[1], lo, 'KEEPTTL')
    redis.call('HSET', KEYS[2], 'mark', hi)
    redis.call('HDEL', KEYS[2], 'lo', 'hi')
    c, mark, lo, hi = lo, hi, nil, nil
  else
    return {1, c, lease(), 0}
  end
end

local last = redis.call('INCRBY', KEYS[1], n)
local refill = 0
if lo == nil and mark < max and mark - last <= tonumber(ARGV[3]) then
  refill = lease()
end
return {0, last, refill, n}
