-- write.lua: Invalidate, Set, SetIfVersion and StoreFromLog. Replace an
-- id's version token, which defeats every load that read the old one, and
-- delete (or overwrite) its entry, in one step (an invalidation of an id
-- that has no version creates none: see below). One call may carry
-- several ids to delete (Invalidate on a single Redis node sends up to
-- invalidateBatch per call: their keys are in different Cluster slots, so
-- a Cluster gets one id per call).
--
-- KEYS[2i-1]  entry key of the i-th id     ns:{name:id}
-- KEYS[2i]    version key of the i-th id   ns:{name:id}:ver
-- ARGV[1]     new version token, shared by the ids of the call (each
--             id's version also counts its writes, see below)
-- ARGV[2]     version TTL, ms
-- ARGV[3]     write position to record: 16 hex digits, or "" (lsn.go)
-- ARGV[4]     optional, for a call of one id (Set): the entry to store;
--             absent, every id's entry is deleted
-- ARGV[5]     the entry's TTL, ms
-- ARGV[6]     optional (SetIfVersion): the version the caller read before
--             its write; the entry is stored only if the version is still
--             that one ("" for none), and deleted otherwise
-- ARGV[7]     optional (StoreFromLog; ARGV[6] is then ignored): where the
--             change the entry comes from committed (16 hex digits); the
--             entry is stored only if the id has a version that records a
--             position at or before it, and deleted otherwise. An id
--             without a version gets none, as an invalidation.
--
-- The version stored is "<token>#<n>[@<position>]", n counting the writes
-- since the version key began: a write that Redis runs twice (a command
-- resent by the client after its reply was lost, landing after another
-- writer's) never brings back a version a load may still hold, so that
-- load's fill stays refused. The position is the higher of the old and
-- the new, so that an invalidation that arrives late never lowers it. A
-- position unknown counts as the highest, recorded as "~" (above every
-- hex digit; not a number, so lsn.go reads it as UnknownLSN): that of a
-- write that records none (ARGV[3] "") over a version, as its position may
-- be any, and that of a version created by a miss and not yet given a
-- position by its fill (version.lua, lease.lua: a bare token), which may
-- stand for one Redis lost, whose position a late invalidation (the log's
-- Invalidator behind a write that completed) must not replace with its
-- own lower one.
--
-- Returns the number of ids written; with an entry, 1 if it was stored, 0
-- if it was deleted.
local tok, verPX, pos = ARGV[1], ARGV[2], ARGV[3]
local entry, entryPX, expect, logAt = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
if logAt and (pos == '' or logAt > pos) then
  pos = logAt -- a row from the log records at least its change's position
end
-- Every id's old version in one MGET, and (to delete) every entry in one
-- DEL: a call from Lua costs more than the command's own work, so a call
-- of many ids makes two calls plus one SET per id rather than three per id.
local entries, vers = {}, {}
for i = 1, #KEYS, 2 do
  entries[#entries + 1] = KEYS[i]
  vers[#vers + 1] = KEYS[i + 1]
end
local olds = redis.call('MGET', unpack(vers))
local find, sub = string.find, string.sub
for j, verKey in ipairs(vers) do
  local old = olds[j]
  -- An invalidation of an id without a version leaves it without one: no
  -- load of the id is in flight (a load reads its version, creating it,
  -- before it reads the source of truth), and the next miss starts a
  -- version with no write position, which loads from the primary
  -- (RequiredLSN): drop.lua's state. So a bulk write of rows that nobody
  -- reads writes no version key per row.
  if old or (entry and not logAt) then
    local n, at = 1, pos
    if old then
      -- "<token>#<n>[@<position>]"; a version that version.lua or lease.lua
      -- created is a bare token. A token (internal/token) has neither '#'
      -- nor '@'. Plain finds: a pattern would be tried at every offset.
      local h = find(old, '#', 1, true)
      local a = find(old, '@', 1, true)
      if h then
        n = (tonumber(sub(old, h + 1, (a or 0) - 1)) or 0) + 1
      end
      if at == '' then
        at = '~' -- a write that records no position: unknown from now on
      end
      if a then
        local was = sub(old, a + 1)
        if was > at then
          at = was
        end
      elseif not h then
        at = '~' -- a bare token: its position is unknown
      end
    end
    local ver
    if at == '' then
      ver = tok .. '#' .. n
    else
      ver = tok .. '#' .. n .. '@' .. at -- one concatenation, one new string
    end
    redis.call('SET', verKey, ver, 'PX', verPX)
  end
end
if not entry then
  redis.call('DEL', unpack(entries))
  return #vers
end
-- Set, SetIfVersion and StoreFromLog: one id.
if logAt then
  -- The log's row is no older than any write that completed: a write's
  -- upkeep records a position past its commit, a load of an unknown
  -- version the position it read after the load, and a version created
  -- by a miss, or written over before a fill gave it a position, records
  -- none ("~" or no '@'). Anything else may be newer: invalidate.
  local old = olds[1]
  local a = old and find(old, '@', 1, true)
  local was = a and sub(old, a + 1)
  if not was or #was ~= 16 or was > logAt then
    redis.call('DEL', entries[1])
    return 0
  end
elseif expect and (olds[1] or '') ~= expect then
  redis.call('DEL', entries[1])
  return 0
end
redis.call('SET', entries[1], entry, 'PX', entryPX)
return 1
