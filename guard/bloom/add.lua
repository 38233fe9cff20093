-- add.lua: set the bits of elements in the current generation of one shard,
-- and in the next one too while a rebuild fills it.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] layout fingerprint, ARGV[2] k,
-- ARGV[3..] bit offsets, k per element.
-- Returns how many of the elements had a bit that was not yet set.
-- Errors "AKBLOOM_LAYOUT <stored>" if the shard was written with another sizing.
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
-- One BITFIELD per up to 1000 bits (and per bitmap) instead of a SETBIT
-- each: a call from the script costs far more than the bit it sets. The
-- old bits it returns tell which elements were new.
local function set(key, first, last)
  local ops, n = {}, 0
  for i = first, last do
    ops[n + 1], ops[n + 2], ops[n + 3], ops[n + 4] = 'SET', 'u1', ARGV[i], '1'
    n = n + 4
  end
  return redis.call('BITFIELD', key, unpack(ops))
end
local added = 0
local per = k * math.max(1, math.floor(1000 / k)) -- whole elements per BITFIELD
for first = 3, #ARGV, per do
  local last = math.min(first + per - 1, #ARGV)
  local old = set(cur, first, last)
  if nxt then
    set(nxt, first, last)
  end
  for e = 1, #old, k do
    for i = e, e + k - 1 do
      if old[i] == 0 then
        added = added + 1
        break
      end
    end
  end
end
return added
