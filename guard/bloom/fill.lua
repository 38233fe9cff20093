-- fill.lua: set the bits of elements in the next generation of one shard,
-- for the rebuild that owns it.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] rebuild token, ARGV[2] k, ARGV[3..] bit offsets, k per element.
-- Returns the number of elements.
-- Errors "AKBLOOM_SUPERSEDED" if the shard is not being rebuilt by this token.
local meta = redis.call('HMGET', KEYS[1], 'gen', 'rebuild')
if meta[2] ~= ARGV[1] then
  return redis.error_reply('AKBLOOM_SUPERSEDED another rebuild owns this shard')
end
local nxt = KEYS[3 - tonumber(meta[1]) % 2]
local k = tonumber(ARGV[2])
for i = 3, #ARGV do
  redis.call('SETBIT', nxt, ARGV[i], '1') -- a string: see add.lua
end
return (#ARGV - 2) / k
