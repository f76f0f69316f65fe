-- sem_status.lua: list the live permits of a semaphore (writes nothing).
--
-- KEYS[1] permits key, KEYS[2] holders key, KEYS[3] limit key
--
-- Reply: {1, limit, owner, token, acquired_at_ms, expires_at_ms, owner, ...}  by expiry, earliest first
--        {0}                                                               no live permit
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%.0f', now_ms), '+inf', 'WITHSCORES')
if #live == 0 then
  return {0}
end
local out = {1, redis.call('GET', KEYS[3]) or '0'}
for i = 1, #live, 2 do
  local h = redis.call('HGET', KEYS[2], live[i]) or ''
  local sep = string.find(h, ':', 1, true)
  if sep then
    out[#out + 1] = live[i]
    out[#out + 1] = string.sub(h, 1, sep - 1)
    out[#out + 1] = string.sub(h, sep + 1)
    out[#out + 1] = string.format('%.0f', tonumber(live[i + 1]))
  end
end
return out
