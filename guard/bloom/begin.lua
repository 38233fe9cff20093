-- begin.lua: start a rebuild of one shard. Clears the next generation's
-- buffer (left over from an older generation or from a rebuild this one
-- takes over) and marks the shard as rebuilding by token, so that adds
-- write both generations from now on.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] layout fingerprint, ARGV[2] rebuild token.
-- Returns the shard's current generation.
-- Errors "AKBLOOM_LAYOUT <stored>" if the shard was written with another sizing.
local meta = redis.call('HMGET', KEYS[1], 'layout', 'gen')
if not meta[1] then
  redis.call('HSET', KEYS[1], 'layout', ARGV[1], 'gen', '0')
  meta[2] = '0'
elseif meta[1] ~= ARGV[1] then
  return redis.error_reply('AKBLOOM_LAYOUT ' .. meta[1])
end
local gen = tonumber(meta[2])
redis.call('UNLINK', KEYS[3 - gen % 2])
redis.call('HSET', KEYS[1], 'rebuild', ARGV[2])
return gen
