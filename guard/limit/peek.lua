-- peek.lua: read, without changing anything, one limiter state key.
--
-- KEYS[1] state  ns:rl:{algo:key}
--
-- Returns {type, PTTL, content}: content is a hash's fields and values
-- (flat), a string's value, or a sorted set's member count; type is
-- "none" for a missing key.
local t = redis.call('TYPE', KEYS[1])['ok']
local ttl = redis.call('PTTL', KEYS[1])
if t == 'hash' then
  return {t, ttl, redis.call('HGETALL', KEYS[1])}
elseif t == 'string' then
  return {t, ttl, redis.call('GET', KEYS[1])}
elseif t == 'zset' then
  return {t, ttl, redis.call('ZCARD', KEYS[1])}
end
return {t, ttl, false}
