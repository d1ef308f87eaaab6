"""The Redis ledger's Lua scripts: each rule runs whole on the server, atomically.

Redis runs a script without interleaving any other command, so "check every limit, then hold
the worst case" cannot race with another process or machine. Every script is idempotent for
its arguments (a reservation or correction id that already exists, or a settle ``nonce``
already applied, is answered as done), so the client may resend one whose reply was lost.

Keys, all under the ledger's prefix ``P``:

- ``P call:<id>`` (hash): a call — ``state`` (open, settled, released, recovered,
  adjustment), ``rec`` (its record as JSON, written by Python), ``worst`` and ``actual``
  (15-place USD text), ``claims`` (JSON ``[[scope, period_key, limit, warn], ...]``, ``""``
  for none), ``time`` (µs since 1970), ``done`` (JSON of what the settlement changed),
  ``note``, ``closed_by`` (the settle's nonce), ``pid``/``host``/``exp_text`` (for recovery);
- ``P open`` (sorted set): open reservations by expiry (µs);
- ``P records`` (sorted set): closed calls and corrections by record time (µs) — what
  ``records()`` reads, oldest first, ties by id;
- ``P events`` (stream): the append-only log — ``call``, ``kind``, ``time``, ``usd``,
  ``detail`` — that ``verify()`` replays;
- ``P totals`` (hash): ``"<period_key> <scope>"`` -> ``"<spent> <reserved> <calls>"`` (calls
  counted for ``max_calls``; a value written before call caps has no third part: 0). A rolling
  window's period key names one step (``"1h@1779357900"``); a limit sums that step and the 60
  before it, as :func:`spendguard._core.periods.window_keys` does;
- ``P crossings`` (hash): ``"<period_key> <scope> <warn>"`` -> µs time it was first reached (for
  a rolling window the key of its window-length stretch,
  :func:`~spendguard._core.periods.warning_key`);
- ``P meta`` (hash): ``schema``.

Money is added as (whole dollars, femto-dollars) pairs of integers, exact in Lua's doubles;
see :mod:`spendguard._budget.ledger.redis.codec`. Keys are built inside the scripts from the prefix
(``ARGV[1]``). On Redis Cluster that prefix is the ledger's hash tag (``{spendguard:}``), so
every key a script touches is in one slot; each script declares one key, ``P totals``, only
so that the cluster routes it to the primary holding that slot.
"""

from __future__ import annotations

__all__ = ["ADJUST", "IMPORT", "RECOVER", "RELEASE", "RESERVE", "SETTLE"]

