-- lease.lua: renew or release the lease of an automatic rebuild, if the
-- token still holds it.
-- KEYS[1] the filter's rebuild lease key
-- ARGV[1] token, ARGV[2] new lifetime in milliseconds, or 0 to release.
-- Returns 1 if the token held the lease, else 0 (it expired, or another
-- process holds it now).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] == '0' then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
