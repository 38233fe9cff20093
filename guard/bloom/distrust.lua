-- distrust.lua: stop trusting one shard: its current generation loses the
-- completeness marker, so that its checks answer "maybe" until a Rebuild
-- switches to a generation filled from a full source; a rebuild under way
-- is superseded (its token and next buffer dropped), since its source may
-- have been read before a key it will never be given.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] layout fingerprint,
-- ARGV[2] offset of the completeness marker (the shard's size in bits).
-- Returns 1 if the shard was trusted, else 0.
-- Errors "AKBLOOM_LAYOUT <stored>" if the shard was written with another sizing.
local meta = redis.call('HMGET', KEYS[1], 'layout', 'gen', 'rebuild')
if not meta[1] then
  return 0 -- no meta: untrusted already
end
if meta[1] ~= ARGV[1] then
  return redis.error_reply('AKBLOOM_LAYOUT ' .. meta[1])
end
local gen = tonumber(meta[2] or '0')
if meta[3] then
  redis.call('HDEL', KEYS[1], 'rebuild')
  redis.call('UNLINK', KEYS[3 - gen % 2])
end
local buf = KEYS[2 + gen % 2]
if redis.call('GETBIT', buf, ARGV[2]) == 0 then
  return 0 -- never SETBIT an absent bitmap into being
end
redis.call('SETBIT', buf, ARGV[2], 0)
return 1
