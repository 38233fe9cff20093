-- peek.lua: read, without changing anything, what Redis holds for an id.
--
-- KEYS[1]  entry key        ns:{name:id}
-- KEYS[2]  lease key        ns:{name:id}:lock
-- KEYS[3]  version key      ns:{name:id}:ver
--
-- Returns {entry, entry PTTL, lease token, lease PTTL, version token}:
-- entry, lease and version are false when the key is missing; a PTTL is
-- -2 for a missing key and -1 for a key with no expiry.
return {
  redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]),
  redis.call('GET', KEYS[2]), redis.call('PTTL', KEYS[2]),
  redis.call('GET', KEYS[3]),
}
