-- peek.lua: read, without changing anything, one (biz, day)'s Redis state.
--
-- KEYS[1] counter  ns:seq:{biz}:day
-- KEYS[2] meta     ns:seq:{biz}:day:hw
-- KEYS[3] lease    ns:seq:{biz}:day:lease
--
-- Returns {counter, mark, lease token, lease PTTL}: counter, mark and
-- lease are false when missing; the PTTL is -2 for a missing lease.
return {
  redis.call('GET', KEYS[1]), redis.call('HGET', KEYS[2], 'mark'),
  redis.call('GET', KEYS[3]), redis.call('PTTL', KEYS[3]),
}
