-- extend.lua: renew a rebuild lease that its holder still holds, while its
-- load runs.
--
-- KEYS[1]  lease key        ns:{name:id}:lock
-- ARGV[1]  lease token
-- ARGV[2]  lease TTL, ms
--
-- Returns 1 when the lease was ours and is renewed, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
