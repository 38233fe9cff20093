-- release.lua: delete the lock if the caller still holds it, and announce it.
--
-- KEYS[1]  the lock key             ns:lock:{name}
-- ARGV[1]  the holder's token
-- ARGV[2]  the unlock channel       ns:lock:unlocked
-- ARGV[3]  the message: the escaped lock name
--
-- Returns 1 when the lock was released, 0 when the key is gone or holds
-- another token (nothing is deleted then, and nothing published).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[3])
  return 1
end
return 0
