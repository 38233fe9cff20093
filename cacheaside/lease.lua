-- lease.lua: take the rebuild lease of an id unless there is nothing to
-- rebuild, and read its version token in the same step.
--
-- KEYS[1]  entry key        ns:{name:id}
-- KEYS[2]  lease key        ns:{name:id}:lock
-- KEYS[3]  version key      ns:{name:id}:ver
-- ARGV[1]  lease token
-- ARGV[2]  lease TTL, ms
-- ARGV[3]  candidate version token (stored when the version key is missing)
-- ARGV[4]  version TTL, ms
-- ARGV[5]  now, Unix ms (the caller's clock)
-- ARGV[6]  refresh mode: the entry header the caller saw ("" = miss mode)
--
-- Miss mode: an entry whose header is valid (magic 0xAC, format 1) and
-- whose logical expiry (bytes 4..11, big-endian ms) is after ARGV[5] needs
-- no rebuild. Refresh mode: an entry whose header differs from ARGV[6] (or
-- that is gone) was refreshed or invalidated by someone else.
--
-- Taking a lease is idempotent for one token: a lease that ARGV[1] holds
-- already is granted again (and renewed), so a client that retries the
-- script after losing the first reply does not wait for itself. When
-- there is nothing to rebuild, a lease that ARGV[1] holds is given up.
--
-- Returns {status, version, entry}: status 2 = nothing to do (entry is the
-- current one, or false), 1 = lease taken (version is the token to pass to
-- fill.lua), 0 = lease held by another caller (version is then the
-- holder's lease token, which its fill.lua announces; entry may be stale).
local mine = redis.call('GET', KEYS[2]) == ARGV[1]
local v = redis.call('GET', KEYS[1])
local noop = false
if ARGV[6] ~= '' then
  noop = not v or string.sub(v, 1, #ARGV[6]) ~= ARGV[6]
elseif v and #v >= 15 and string.byte(v, 1) == 172 and string.byte(v, 2) == 1 then
  local e = 0
  for i = 4, 11 do
    e = e * 256 + string.byte(v, i)
  end
  noop = e > tonumber(ARGV[5])
end
if noop then
  if mine then
    redis.call('DEL', KEYS[2])
  end
  return {2, false, v}
end
if mine then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
elseif not redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('GET', KEYS[2]), v}
end
local ver = redis.call('GET', KEYS[3])
if not ver then
  ver = ARGV[3]
  redis.call('SET', KEYS[3], ver, 'PX', ARGV[4])
end
return {1, ver, v}
