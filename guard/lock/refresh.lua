-- refresh.lua: give the lock a new ttl if the caller still holds it.
--
-- KEYS[1]  the lock key             ns:lock:{name}
-- ARGV[1]  the holder's token
-- ARGV[2]  the new ttl in milliseconds
--
-- Returns 1 when the ttl was set, 0 when the key is gone or holds another
-- token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
