-- pttl.lua: the remaining ttl of the lock, if the caller still holds it.
--
-- KEYS[1]  the lock key             ns:lock:{name}
-- ARGV[1]  the holder's token
--
-- Returns the ttl in milliseconds (-1: no expiry), or -3 when the key is
-- gone or holds another token.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PTTL', KEYS[1])
end
return -3
