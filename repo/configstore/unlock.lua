-- unlock.lua: releases the rebuild lock if the caller still holds it.
--
-- KEYS[1]  the rebuild lock, e.g. ak:cfg:{scope}:lock
-- ARGV[1]  the holder's token
--
-- Returns 1 if the lock was released, 0 if another holder has it or it
-- expired.

if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
