-- obtain.lua: take the lock if it is free and number the acquisition.
--
-- KEYS[1]  the lock key             ns:lock:{name}
-- KEYS[2]  its fencing counter      ns:lock:{name}:fence  (same hash tag)
-- ARGV[1]  the new holder's token
-- ARGV[2]  the lock's ttl in milliseconds
--
-- Returns {1, fence} when the lock was free: the SET and the INCR of the
-- fencing counter happen together, so fences follow the order of
-- acquisitions. Otherwise {0, pttl}: the current holder's remaining ttl in
-- milliseconds (-1 when the key has no expiry).
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('INCR', KEYS[2])}
end
return {0, redis.call('PTTL', KEYS[1])}
