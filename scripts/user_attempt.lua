-- user_attempt.lua: one attempt on a user lock (the PHP Lock::addUserLock),
-- with the abuse counter, flagging and policy bans, atomically.
--
-- Every key belongs to one (tenant, user) and shares its hash tag.
-- KEYS[1] counter   (hash: n, start, exp, flagged, at; PEXPIREAT = exp) for (lock, user);
--                   flagged = "1" once the window has flagged the user;
--                   at = the times of the window's last attempts (at most
--                   ARGV[12]) as decimal milliseconds after start, comma-separated.
--                   With a rolling span (ARGV[20]) it is n, start, exp and
--                   roll instead, PEXPIREAT the later of exp and a span
--                   after the last attempt; roll holds the last attempt's
--                   time, the span's last flag and the last max_attempts
--                   attempt times within the span (below).
-- KEYS[2] ban       (hash: until, reason, by, source, lock, created; PEXPIREAT = until)
-- KEYS[3] flag      (hash: user, lock, times, peak, first, last, window_start, window_end,
--                   bans = automatic bans placed by this lock's policy,
--                   evidence = the flagged window's "at", offsets from window_start)
-- KEYS[4] flag set  (set of the lock names the user has a flag record for)
-- KEYS[5] webhook outbox (stream), optional (KEYS[5] is the attempt log
--         when ARGV[17] is 5): when given, the flag and a
--         policy ban are written to it as events in this same script, so
--         an event exists if and only if what it reports happened. Not
--         given on Redis Cluster (another slot; the caller adds the events
--         in a second step) or without webhooks.
-- ARGV[1] ttl in milliseconds (> 0): the window, from the first attempt
-- ARGV[2] max_attempts (>= 1): the first attempt of a window at or above it
--         flags the user
-- ARGV[3] enforce bans: "1" refuse banned users and place policy bans, "0" never (shadow, allowlist)
-- ARGV[4] may flag: "1" normally, "0" for allowlisted users
-- ARGV[5] ban after K flagged windows (0 = never ban by policy)
-- ARGV[6] length of the first policy ban in milliseconds (ban_seconds)
-- ARGV[7] flag retention in milliseconds (flag records live this long after the last flag)
-- ARGV[8] user id
-- ARGV[9] lock name
-- ARGV[10] factor (>= 1): the n-th policy ban lasts ARGV[6] * factor^(n-1)
-- ARGV[11] cap of a policy ban in milliseconds (max_ban_seconds)
-- ARGV[12] how many attempt times to keep as evidence (>= 1)
-- ARGV[13] event id of the flag event, ARGV[14] of the ban event (with KEYS[5])
-- ARGV[15] tenant (for the events)
-- ARGV[16] outbox length bound (XADD MAXLEN ~)
-- ARGV[17] the attempt log: absent or "0" none (off), "r" return the
--          entry for the caller to write in a second step (Redis Cluster,
--          where the log has a slot of its own: attempt_log.lua), or the
--          log's index in KEYS: write it here
-- ARGV[18] the attempt log's length bound, ARGV[19] its retention in ms
-- ARGV[20] the rolling span in ms (rolling_window_seconds; "0": fixed
--          windows). With it the threshold applies to the attempts within
--          the span, this one included, not to n; the window (n, held,
--          repeated) is the same. A flag fires when they reach max_attempts
--          and the last flag is a span old or more, so each flag counts
--          attempts no earlier flag counted (docs/abuse.md, "Rolling windows").
--
-- The attempt log (prelude/attempt_log.lua) gets one entry per attempt;
-- its outcome is decided here: banned (refused), flagged, allowlisted
-- (ARGV[4] "0"), shadow (ARGV[3] "0"), held (n = 1) or repeated.
--
-- Reply: {1, n, start_ms, exp_ms, now_ms, flagged_now, times_flagged, ban_until_ms, ban_number, entry,
--           count, reset_ms}
--          counted: n is this attempt's number in the window (1 = the lock
--          was acquired); flagged_now is 1 for exactly one attempt per
--          window: the first whose n is at or above max_attempts (>=, not
--          ==: a count carried over from the PHP class, or a threshold
--          lowered mid-window, is already past it); times_flagged is the
--          flag record's count
--          (0 when not flagged now); ban_until_ms is the policy ban placed
--          by this attempt (0 = none) and ban_number its n (the flag
--          record's bans, 0 = none).
--          count is what the threshold applies to (n, or the attempts
--          within the rolling span) and reset_ms when the oldest of them
--          leaves the window (exp_ms) or the span.
--        {-1, ban_until_ms, now_ms, entry}
--          the user is banned; nothing was counted.
--        entry is the attempt log entry's d when ARGV[17] is "r", else "".
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
local factor = tonumber(ARGV[10]) or 1
local max_ban = tonumber(ARGV[11]) or ban_ms
local max_evidence = tonumber(ARGV[12]) or 50
local logk = ARGV[17] or '0'
local roll_ms = tonumber(ARGV[20] or '0') or 0
local outbox = KEYS[5]
if logk == '5' then outbox = nil end
local function event(...)
  if outbox then
    redis.call('XADD', outbox, 'MAXLEN', '~', ARGV[16], '*', ...)
  end
end
-- push appends offset off to the packed list of attempt times, keeping
-- the last max_evidence: bounded memory per (lock, user).
local function push(list, off)
  if not list or list == '' then return off end
  list = list .. ',' .. off
  local _, commas = string.gsub(list, ',', ',')
  while commas >= max_evidence do
    list = string.sub(list, string.find(list, ',', 1, true) + 1)
    commas = commas - 1
  end
  return list
end
local function s(x) return string.format('%.0f', x) end
-- record logs this attempt (or returns its entry): n, w, o, b as in
-- prelude/attempt_log.lua.
local function record(n, w, o, b)
  if logk == '0' then return '' end
  local d = n .. ' ' .. w .. ' ' .. ARGV[1] .. ' ' .. o .. ' ' .. b .. ' ' .. ARGV[8]
  if logk == 'r' then return d end
  log_attempt(KEYS[tonumber(logk)], now, n, d, ARGV[18], tonumber(ARGV[19]), ttl)
  return ''
end

if enforce then
  local ban_end = tonumber(redis.call('HGET', KEYS[2], 'until') or '0') or 0
  if ban_end > now then
    return {-1, s(ban_end), s(now), record(0, 0, 'banned', s(ban_end))}
  end
end

-- c is what the threshold applies to, over [w_start, w_end).
local n, start, exp, c, w_start, w_end, evidence
-- already: the window (or the span) has flagged the user before (an
-- operator may have cleared the record since; that does not bring it back).
local already = false
if roll_ms > 0 then
  -- The span lives in the counter: one read, one write, one expiry.
  local cur = redis.pcall('HMGET', KEYS[1], 'n', 'start', 'exp', 'roll', 'flagged', 'at')
  local carried = 0
  if cur['err'] then
    -- A plain INCR counter (the PHP layout): keep its count, in our layout.
    local v = redis.pcall('GET', KEYS[1])
    if type(v) == 'string' then carried = tonumber(v) or 0 end
    redis.call('DEL', KEYS[1])
    cur = {}
  end
  n, start, exp = tonumber(cur[1] or ''), tonumber(cur[2] or ''), tonumber(cur[3] or '')
  local fresh = not (n and start and exp and exp > now)
  if not fresh then
    n = n + 1
  else
    -- A new window (the last one is over), or one repaired (no start or
    -- exp): the count goes on, in a fresh window of ttl from now.
    if exp and exp <= now then n = 0 end
    n = (n or carried) + 1
    start, exp = now, now + ttl
    if cur[5] or cur[6] then redis.call('HDEL', KEYS[1], 'flagged', 'at') end
  end
  -- roll is "l;a;d1,d2,...": l the last attempt's time (Redis ms), a how
  -- long before l the span last flagged (empty: not within the span), and
  -- how long before l each kept attempt was made, oldest first. Ages, not
  -- times: short enough to keep the hash in its compact encoding.
  local l, a, list = string.match(cur[4] or '', '^(%-?%d+);(%-?%d*);(.*)$')
  l = tonumber(l or '')
  local f = 0
  local kept = {}
  if l then
    f = l - (tonumber(a) or l)
    for x in string.gmatch(list, '%-?%d+') do
      local at = l - tonumber(x)
      if at > now - roll_ms then kept[#kept + 1] = at end
    end
  end
  kept[#kept + 1] = now
  while #kept > max_attempts do table.remove(kept, 1) end
  c = #kept
  w_start = kept[1]
  w_end = w_start + roll_ms
  already = f > 0 and now - f < roll_ms
  if may_flag and c >= max_attempts and not already then
    -- This attempt flags: the evidence is the counted attempts' offsets.
    f = now
    local offs = {}
    for i = math.max(1, c - max_evidence + 1), c do offs[#offs + 1] = s(kept[i] - w_start) end
    evidence = table.concat(offs, ',')
  end
  -- Whole milliseconds below 1e14: Lua writes them as integers.
  for i = 1, c do kept[i] = now - kept[i] end
  a = ''
  if f > 0 and now - f < roll_ms then a = now - f end
  local roll = now .. ';' .. a .. ';' .. table.concat(kept, ',')
  if fresh then
    redis.call('HSET', KEYS[1], 'n', s(n), 'start', s(start), 'exp', s(exp), 'roll', roll)
  else
    redis.call('HSET', KEYS[1], 'n', s(n), 'roll', roll)
  end
  redis.call('PEXPIREAT', KEYS[1], math.max(exp, now + roll_ms))
else
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
      local repaired = false
      if not start or not exp or redis.call('PTTL', KEYS[1]) < 0 then
        -- No expiry: repair it, or the user would be locked out forever.
        start = now
        exp = now + ttl
        redis.call('HSET', KEYS[1], 'start', s(start), 'exp', s(exp), 'at', '0')
        redis.call('HDEL', KEYS[1], 'flagged')
        redis.call('PEXPIREAT', KEYS[1], exp)
        repaired = true
      else
        redis.call('HSET', KEYS[1], 'at', push(redis.call('HGET', KEYS[1], 'at'), s(now - start)))
      end
      if repaired then
        -- A new window: nothing has flagged it yet.
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
    redis.call('HSET', KEYS[1], 'n', s(n), 'start', s(start), 'exp', s(exp), 'at', '0')
    redis.call('PEXPIREAT', KEYS[1], exp)
  end

  c, w_start, w_end = n, start, exp
end

local flagged_now = 0
local times = 0
local ban_until = 0
local ban_number = 0
if may_flag and c >= max_attempts then
  if not already then
    flagged_now = 1
    if roll_ms == 0 then redis.call('HSET', KEYS[1], 'flagged', '1') end
    times = redis.call('HINCRBY', KEYS[3], 'times', 1)
    if times == 1 then
      redis.call('HSET', KEYS[3], 'user', ARGV[8], 'lock', ARGV[9], 'first', s(now))
    end
    local peak = tonumber(redis.call('HGET', KEYS[3], 'peak') or '0') or 0
    if c > peak then peak = c end
    redis.call('HSET', KEYS[3], 'last', s(now), 'peak', s(peak),
      'window_start', s(w_start), 'window_end', s(w_end),
      'evidence', evidence or redis.call('HGET', KEYS[1], 'at') or '')
    redis.call('PEXPIRE', KEYS[3], retention)
    redis.call('SADD', KEYS[4], ARGV[9])
    redis.call('PEXPIRE', KEYS[4], retention)
    event('id', ARGV[13], 'type', 'flag', 'tenant', ARGV[15], 'user_id', ARGV[8], 'lock', ARGV[9],
      'at', s(now), 'attempts', s(c), 'times_flagged', s(times))
    if enforce and ban_after > 0 and ban_ms > 0 and times >= ban_after then
      -- Escalation: the n-th automatic ban lasts ban_ms * factor^(n-1),
      -- capped (the same loop as abuse.Policy.BanLength).
      local nban = (tonumber(redis.call('HGET', KEYS[3], 'bans') or '0') or 0) + 1
      local d = ban_ms
      for _ = 2, nban do
        if d >= max_ban then break end
        d = d * factor
      end
      if d > max_ban then d = max_ban end
      d = math.floor(d)
      local ban_end = now + d
      local cur = tonumber(redis.call('HGET', KEYS[2], 'until') or '0') or 0
      if cur < ban_end then
        redis.call('HSET', KEYS[3], 'bans', s(nban))
        redis.call('DEL', KEYS[2])
        redis.call('HSET', KEYS[2], 'until', s(ban_end), 'source', 'policy', 'by', 'policy',
          'lock', ARGV[9], 'reason', 'automatic ban ' .. nban .. ': flagged ' .. times .. ' times on lock ' .. ARGV[9],
          'created', s(now))
        redis.call('PEXPIREAT', KEYS[2], ban_end)
        ban_until = ban_end
        ban_number = nban
        event('id', ARGV[14], 'type', 'ban', 'tenant', ARGV[15], 'user_id', ARGV[8], 'lock', ARGV[9],
          'at', s(now), 'banned_until', s(ban_end), 'ban_number', s(nban), 'source', 'policy',
          'actor', 'policy', 'reason', 'automatic ban ' .. nban .. ': flagged ' .. times .. ' times on lock ' .. ARGV[9])
      end
    end
  elseif redis.call('EXISTS', KEYS[3]) == 1 then
    -- Later attempts in a flagged window raise the peak, but never bring
    -- back a record an operator has cleared.
    local peak = tonumber(redis.call('HGET', KEYS[3], 'peak') or '0') or 0
    if c > peak then redis.call('HSET', KEYS[3], 'peak', s(c)) end
    if roll_ms == 0 and redis.call('HGET', KEYS[3], 'window_start') == s(start) then
      -- The evidence follows the flagged window to its end.
      redis.call('HSET', KEYS[3], 'evidence', redis.call('HGET', KEYS[1], 'at') or '')
    end
  end
end
local outcome = 'repeated'
if flagged_now == 1 then
  outcome = 'flagged'
elseif not may_flag then
  outcome = 'allowlisted'
elseif not enforce then
  outcome = 'shadow'
elseif n == 1 then
  outcome = 'held'
end
return {1, n, s(start), s(exp), s(now), flagged_now, times, s(ban_until), ban_number,
  record(n, now - start, outcome, s(ban_until)), c, s(w_end)}
