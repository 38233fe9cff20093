-- obtain.lua: take the lock if it is free and number the acquisition; a
-- waiter that finds it held also asks for the release's announcement.
--
-- KEYS[1]  the lock key             ns:lock:{name}
-- KEYS[2]  its fencing counter      ns:lock:{name}:fence  (same hash tag)
-- KEYS[3]  (waiters only) the waiting mark   ns:lock:{name}:wait  (same hash tag)
-- ARGV[1]  the new holder's token
-- ARGV[2]  the lock's ttl in milliseconds
-- ARGV[3]  (waiters only) how long past the holder's ttl the mark must
--          last, in milliseconds
--
-- Returns {1, fence} when the lock was free: the SET and the INCR of the
-- fencing counter happen together, so fences follow the order of
-- acquisitions. Otherwise {0, pttl}: the current holder's remaining ttl in
-- milliseconds (-1 when the key has no expiry). A waiter's failed try
-- sets the mark, or lengthens it, to last the holder's ttl plus ARGV[3]:
-- release.lua announces the release only while the mark exists. A mark
-- with no expiry (set by hand) is left alone.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('INCR', KEYS[2])}
end
local pttl = redis.call('PTTL', KEYS[1])
if KEYS[3] then
  local mark = math.max(pttl, 0) + tonumber(ARGV[3])
  local left = redis.call('PTTL', KEYS[3])
  if left ~= -1 and left < mark then
    redis.call('SET', KEYS[3], '1', 'PX', mark)
  end
end
return {0, pttl}
