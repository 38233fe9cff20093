-- write.lua: Invalidate and Set. Replace an id's version token, which
-- defeats every load that read the old one, and delete (or overwrite) its
-- entry, in one step. One call may carry several ids (Invalidate on a
-- single Redis node sends up to invalidateBatch per call: their keys are
-- in different Cluster slots, so a Cluster gets one id per call).
--
-- For the i-th id (i = 1, 2, ...):
-- KEYS[2i-1]  entry key        ns:{name:id}
-- KEYS[2i]    version key      ns:{name:id}:ver
-- ARGV[4i-3]  new version token
-- ARGV[4i-2]  version TTL, ms
-- ARGV[4i-1]  entry to store, or "" to delete
-- ARGV[4i]    entry TTL, ms (ignored when deleting)
--
-- A token may record a write position: "<token>@<16 hex digits>" (see
-- lsn.go). The new version keeps the higher of the old and new positions,
-- so that an invalidation that arrives late never lowers it.
--
-- The version stored is "<token>#<n>[@<position>]", n counting the writes
-- since the version key began: a write that Redis runs twice (a command
-- resent by the client after its reply was lost, landing after another
-- writer's) never brings back a version a load may still hold, so that
-- load's fill stays refused.
--
-- ARGV[4n+1], optional, for a call of one id (SetIfVersion): the version
-- the caller read before its write; the entry is stored only if the
-- version is still that one ("" for none), and deleted otherwise.
--
-- Returns the number of ids written; with ARGV[4n+1], 1 if the entry was
-- stored, 0 if it was deleted.
local n = #KEYS / 2
local expect = ARGV[4 * n + 1]
local stored = 0
for i = 0, n - 1 do
  local key, verKey, a = KEYS[2 * i + 1], KEYS[2 * i + 2], 4 * i
  local ver = ARGV[a + 1]
  local old = redis.call('GET', verKey)
  local n = 1
  if old then
    local was = string.match(old, '@(%x+)$')
    local now = string.match(ver, '@(%x+)$')
    if was and (not now or was > now) then
      ver = string.match(ver, '^[^@]*') .. '@' .. was
    end
    n = (tonumber(string.match(old, '#(%d+)')) or 0) + 1
  end
  local base, at = string.match(ver, '^([^@]*)(.*)$')
  ver = base .. '#' .. n .. at
  redis.call('SET', verKey, ver, 'PX', ARGV[a + 2])
  if ARGV[a + 3] == '' or (expect and (old or '') ~= expect) then
    redis.call('DEL', key)
  else
    redis.call('SET', key, ARGV[a + 3], 'PX', ARGV[a + 4])
    stored = 1
  end
end
if expect then
  return stored
end
return n
