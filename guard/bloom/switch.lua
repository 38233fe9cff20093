-- switch.lua: finish a rebuild of one shard: the next generation gets the
-- completeness marker, readers move to it and the old one is deleted, in
-- one step.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] rebuild token,
-- ARGV[2] offset of the completeness marker (the shard's size in bits).
-- Returns the new generation.
-- Errors "AKBLOOM_SUPERSEDED" if the shard is not being rebuilt by this token.
local meta = redis.call('HMGET', KEYS[1], 'gen', 'rebuild')
if meta[2] ~= ARGV[1] then
  return redis.error_reply('AKBLOOM_SUPERSEDED another rebuild owns this shard')
end
local gen = tonumber(meta[1])
-- The marker lives in the bitmap it vouches for, past the element bits: a
-- bitmap that is evicted, deleted or missing after a failover takes its
-- marker with it, so its shard can never be trusted without its bits.
redis.call('SETBIT', KEYS[3 - gen % 2], ARGV[2], 1)
redis.call('HSET', KEYS[1], 'gen', tostring(gen + 1))
redis.call('HDEL', KEYS[1], 'rebuild')
redis.call('UNLINK', KEYS[2 + gen % 2])
return gen + 1
