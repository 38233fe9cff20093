-- rebuild.lua: fills a config hash from the database's rows, marks it built
-- and releases the rebuild lock. Each row is written only if it is newer
-- than what the hash holds, so a write applied while the rows were being
-- read is never overwritten by the older snapshot.
--
-- KEYS[1]  the config hash, e.g. ak:cfg:{scope}
-- KEYS[2]  the rebuild lock, e.g. ak:cfg:{scope}:lock
-- ARGV[1]  the change channel
-- ARGV[2]  the caller's lock token
-- ARGV[3]  the value of the built marker (field "")
-- ARGV[4…] pairs: field, entry ("<version>:<value>" or "<version>")
--
-- The caller's lock is released either way.
--
-- Returns the number of entries written, or -1, writing nothing, if the
-- hash's field "\0rebuild" no longer holds the caller's token: the hash was
-- deleted or evicted since lock.lua wrote it, with the entries of writes
-- applied meanwhile, which the rows may predate; or the lock expired and
-- another rebuild took over. Written entries are published as in
-- apply.lua.

local function version(s)
  if not s then return -1 end
  local v = string.match(s, "^(%d+):") or string.match(s, "^(%d+)$")
  if not v then return -1 end
  return tonumber(v)
end

local function unlock()
  if redis.call("GET", KEYS[2]) == ARGV[2] then
    redis.call("DEL", KEYS[2])
  end
end

if redis.call("HGET", KEYS[1], "\0rebuild") ~= ARGV[2] then
  unlock()
  return -1
end

local n, msg = 0, {}
for i = 4, #ARGV, 2 do
  local field, entry = ARGV[i], ARGV[i + 1]
  if version(entry) > version(redis.call("HGET", KEYS[1], field)) then
    redis.call("HSET", KEYS[1], field, entry)
    n = n + 1
    msg[#msg + 1] = #field .. ":" .. field .. #entry .. ":" .. entry
  end
end
redis.call("HDEL", KEYS[1], "\0rebuild")
redis.call("HSET", KEYS[1], "", ARGV[3])
unlock()
if #msg > 0 then
  redis.call("PUBLISH", ARGV[1], table.concat(msg))
end
return n
