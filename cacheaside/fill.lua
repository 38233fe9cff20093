-- fill.lua: store a loaded entry unless the id's version changed since the
-- load began; release the caller's lease and notify waiters.
--
-- KEYS[1]  entry key        ns:{name:id}
-- KEYS[2]  version key      ns:{name:id}:ver
-- KEYS[3]  lease key        ns:{name:id}:lock
-- ARGV[1]  version token read before the load
-- ARGV[2]  entry (header + payload)
-- ARGV[3]  entry TTL, ms
-- ARGV[4]  version TTL, ms (>= every entry TTL of the entity)
-- ARGV[5]  lease token, or "" when the caller holds no lease
-- ARGV[6]  pub/sub channel to publish KEYS[1] on, or "" for none
-- ARGV[7]  "1" to announce the entry with the key when it is stored
-- ARGV[8]  the version to store with the entry, or "" to keep ARGV[1]
--          (a version created by a miss, given the position the load
--          saw: lsn.go)
--
-- The announcement is KEYS[1], or, when the entry was stored and ARGV[7]
-- is "1", KEYS[1] .. "\n" .. ARGV[5] .. "\n" .. ARGV[2]: a waiter that saw
-- the lease held by ARGV[5] may take that entry without reading it again.
--
-- Returns 1 when stored, 0 when refused (the version changed), plus 2
-- when ARGV[5] is a lease token that no longer holds the lease (it lapsed:
-- another caller may have loaded the id too).
local stored = 0
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  if ARGV[8] and ARGV[8] ~= '' then
    redis.call('SET', KEYS[2], ARGV[8], 'PX', ARGV[4])
  else
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
  end
  stored = 1
end
local lost = 0
if ARGV[5] ~= '' then
  if redis.call('GET', KEYS[3]) == ARGV[5] then
    redis.call('DEL', KEYS[3])
  else
    lost = 2
  end
end
if ARGV[6] ~= '' then
  if stored == 1 and ARGV[7] == '1' then
    redis.call('PUBLISH', ARGV[6], KEYS[1] .. '\n' .. ARGV[5] .. '\n' .. ARGV[2])
  else
    redis.call('PUBLISH', ARGV[6], KEYS[1])
  end
end
return stored + lost
