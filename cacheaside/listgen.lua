-- listgen.lua: ListGenerations' Bump and Patch, and the effect
-- PatchFromLog. A bump sets a list's generation to a new base; a patch
-- appends a line to the generation if it is still the value its writer
-- read before its COMMIT; lines from the log are appended if every line
-- the generation carries came from the log too and the last of them is
-- older than the first new one. Either appends only while the generation
-- carries at most ARGV[5] lines after it, and bumps otherwise.
--
-- KEYS[1]  the list's generation key            ns:{name:id}
-- ARGV[1]  the new base's token
-- ARGV[2]  the key's TTL, ms
-- ARGV[3]  absent (a bump), "patch" or "log"
-- ARGV[4]  patch: the value the writer read (Seen), "" for none;
--          log: the first new line's commit position (16 hex digits)
-- ARGV[5]  the most lines a generation carries
-- ARGV[6…] the lines to append: a patch's one; the log's, in commit
--          order, each "@<position> <xid> <patch>"
--
-- Why the log's conditions: a reader skips a log line whose transaction
-- its page's snapshot saw, so log lines may land after the pages they
-- patch were loaded; but a writer's line is applied to every page, and a
-- log line of an older transaction after it would undo it. Log lines in
-- position order also make a batch sent again (its reply lost, or another
-- reader replaying the log) a bump, never lines out of order.
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
-- Returns 1 if it appended the lines, 0 if it bumped.
local cur, mode = redis.call('GET', KEYS[1]), ARGV[3]
if cur and mode then
  local k, last, logged = 0, '', true
  for line in string.gmatch(cur, '\n([^\n]*)') do
    k = k + 1
    logged = logged and string.sub(line, 1, 1) == '@'
    last = string.sub(line, 2, 17)
  end
  local ok = (mode == 'patch' and cur == ARGV[4]) or (mode == 'log' and logged and last < ARGV[4])
  if ok and k + #ARGV - 5 <= tonumber(ARGV[5]) then
    redis.call('SET', KEYS[1], cur .. '\n' .. table.concat(ARGV, '\n', 6), 'PX', ARGV[2])
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
