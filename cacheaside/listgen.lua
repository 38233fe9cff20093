-- listgen.lua: ListGenerations' Bump and Patch. A bump sets a list's
-- generation to a new base; a patch appends a line to the generation if
-- it is still the value its writer read before its COMMIT (and carries
-- fewer than ARGV[5] lines), and bumps it otherwise.
--
-- KEYS[1]  the list's generation key            ns:{name:id}
-- ARGV[1]  the new base's token
-- ARGV[2]  the key's TTL, ms
-- ARGV[3]  optional (Patch): the line to append
-- ARGV[4]  the value the writer read (Seen), "" for none
-- ARGV[5]  the most lines a generation carries
--
-- A base is "<token>#<n>", n one more than the count after the "#" of the
-- key's current base (0 when the key is absent, or its base has no "#":
-- one that Read started). The same bump run twice (a command sent again
-- after its reply was lost, landing after another writer's bump) thus
-- yields two generations, never the first one again after the other bump
-- replaced it, which would make the pages filled under it before the
-- other writer's COMMIT current again. A generation's value is its base
-- and its lines, one per line.
--
-- Returns 1 if it appended the line, 0 if it bumped.
local cur = redis.call('GET', KEYS[1])
local line, seen = ARGV[3], ARGV[4]
if line and cur and cur == seen then
  local _, k = string.gsub(cur, '\n', '')
  if k < tonumber(ARGV[5]) then
    redis.call('SET', KEYS[1], cur .. '\n' .. line, 'PX', ARGV[2])
    return 1
  end
end
local n = 0
if cur then
  -- The match goes through a local: on gopher-lua (miniredis) a failed
  -- string.match returns no value at all, and tonumber() of nothing is an
  -- error, where Redis' Lua passes nil.
  local count = string.match(cur, '^[^\n]*#(%d+)')
  n = tonumber(count) or 0
end
redis.call('SET', KEYS[1], ARGV[1] .. '#' .. (n + 1), 'PX', ARGV[2])
return 0
