-- version.lua: read the version token of an id, creating it when missing.
-- A load reads the token before it calls the loader; fill.lua refuses the
-- store when the token has changed since.
--
-- KEYS[1]  version key      ns:{name:id}:ver
-- ARGV[1]  candidate token  stored when the key is missing
-- ARGV[2]  version TTL, ms
--
-- Returns the current token.
local v = redis.call('GET', KEYS[1])
if v then
  return v
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return ARGV[1]
