-- install.lua: hand a segment (lo, hi] reserved in the DB to the counter,
-- and release the caller's lease.
--
-- KEYS[1] counter  ns:seq:{biz}:day
-- KEYS[2] meta     ns:seq:{biz}:day:hw    (mark, lo, hi; see next.lua)
-- KEYS[3] lease    ns:seq:{biz}:day:lease
-- ARGV[1] lo       the DB mark before the reservation
-- ARGV[2] hi       the DB mark after it (committed)
-- ARGV[3] seed     "1": the caller saw the counter missing and may create it
-- ARGV[4] ttl      key lifetime, ms
-- ARGV[5] token    the caller's lease token
--
-- Returns 1 seeded, 2 the current range grew, 3 buffered as the next
-- segment, 0 dropped (stale or no room: its numbers are skipped), -1 the
-- counter is missing and the caller may not seed (no lease, or not a seed;
-- a lease of the caller's is released).
--
-- A segment is installed at most once: every segment reserved before the
-- counter was seeded lies below the counter, and every one installed since
-- lies at or below the mark, so a replayed call is dropped. Seeding needs
-- the lease, which the deletion of the keys (or the first run of this
-- script) removes, so a replayed seed cannot resurrect a lost counter.
local lo, hi = tonumber(ARGV[1]), tonumber(ARGV[2])
local ttl = ARGV[4]

local function release()
  if redis.call('GET', KEYS[3]) == ARGV[5] then
    redis.call('DEL', KEYS[3])
  end
end

local c = redis.call('GET', KEYS[1])
if not c then
  if ARGV[3] ~= '1' or redis.call('GET', KEYS[3]) ~= ARGV[5] then
    -- A refill whose counter was lost (evicted, expired, deleted) while its
    -- lease survived gives the lease up: kept, it would hold every caller,
    -- which must now seed, for LeaseTTL.
    release()
    return -1
  end
  redis.call('SET', KEYS[1], lo, 'PX', ttl)
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[2], 'mark', hi)
  redis.call('PEXPIRE', KEYS[2], ttl)
  release()
  return 1
end
c = tonumber(c)

local m = redis.call('HMGET', KEYS[2], 'mark', 'lo', 'hi')
local mark, nlo, nhi = tonumber(m[1]), tonumber(m[2]), tonumber(m[3])
local r = 0
if mark == nil then
  -- The meta key alone was lost: jump to the segment if it lies above
  -- every number issued.
  if lo >= c then
    redis.call('SET', KEYS[1], lo, 'KEEPTTL')
    redis.call('DEL', KEYS[2])
    redis.call('HSET', KEYS[2], 'mark', hi)
    mark, nlo, nhi = hi, nil, nil
    r = 2
  end
elseif lo < mark then
  r = 0
elseif lo == mark then
  mark = hi
  redis.call('HSET', KEYS[2], 'mark', mark)
  r = 2
elseif nlo == nil then
  nlo, nhi = lo, hi
  redis.call('HSET', KEYS[2], 'lo', nlo, 'hi', nhi)
  r = 3
elseif lo == nhi then
  nhi = hi
  redis.call('HSET', KEYS[2], 'hi', nhi)
  r = 3
elseif hi == nlo then
  nlo = lo
  redis.call('HSET', KEYS[2], 'lo', nlo)
  r = 3
end

if r > 0 then
  if nlo ~= nil and nlo == mark then
    redis.call('HSET', KEYS[2], 'mark', nhi)
    redis.call('HDEL', KEYS[2], 'lo', 'hi')
  end
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[2], ttl)
end
release()
return r
