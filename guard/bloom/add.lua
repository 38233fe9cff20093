-- add.lua: set the bits of elements in the current generation of one shard,
-- and in the next one too while a rebuild fills it.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] layout fingerprint, ARGV[2] k,
-- ARGV[3..] bit offsets, k per element.
-- Returns how many of the elements had a bit that was not yet set.
-- Errors "AKBLOOM_LAYOUT <stored>" if the shard was written with another sizing.
--
-- The bit value is the string '1': Redis turns a Lua number argument into
-- a string with a printf of its own, a third of a SETBIT's cost here.
local meta = redis.call('HMGET', KEYS[1], 'layout', 'gen', 'rebuild')
if not meta[1] then
  redis.call('HSET', KEYS[1], 'layout', ARGV[1], 'gen', '0')
  meta[2] = '0'
elseif meta[1] ~= ARGV[1] then
  return redis.error_reply('AKBLOOM_LAYOUT ' .. meta[1])
end
local gen = tonumber(meta[2])
local cur = KEYS[2 + gen % 2]
local nxt = false
if meta[3] then
  nxt = KEYS[3 - gen % 2]
end
local k = tonumber(ARGV[2])
local added = 0
for base = 3, #ARGV, k do
  local new = 0
  for i = base, base + k - 1 do
    if redis.call('SETBIT', cur, ARGV[i], '1') == 0 then
      new = 1
    end
    if nxt then
      redis.call('SETBIT', nxt, ARGV[i], '1')
    end
  end
  added = added + new
end
return added
