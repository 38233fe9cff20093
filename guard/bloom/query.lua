-- query.lua: test elements against the current generation of one shard,
-- and say whether that generation is known complete, in one atomic step.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] layout fingerprint, ARGV[2] k,
-- ARGV[3] offset of the completeness marker (the shard's size in bits),
-- ARGV[4..] bit offsets, k per element.
-- Returns {trusted, hit_1, ..., hit_n}: trusted is 1 if the meta hash exists
-- and the current generation's buffer carries the marker bit (set by the
-- switch of a Rebuild that filled it from a full source), else 0; hit_i is
-- 1 if all the bits of element i are set, else 0. The caller answers
-- "maybe" for every element of an untrusted shard.
-- Errors "AKBLOOM_LAYOUT <stored>" if the shard was written with another sizing.
local meta = redis.call('HMGET', KEYS[1], 'layout', 'gen')
if meta[1] and meta[1] ~= ARGV[1] then
  return redis.error_reply('AKBLOOM_LAYOUT ' .. meta[1])
end
local gen = tonumber(meta[2] or '0')
local buf = KEYS[2 + gen % 2]
local out = {0}
if meta[1] and redis.call('GETBIT', buf, ARGV[3]) == 1 then
  out[1] = 1
end
local k = tonumber(ARGV[2])
local e = 1
for base = 4, #ARGV, k do
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
