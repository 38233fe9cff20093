-- query.lua: test elements against the current generation of one shard.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] layout fingerprint, ARGV[2] k,
-- ARGV[3..] bit offsets, k per element.
-- Returns one integer per element: 1 if all its bits are set, else 0.
-- Errors "AKBLOOM_LAYOUT <stored>" if the shard was written with another sizing.
local meta = redis.call('HMGET', KEYS[1], 'layout', 'gen')
if meta[1] and meta[1] ~= ARGV[1] then
  return redis.error_reply('AKBLOOM_LAYOUT ' .. meta[1])
end
local gen = tonumber(meta[2] or '0')
local buf = KEYS[2 + gen % 2]
local k = tonumber(ARGV[2])
local out = {}
local e = 0
for base = 3, #ARGV, k do
  local hit = 1
  for i = base, base + k - 1 do
    if redis.call('GETBIT', buf, ARGV[i]) == 0 then
      hit = 0
      break
    end
  end
  e = e + 1
  out[e] = hit
end
return out
