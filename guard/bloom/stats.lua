-- stats.lua: describe one shard.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] layout fingerprint.
-- Returns {generation, bits set in the current generation, 1 if a rebuild
-- is under way else 0}. BITCOUNT is O(shard size).
-- Errors "AKBLOOM_LAYOUT <stored>" if the shard was written with another sizing.
local meta = redis.call('HMGET', KEYS[1], 'layout', 'gen', 'rebuild')
if meta[1] and meta[1] ~= ARGV[1] then
  return redis.error_reply('AKBLOOM_LAYOUT ' .. meta[1])
end
local gen = tonumber(meta[2] or '0')
local set = redis.call('BITCOUNT', KEYS[2 + gen % 2])
local rebuilding = 0
if meta[3] then
  rebuilding = 1
end
return {gen, set, rebuilding}
