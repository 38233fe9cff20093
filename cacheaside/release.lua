-- release.lua: give up a rebuild lease without storing anything (the load
-- failed) and wake the waiters so that one of them can try.
--
-- KEYS[1]  lease key        ns:{name:id}:lock
-- ARGV[1]  lease token
-- ARGV[2]  pub/sub channel, or "" for none
-- ARGV[3]  message: the entry key
--
-- Returns 1 when the lease was ours and is released, else 0.
local released = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  released = 1
end
if ARGV[2] ~= '' then
  redis.call('PUBLISH', ARGV[2], ARGV[3])
end
return released
