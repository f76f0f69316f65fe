-- line.lua: the line of waiters of one name (docs/waiting.md, "One line
-- per name"). Not a script of its own: it is put in front of the scripts
-- that grant, free or leave (acquire.lua, acquire_set.lua,
-- sem_acquire.lua, release.lua, release_set.lua, force_release.lua,
-- sem_release.lua, leave.lua), which call these functions.
--
-- A line is two keys in the name's slot:
--   q  a zset: owner -> arrival, microseconds of the Redis clock, made
--      strictly increasing within the line, so Redis alone decides the order
--   w  a hash: 'q:' .. owner -> the deadline of the owner's ticket, in ms
--      (the lock's waiters key: a release publishes while it exists)
-- A ticket whose deadline has passed is dead (its gateway stopped keeping
-- it alive) and is removed by the first script that meets it.

-- line_ahead counts the live tickets ahead of owner (all of them when
-- owner is not in line), up to max, removing the dead ones it meets. It
-- also returns the soonest deadline among those counted.
local function line_ahead(q, w, owner, now_ms, max)
  local n, i, soonest = 0, 0, nil
  while n < max do
    local m = redis.call('ZRANGE', q, i, i)[1]
    if not m or m == owner then
      break
    end
    local d = tonumber(redis.call('HGET', w, 'q:' .. m) or '')
    if d and d > now_ms then
      n, i = n + 1, i + 1
      if not soonest or d < soonest then
        soonest = d
      end
    else
      redis.call('ZREM', q, m)
      redis.call('HDEL', w, 'q:' .. m)
    end
  end
  return n, soonest
end

-- line_join puts owner in line, keeping its place when it stands in it
-- already (a retry through another gateway adopts its live ticket), and
-- moves its ticket's deadline to now + lease_ms. Both keys live at least
-- lease_ms (w may live longer: event watchers).
local function line_join(q, w, owner, now_us, now_ms, lease_ms)
  if not redis.call('ZSCORE', q, owner) then
    local at = now_us
    local last = redis.call('ZRANGE', q, -1, -1, 'WITHSCORES')
    if last[2] and tonumber(last[2]) >= at then
      at = tonumber(last[2]) + 1
    end
    redis.call('ZADD', q, string.format('%.0f', at), owner)
  end
  redis.call('HSET', w, 'q:' .. owner, string.format('%.0f', now_ms + lease_ms))
  redis.call('PEXPIRE', q, lease_ms)
  if redis.call('PTTL', w) < lease_ms then
    redis.call('PEXPIRE', w, lease_ms)
  end
end

-- line_leave takes owner's ticket out of the line.
local function line_leave(q, w, owner)
  redis.call('ZREM', q, owner)
  redis.call('HDEL', w, 'q:' .. owner)
end

-- line_wake publishes on channel ('' none; with a hash tag a shard
-- channel: SPUBLISH) the wake-up of a name: its release message msg, a
-- newline, then the owners of the first max live tickets in line, one a
-- line (removing the dead tickets it meets). Those are the waiters Redis
-- grants next, and each gateway wakes exactly the ones it holds (owners
-- and messages hold no control characters). With nobody in line the
-- message names no owner and wakes only event watchers.
local function line_wake(channel, msg, q, w, now_ms, max)
  if channel == '' then
    return
  end
  local names, i = {}, 0
  while #names < max do
    local m = redis.call('ZRANGE', q, i, i)[1]
    if not m then
      break
    end
    local d = tonumber(redis.call('HGET', w, 'q:' .. m) or '')
    if d and d > now_ms then
      names[#names + 1] = m
      i = i + 1
    else
      redis.call('ZREM', q, m)
      redis.call('HDEL', w, 'q:' .. m)
    end
  end
  redis.call(string.find(channel, '{', 1, true) and 'SPUBLISH' or 'PUBLISH', channel,
    msg .. '\n' .. table.concat(names, '\n'))
end

