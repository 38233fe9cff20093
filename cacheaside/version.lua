-- version.lua: read the version token of an id before a load, creating it
-- when missing, and return the entry instead if one is fresh by now (the
-- caller's miss raced with another caller's store). fill.lua refuses the
-- store when the token has changed since.
--
-- KEYS[1]  entry key        ns:{name:id}
-- KEYS[2]  version key      ns:{name:id}:ver
-- ARGV[1]  candidate token  stored when the version key is missing
-- ARGV[2]  version TTL, ms
-- ARGV[3]  now, Unix ms (the caller's clock)
--
-- Returns {token, entry}: entry is false unless a valid entry (magic 0xAC,
-- format 1) with a logical expiry (bytes 4..11, big-endian ms) after
-- ARGV[3] exists.
local v = redis.call('GET', KEYS[1])
if v and #v >= 15 and string.byte(v, 1) == 172 and string.byte(v, 2) == 1 then
  local e = 0
  for i = 4, 11 do
    e = e * 256 + string.byte(v, i)
  end
  if e <= tonumber(ARGV[3]) then
    v = false
  end
else
  v = false
end
local ver = redis.call('GET', KEYS[2])
if not ver then
  ver = ARGV[1]
  redis.call('SET', KEYS[2], ver, 'PX', ARGV[2])
end
return {ver, v}
