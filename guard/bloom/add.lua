-- add.lua: set the bits of elements in the current generation of one shard,
-- and in the next one too while a rebuild fills it.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] layout fingerprint, ARGV[2] k,
-- ARGV[3..] bit offsets, k per element.
-- Returns how many of the elements had a bit that was not yet set.
-- Errors "AKBLOOM_LAYOUT <stored>" if the shard was written with another sizing.
--
-- The bits go in one BITFIELD per buffer (per chunk of bits), not one
-- SETBIT per bit: on a batch of elements (AddMany, repo/cdc), a command
-- called from Lua costs far more than setting a bit. A server without
-- BITFIELD (miniredis) gets one SETBIT per bit, with the same outcome.
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

-- chunk is the most bits one BITFIELD sets: its 4·chunk arguments stay
-- well under what unpack can pass.
local chunk = 1024
local bitfield = true

-- setBits sets the bits ARGV[3..] of buffer key and returns their old
-- values, in order.
local function setBits(key)
  local old = {}
  for from = 3, #ARGV, chunk do
    local to = math.min(from + chunk - 1, #ARGV)
    local r
    if bitfield then
      local args = {}
      for i = from, to do
        local j = 4 * (i - from)
        args[j + 1], args[j + 2], args[j + 3], args[j + 4] = 'SET', 'u1', ARGV[i], 1
      end
      r = redis.pcall('BITFIELD', key, unpack(args))
      if type(r) == 'table' and r.err then
        bitfield = false -- not a Redis with BITFIELD: a wrong type fails below
      end
    end
    if not bitfield then
      r = {}
      for i = from, to do
        r[i - from + 1] = redis.call('SETBIT', key, ARGV[i], 1)
      end
    end
    for i = 1, #r do
      old[#old + 1] = r[i]
    end
  end
  return old
end

local old = setBits(cur)
if nxt then
  setBits(nxt)
end
local added = 0
for base = 1, #old, k do
  for i = base, base + k - 1 do
    if old[i] == 0 then
      added = added + 1
      break
    end
  end
end
return added