_COMMON = r"""
local E = 1000000000000000
local ZERO = {0, 0}
local function parse(s)
  local sign, whole, frac = string.match(s, '^(%-?)(%d+)%.(%d+)$')
  if not whole or #frac ~= 15 then error('spendguard: bad amount ' .. tostring(s)) end
  local d, f = tonumber(whole), tonumber(frac)
  if sign == '-' then
    if f == 0 then return {-d, 0} end
    return {-d - 1, E - f}
  end
  return {d, f}
end
local function neg(a)
  if a[2] == 0 then return {-a[1], 0} end
  return {-a[1] - 1, E - a[2]}
end
local function add(a, b)
  local d, f = a[1] + b[1], a[2] + b[2]
  if f >= E then return {d + 1, f - E} end
  return {d, f}
end
local function lt(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end
local function fmt(a)
  if a[1] < 0 then
    local m = neg(a)
    return string.format('-%d.%015d', m[1], m[2])
  end
  return string.format('%d.%015d', a[1], a[2])
end
local P = ARGV[1]
local function field(c) return c[2] .. ' ' .. c[1] end
local function get_totals(f)
  local v = redis.call('HGET', P .. 'totals', f)
  if not v then return ZERO, ZERO, 0 end
  local s, r, n = string.match(v, '^(%S+) (%S+) ?(%d*)$')
  return parse(s), parse(r), tonumber(n) or 0
end
local function move(claims, spent, reserved, calls)
  for _, c in ipairs(claims) do
    local s, r, n = get_totals(field(c))
    redis.call('HSET', P .. 'totals', field(c), fmt(add(s, spent)) .. ' ' .. fmt(add(r, reserved))
               .. ' ' .. string.format('%d', n + (calls or 0)))
  end
end
local UNIT_S = {s = 1, m = 60, h = 3600, d = 86400}
local STEPS = 60
-- A rolling window's step key "1h@1779357900": its label, length (s) and step start (s).
local function window(c)
  local n, u, start = string.match(c[2], '^([1-9]%d*)([smhd])@(%d+)$')
  if not n then return nil end
  return n .. u, tonumber(n) * UNIT_S[u], tonumber(start)
end
-- What a limit is checked against: the period's totals, or the window's last STEPS + 1 steps.
local function window_totals(c)
  local label, secs, start = window(c)
  if not label then return get_totals(field(c)) end
  local s, r, n = ZERO, ZERO, 0
  for back = 0, STEPS do
    local a, b, m = get_totals(label .. '@' .. string.format('%d', start - back * (secs / STEPS))
                               .. ' ' .. c[1])
    s, r, n = add(s, a), add(r, b), n + m
  end
  return s, r, n
end
local function warning_field(c)
  local label, secs, start = window(c)
  if not label then return field(c) end
  return label .. '@' .. string.format('%d', start - start % secs) .. ' ' .. c[1]
end
local function event(id, kind, time, usd, detail)
  redis.call('XADD', P .. 'events', '*', 'call', id, 'kind', kind, 'time', time, 'usd', usd,
             'detail', detail or '')
end
-- Moves a call from the open reservations to the records (by its record time, reserved_at).
local function close(id, reserved_at, kind, time, usd, detail)
  redis.call('ZREM', P .. 'open', id)
  redis.call('ZADD', P .. 'records', reserved_at, id)
  event(id, kind, time, usd, detail)
end
local function crossings(claims, time, out)
  for i, c in ipairs(claims) do
    if c[3] ~= '' and c[4] ~= '' then
      local s = window_totals(c)
      if not lt(s, parse(c[4])) and
          redis.call('HSETNX', P .. 'crossings', warning_field(c) .. ' ' .. c[4], time) == 1 then
        out[#out + 1] = tostring(i)
        out[#out + 1] = fmt(s)
      end
    end
  end
  return out
end
local function recover(now, most)
  local ids = redis.call('ZRANGEBYSCORE', P .. 'open', '-inf', now, 'LIMIT', 0, most)
  for _, id in ipairs(ids) do
    local key = P .. 'call:' .. id
    local h = redis.call('HMGET', key, 'state', 'worst', 'claims', 'pid', 'host', 'exp_text',
                         'time')
    if h[1] == 'open' then
      local note = 'recovered: reservation of pid ' .. h[4] .. ' on ' .. h[5] ..
        ' expired at ' .. h[6] .. ' without being settled; charged its worst case'
      redis.call('HSET', key, 'state', 'recovered', 'actual', h[2], 'note', note)
      close(id, h[7], 'recover', now, h[2], note)
      local worst = parse(h[2])
      move(cjson.decode(h[3]), worst, neg(worst))
    else
      redis.call('ZREM', P .. 'open', id)
    end
  end
  return ids
end
"""

RECOVER = _COMMON + r"""
-- ARGV: prefix, now, most
return recover(ARGV[2], tonumber(ARGV[3]))
"""

RESERVE = _COMMON + r"""
-- ARGV: prefix, id, time, expires, worst, claims, rec, pid, host, exp_text, most_recovered
local id = ARGV[2]
local key = P .. 'call:' .. id
if redis.call('EXISTS', key) == 1 then return {'ok'} end
recover(ARGV[3], tonumber(ARGV[11]))
local claims = cjson.decode(ARGV[6])
local worst = parse(ARGV[5])
local seen, refused = {'refused'}, false
for _, c in ipairs(claims) do
  local s, r, n = window_totals(c)
  seen[#seen + 1] = fmt(s)
  seen[#seen + 1] = fmt(r)
  seen[#seen + 1] = string.format('%d', n)
  if c[3] ~= '' and lt(parse(c[3]), add(add(s, r), worst)) then refused = true end
  if c[5] and c[5] ~= '' and n + 1 > tonumber(c[5]) then refused = true end
end
if refused then return seen end
redis.call('HSET', key, 'state', 'open', 'worst', ARGV[5], 'claims', ARGV[6], 'rec', ARGV[7],
           'time', ARGV[3], 'pid', ARGV[8], 'host', ARGV[9], 'exp_text', ARGV[10])
redis.call('ZADD', P .. 'open', ARGV[4], id)
event(id, 'reserve', ARGV[3], ARGV[5], '')
move(claims, ZERO, worst, 1)
return {'ok'}
"""

