-- user_attempt.lua: one attempt on a user lock (the PHP Lock::addUserLock),
-- with the abuse counter, flagging and policy bans, atomically.
--
-- Every key belongs to one (tenant, user) and shares its hash tag.
-- KEYS[1] counter   (hash: n, start, exp, flagged; PEXPIREAT = exp) for (lock, user);
--                   flagged = "1" once the window has flagged the user
-- KEYS[2] ban       (hash: until, reason, by, source, lock, created; PEXPIREAT = until)
-- KEYS[3] flag      (hash: user, lock, times, peak, first, last, window_start, window_end)
-- KEYS[4] flag set  (set of the lock names the user has a flag record for)
-- ARGV[1] ttl in milliseconds (> 0): the window, from the first attempt
-- ARGV[2] max_attempts (>= 1): the first attempt of a window at or above it
--         flags the user
-- ARGV[3] enforce bans: "1" refuse banned users and place policy bans, "0" never (shadow, allowlist)
-- ARGV[4] may flag: "1" normally, "0" for allowlisted users
-- ARGV[5] ban after K flagged windows (0 = never ban by policy)
-- ARGV[6] policy ban length in milliseconds
-- ARGV[7] flag retention in milliseconds (flag records live this long after the last flag)
-- ARGV[8] user id
-- ARGV[9] lock name
--
-- Reply: {1, n, start_ms, exp_ms, now_ms, flagged_now, times_flagged, ban_until_ms}
--          counted: n is this attempt's number in the window (1 = the lock
--          was acquired); flagged_now is 1 for exactly one attempt per
--          window: the first whose n is at or above max_attempts (>=, not
--          ==: a count carried over from the PHP class, or a threshold
--          lowered mid-window, is already past it); times_flagged is the
--          flag record's count
--          (0 when not flagged now); ban_until_ms is the policy ban placed
--          by this attempt (0 = none).
--        {-1, ban_until_ms, now_ms}
--          the user is banned; nothing was counted.
-- Numbers are returned as decimal strings so no precision is lost.
--
-- No path leaves the counter without an expiry: it is created with its
-- PEXPIREAT in this script, and a counter found without one (written by
-- the old PHP code, INCR then a lost EXPIRE, or copied over by hand) is
-- repaired: it keeps its count and gets a fresh window of ttl from now.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
local max_attempts = tonumber(ARGV[2])
local enforce = ARGV[3] == '1'
local may_flag = ARGV[4] == '1'
local ban_after = tonumber(ARGV[5])
local ban_ms = tonumber(ARGV[6])
local retention = tonumber(ARGV[7])
local function s(x) return string.format('%.0f', x) end

if enforce then
  local ban_end = tonumber(redis.call('HGET', KEYS[2], 'until') or '0') or 0
  if ban_end > now then
    return {-1, s(ban_end), s(now)}
  end
end

local ty = redis.call('TYPE', KEYS[1])
if type(ty) == 'table' then ty = ty['ok'] end
local carried = 0
if ty == 'string' then
  -- A plain INCR counter (the PHP layout): keep its count, in our layout.
  carried = tonumber(redis.call('GET', KEYS[1])) or 0
  redis.call('DEL', KEYS[1])
  ty = 'none'
elseif ty ~= 'none' and ty ~= 'hash' then
  redis.call('DEL', KEYS[1])
  ty = 'none'
end

-- already: this window has flagged the user before (an operator may have
-- cleared the record since; that does not bring it back).
local n, start, exp
local already = false
if ty == 'hash' then
  local cur = redis.call('HMGET', KEYS[1], 'start', 'exp')
  local cexp = tonumber(cur[2] or '')
  if cexp and cexp <= now then
    -- The window is over but the key is not reaped yet: a new window.
    redis.call('DEL', KEYS[1])
    ty = 'none'
  else
    n = redis.call('HINCRBY', KEYS[1], 'n', 1)
    start = tonumber(cur[1] or '')
    exp = cexp
    if not start or not exp or redis.call('PTTL', KEYS[1]) < 0 then
      -- No expiry: repair it, or the user would be locked out forever.
      start = now
      exp = now + ttl
      redis.call('HSET', KEYS[1], 'start', s(start), 'exp', s(exp))
      redis.call('HDEL', KEYS[1], 'flagged')
      redis.call('PEXPIREAT', KEYS[1], exp)
    elseif redis.call('HGET', KEYS[1], 'flagged') == '1' then
      already = true
    elseif redis.call('HGET', KEYS[3], 'window_start') == s(start) then
      -- Flagged by a gateway from before the mark: its flag record names
      -- this window.
      already = true
    end
  end
end
if ty == 'none' then
  n = carried + 1
  start = now
  exp = now + ttl
  redis.call('HSET', KEYS[1], 'n', s(n), 'start', s(start), 'exp', s(exp))
  redis.call('PEXPIREAT', KEYS[1], exp)
end

local flagged_now = 0
local times = 0
local ban_until = 0
if may_flag and n >= max_attempts then
  if not already then
    flagged_now = 1
    redis.call('HSET', KEYS[1], 'flagged', '1')
    times = redis.call('HINCRBY', KEYS[3], 'times', 1)
    if times == 1 then
      redis.call('HSET', KEYS[3], 'user', ARGV[8], 'lock', ARGV[9], 'first', s(now))
    end
    local peak = tonumber(redis.call('HGET', KEYS[3], 'peak') or '0') or 0
    if n > peak then peak = n end
    redis.call('HSET', KEYS[3], 'last', s(now), 'peak', s(peak),
      'window_start', s(start), 'window_end', s(exp))
    redis.call('PEXPIRE', KEYS[3], retention)
    redis.call('SADD', KEYS[4], ARGV[9])
    redis.call('PEXPIRE', KEYS[4], retention)
    if enforce and ban_after > 0 and ban_ms > 0 and times >= ban_after then
      local ban_end = now + ban_ms
      local cur = tonumber(redis.call('HGET', KEYS[2], 'until') or '0') or 0
      if cur < ban_end then
        redis.call('DEL', KEYS[2])
        redis.call('HSET', KEYS[2], 'until', s(ban_end), 'source', 'policy', 'by', 'policy',
          'lock', ARGV[9], 'reason', 'flagged ' .. times .. ' times on lock ' .. ARGV[9],
          'created', s(now))
        redis.call('PEXPIREAT', KEYS[2], ban_end)
        ban_until = ban_end
      end
    end
  elseif redis.call('EXISTS', KEYS[3]) == 1 then
    -- Later attempts in a flagged window raise the peak, but never bring
    -- back a record an operator has cleared.
    local peak = tonumber(redis.call('HGET', KEYS[3], 'peak') or '0') or 0
    if n > peak then redis.call('HSET', KEYS[3], 'peak', s(n)) end
  end
end
return {1, n, s(start), s(exp), s(now), flagged_now, times, s(ban_until)}
