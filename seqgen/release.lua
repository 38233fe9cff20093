-- release.lua: give up a lease taken by next.lua without installing.
--
-- KEYS[1] lease    ns:seq:{biz}:day:lease
-- ARGV[1] token    the caller's lease token
--
-- Returns 1 if the lease was the caller's and is gone, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
