-- fix.lua: repairs fields of a config hash by compare-and-set: each field
-- is changed only if it still holds what the caller read, so a write that
-- landed in between is never overwritten; then publishes what it changed.
--
-- KEYS[1]  the config hash, e.g. ak:cfg:{scope}
-- ARGV[1]  the change channel
-- ARGV[2]  "" or a guard: a token the caller wrote into the field
--          "\0rebuild" of a hash that was not built (see lock.lua). If the
--          field no longer holds it (the hash was deleted, or a rebuild
--          took over), nothing is changed; else the field is removed.
-- ARGV[3…] triples: field, expected, wanted. "-" means "no such field" and
--          "=" .. s means "the field holds s".
--
-- Returns an array holding, per triple, 1 if the field was changed and 0 if
-- it no longer held the expected value (or the guard failed). A removed field is published with
-- an empty entry; the built marker (field "") is never published.

local out, msg = {}, {}
if ARGV[2] ~= "" then
  if redis.call("HGET", KEYS[1], "\0rebuild") ~= ARGV[2] then
    for i = 3, #ARGV, 3 do
      out[#out + 1] = 0
    end
    return out
  end
  redis.call("HDEL", KEYS[1], "\0rebuild")
end
for i = 3, #ARGV, 3 do
  local field, expected, wanted = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local cur = redis.call("HGET", KEYS[1], field)
  local seen = "-"
  if cur then seen = "=" .. cur end
  if seen == expected then
    local entry = ""
    if wanted == "-" then
      redis.call("HDEL", KEYS[1], field)
    else
      entry = string.sub(wanted, 2)
      redis.call("HSET", KEYS[1], field, entry)
    end
    out[#out + 1] = 1
    if field ~= "" then
      msg[#msg + 1] = #field .. ":" .. field .. #entry .. ":" .. entry
    end
  else
    out[#out + 1] = 0
  end
end
if #msg > 0 then
  redis.call("PUBLISH", ARGV[1], table.concat(msg))
end
return out