# A reply of {'recovered', worst, claims, rec} asks the client for a correction (ADJUST).
SETTLE = _COMMON + r"""
-- ARGV: prefix, id, actual, done, time, nonce
local id = ARGV[2]
local key = P .. 'call:' .. id
local h = redis.call('HMGET', key, 'state', 'worst', 'claims', 'closed_by', 'time')
if not h[1] then return {'missing'} end
if h[1] == 'recovered' then return {'recovered', h[2], h[3], redis.call('HGET', key, 'rec')} end
if h[1] ~= 'open' then
  if h[4] == ARGV[6] then return {'ok', h[3]} end
  return {'closed', h[1]}
end
redis.call('HSET', key, 'state', 'settled', 'actual', ARGV[3], 'done', ARGV[4],
           'closed_by', ARGV[6])
close(id, h[5], 'settle', ARGV[5], ARGV[3], '')
local claims = cjson.decode(h[3])
move(claims, parse(ARGV[3]), neg(parse(h[2])))
return crossings(claims, ARGV[5], {'ok', h[3]})
"""

RELEASE = _COMMON + r"""
-- ARGV: prefix, id, reason, time, nonce
local id = ARGV[2]
local key = P .. 'call:' .. id
local h = redis.call('HMGET', key, 'state', 'worst', 'claims', 'closed_by', 'time')
if not h[1] then return {'missing'} end
if h[1] == 'recovered' then return {'recovered', h[2], h[3], redis.call('HGET', key, 'rec')} end
if h[1] ~= 'open' then
  if h[4] == ARGV[5] then return {'ok'} end
  return {'closed', h[1]}
end
redis.call('HSET', key, 'state', 'released', 'actual', fmt(ZERO), 'note', ARGV[3],
           'closed_by', ARGV[5])
close(id, h[5], 'release', ARGV[4], fmt(ZERO), ARGV[3])
move(cjson.decode(h[3]), ZERO, neg(parse(h[2])), -1)
return {'ok'}
"""

ADJUST = _COMMON + r"""
-- ARGV: prefix, id, time, amount, claims, rec, note, report_crossings
local id = ARGV[2]
local key = P .. 'call:' .. id
if redis.call('EXISTS', key) == 1 then return {'ok'} end
redis.call('HSET', key, 'state', 'adjustment', 'worst', fmt(ZERO), 'actual', ARGV[4],
           'claims', ARGV[5], 'rec', ARGV[6], 'time', ARGV[3], 'note', ARGV[7])
redis.call('ZADD', P .. 'records', ARGV[3], id)
event(id, 'adjust', ARGV[3], ARGV[4], ARGV[7])
local claims = cjson.decode(ARGV[5])
move(claims, parse(ARGV[4]), ZERO)
if ARGV[8] == '1' then return crossings(claims, ARGV[3], {'ok'}) end
return {'ok'}
"""

# A call made and closed while Redis was unreachable (fail-open), replayed once it is back:
# its money is already spent, so no limit is checked; warnings come with the next settle.
IMPORT = _COMMON + r"""
-- ARGV: prefix, id, state, time, worst, actual, claims, rec, done, note, closed_at
local id = ARGV[2]
local key = P .. 'call:' .. id
if redis.call('EXISTS', key) == 1 then return {'ok'} end
local state = ARGV[3]
redis.call('HSET', key, 'state', state, 'worst', ARGV[5], 'actual', ARGV[6], 'claims', ARGV[7],
           'rec', ARGV[8], 'done', ARGV[9], 'note', ARGV[10], 'time', ARGV[4])
redis.call('ZADD', P .. 'records', ARGV[4], id)
if state == 'adjustment' then
  event(id, 'adjust', ARGV[11], ARGV[6], ARGV[10])
else
  local kinds = {settled = 'settle', released = 'release', recovered = 'recover'}
  event(id, 'reserve', ARGV[4], ARGV[5], '')
  event(id, kinds[state], ARGV[11], ARGV[6], ARGV[10])
end
local counted = 0
if state == 'settled' or state == 'recovered' then counted = 1 end
move(cjson.decode(ARGV[7]), parse(ARGV[6]), ZERO, counted)
return {'ok'}
"""
