-- release.lua: delete the lock if the caller still holds it, and announce
-- the release if a waiter asked for it.
--
-- KEYS[1]  the lock key             ns:lock:{name}
-- KEYS[2]  the waiting mark         ns:lock:{name}:wait  (same hash tag)
-- ARGV[1]  the holder's token
-- ARGV[2]  the unlock channel       ns:lock:unlocked
-- ARGV[3]  the message: the escaped lock name
--
-- Returns 1 when the lock was released, 0 when the key is gone or holds
-- another token (nothing is deleted then, and nothing published). The
-- release is published only while the mark, set by waiters' failed tries
-- (obtain.lua), exists: with nobody waiting, a release costs no PUBLISH,
-- which on a Cluster would reach every node. The mark is left in place:
-- other waiters may still sleep on it; it expires by itself.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if redis.call('EXISTS', KEYS[2]) == 1 then
    redis.call('PUBLISH', ARGV[2], ARGV[3])
  end
  return 1
end
return 0
