-- stats.lua: describe one shard.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] layout fingerprint,
-- ARGV[2] offset of the completeness marker (the shard's size in bits).
-- Returns {generation, bits set in the current generation (the marker not
-- counted), 1 if a rebuild is under way else 0, 1 if the shard is trusted
-- (as query.lua decides) else 0}. BITCOUNT is O(shard size).
-- Errors "AKBLOOM_LAYOUT <stored>" if the shard was written with another sizing.
local meta = redis.call('HMGET', KEYS[1], 'layout', 'gen', 'rebuild')
if meta[1] and meta[1] ~= ARGV[1] then
  return redis.error_reply('AKBLOOM_LAYOUT ' .. meta[1])
end
local gen = tonumber(meta[2] or '0')
local buf = KEYS[2 + gen % 2]
local marker = redis.call('GETBIT', buf, ARGV[2])
local set = redis.call('BITCOUNT', buf) - marker
local rebuilding = 0
if meta[3] then
  rebuilding = 1
end
local trusted = 0
if meta[1] and marker == 1 then
  trusted = 1
end
return {gen, set, rebuilding, trusted}
