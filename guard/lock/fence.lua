-- fence.lua (Redlock): raise a node's fencing counter to the fence that a
-- quorum granted, so that the next quorum, which shares at least one node
-- with this one, numbers its acquisition higher.
--
-- KEYS[1]  the lock key             ns:lock:{name}
-- KEYS[2]  its fencing counter      ns:lock:{name}:fence  (same hash tag)
-- ARGV[1]  the holder's token
-- ARGV[2]  the fence granted by the quorum
--
-- Returns the counter's value afterwards, or -1 (and changes nothing) when
-- the caller does not hold the lock on this node.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local floor = tonumber(ARGV[2])
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if current < floor then
  redis.call('SET', KEYS[2], ARGV[2])
  return floor
end
return current
