-- abort.lua: give up a rebuild of one shard, if this token still owns it:
-- adds stop writing the next generation and its buffer is deleted. The
-- current generation is untouched.
-- KEYS[1] shard meta hash (fields layout, gen, rebuild)
-- KEYS[2] generation buffer 0, KEYS[3] generation buffer 1 (same hash tag)
-- ARGV[1] rebuild token.
-- Returns 1 if the rebuild was aborted, 0 if the token did not own it.
local meta = redis.call('HMGET', KEYS[1], 'gen', 'rebuild')
if meta[2] ~= ARGV[1] then
  return 0
end
redis.call('HDEL', KEYS[1], 'rebuild')
redis.call('UNLINK', KEYS[3 - tonumber(meta[1]) % 2])
return 1
