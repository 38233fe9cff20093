-- lock.lua: takes the rebuild lock of a config hash unless the hash is
-- already built (double-checked in one step, so a reader that saw the hash
-- missing never rebuilds it after another process has).
--
-- KEYS[1]  the config hash, e.g. ak:cfg:{scope}
-- KEYS[2]  the rebuild lock, e.g. ak:cfg:{scope}:lock
-- ARGV[1]  a random token naming the holder
-- ARGV[2]  the lock's time to live, in milliseconds
--
-- Returns 1 if the hash is built, 2 if the lock was taken, 0 if another
-- holder has it. Taking the lock also writes the token into the hash's
-- field "\0rebuild": if the hash is deleted or evicted before the rebuild
-- lands, the field goes with it, and rebuild.lua refuses rows that may be
-- older than a write the hash has lost.

if redis.call("HEXISTS", KEYS[1], "") == 1 then
  return 1
end
if redis.call("SET", KEYS[2], ARGV[1], "NX", "PX", ARGV[2]) then
  redis.call("HSET", KEYS[1], "\0rebuild", ARGV[1])
  return 2
end
return 0
