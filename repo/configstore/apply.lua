-- apply.lua: writes versioned entries into a config hash, each one only if
-- it is newer than what the hash holds for its field, so that two writers'
-- applies arriving out of order cannot leave the older value behind; then
-- publishes the entries it wrote, in one message.
--
-- KEYS[1]  the config hash, e.g. ak:cfg:{scope}
-- ARGV[1]  the change channel, e.g. ak:cfg:{scope}:changes
-- ARGV[2…] pairs: field, entry. An entry is "<version>:<value>" for a value
--          and "<version>" for a deletion (a tombstone).
--
-- Returns an array holding, per pair, 1 if it was written and 0 if the hash
-- already held that version or a newer one.
-- The message is, per written pair, "<len>:<field><len>:<entry>".

local function version(s)
  if not s then return -1 end
  local v = string.match(s, "^(%d+):") or string.match(s, "^(%d+)$")
  if not v then return -1 end -- not an entry of ours: anything replaces it
  return tonumber(v)
end

local out, msg = {}, {}
for i = 2, #ARGV, 2 do
  local field, entry = ARGV[i], ARGV[i + 1]
  if version(entry) > version(redis.call("HGET", KEYS[1], field)) then
    redis.call("HSET", KEYS[1], field, entry)
    out[#out + 1] = 1
    msg[#msg + 1] = #field .. ":" .. field .. #entry .. ":" .. entry
  else
    out[#out + 1] = 0
  end
end
if #msg > 0 then
  redis.call("PUBLISH", ARGV[1], table.concat(msg))
end
return out
