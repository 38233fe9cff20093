-- write.lua: Invalidate and Set. Replace the id's version token, which
-- defeats every load that read the old one, and delete (or overwrite) the
-- entry, in one step.
--
-- KEYS[1]  entry key        ns:{name:id}
-- KEYS[2]  version key      ns:{name:id}:ver
-- ARGV[1]  new version token
-- ARGV[2]  version TTL, ms
-- ARGV[3]  entry to store, or "" to delete
-- ARGV[4]  entry TTL, ms (ignored when deleting)
--
-- A token may record a write position: "<token>@<16 hex digits>" (see
-- lsn.go). The new version keeps the higher of the old and new positions,
-- so that an invalidation that arrives late never lowers it.
--
-- Returns 1.
local ver = ARGV[1]
local old = redis.call('GET', KEYS[2])
if old then
  local was = string.match(old, '@(%x+)$')
  local now = string.match(ver, '@(%x+)$')
  if was and (not now or was > now) then
    ver = string.match(ver, '^[^@]*') .. '@' .. was
  end
end
redis.call('SET', KEYS[2], ver, 'PX', ARGV[2])
if ARGV[3] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
end
return 1
