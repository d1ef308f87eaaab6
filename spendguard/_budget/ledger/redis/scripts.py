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
  window's period key names one step (``"1h@1779357900"``), where its calls are charged and
  counted once they close; its open calls are held, and counted, under its held key
  (``"1h@open"``) until then; a limit sums the step, the 60 before it and the held key, as
  :func:`spendguard._core.periods.window_keys` does;
- ``P crossings`` (hash): ``"<period_key> <scope> <warn>"`` -> µs time it was first reached (for
  a rolling window the key of its window-length stretch,
  :func:`~spendguard._core.periods.warning_key`);
- ``P meta`` (hash): ``schema`` (:data:`~spendguard._budget.ledger.redis.session.SCHEMA`;
  ``MIGRATE_2`` brings a schema 1 ledger's open calls to their held keys), ``generation``
  and ``reseeded`` (the ledger's identity, see :mod:`~spendguard._budget.ledger.redis.identity`).
  A reserve, adjust or import, or a settle or release that finds no call, answers
  ``{'reset'}`` when the generation is gone (the ledger was flushed under a live connection).

Money is added as (whole dollars, femto-dollars) pairs of integers, exact in Lua's doubles,
passed as two values rather than a table; see :mod:`spendguard._budget.ledger.redis.codec`.
A script reads and parses each totals field it touches once: a limit check and the write after
it, or a settle and its warning check, cost one ``HGET``. Keys are built inside the scripts
from the prefix (``ARGV[1]``). On Redis Cluster that prefix is the ledger's hash tag
(``{spendguard:}``), so every key a script touches is in one slot; each script declares one
key, ``P totals``, only so that the cluster routes it to the primary holding that slot.
"""

from __future__ import annotations

__all__ = ["ADJUST", "BODIES", "COMMON", "IMPORT", "MIGRATE_2", "RECOVER", "RELEASE",
           "RESERVE", "SETTLE"]

COMMON = r"""
local E = 1000000000000000
-- The prefix, its totals key and the totals fields read so far: set by begin() as each run
-- starts (a function library keeps these between runs; Redis runs one at a time).
local P, TOTALS, cached
local function begin(argv)
  P = argv[1]
  TOTALS = P .. 'totals'
  cached = {}
end
-- An amount is two numbers, whole dollars and femto-dollars (0 <= femto < E), passed as two
-- values rather than a table: nothing to allocate.
local function parse(s)
  local sign, whole, frac = string.match(s, '^(%-?)(%d+)%.(%d+)$')
  if not whole or #frac ~= 15 then error('spendguard: bad amount ' .. tostring(s)) end
  local d, f = tonumber(whole), tonumber(frac)
  if sign == '-' then
    if f == 0 then return -d, 0 end
    return -d - 1, E - f
  end
  return d, f
end
local function neg(d, f)
  if f == 0 then return -d, 0 end
  return -d - 1, E - f
end
local function add(ad, af, bd, bf)
  local d, f = ad + bd, af + bf
  if f >= E then return d + 1, f - E end
  return d, f
end
local function lt(ad, af, bd, bf) return ad < bd or (ad == bd and af < bf) end
local function fmt(d, f)
  if d < 0 then
    d, f = neg(d, f)
    return string.format('-%d.%015d', d, f)
  end
  return string.format('%d.%015d', d, f)
end
local function field(c) return c[2] .. ' ' .. c[1] end
-- Whether the ledger lost its identity (flushed): its writes are refused, never absorbed.
local function reset() return redis.call('HEXISTS', P .. 'meta', 'generation') == 0 end
-- The totals fields this run has read or written, parsed once (in cached):
-- {spent whole, spent femto, reserved whole, reserved femto, calls}.
local function get_totals(f)
  local t = cached[f]
  if t then return t end
  local v = redis.call('HGET', TOTALS, f)
  if v then
    local s, r, n = string.match(v, '^(%S+) (%S+) ?(%d*)$')
    local sd, sf = parse(s)
    local rd, rf = parse(r)
    t = {sd, sf, rd, rf, tonumber(n) or 0}
  else
    t = {0, 0, 0, 0, 0}
  end
  cached[f] = t
  return t
end
local function bump(f, sd, sf, rd, rf, calls)
  local t = get_totals(f)
  t[1], t[2] = add(t[1], t[2], sd, sf)
  t[3], t[4] = add(t[3], t[4], rd, rf)
  t[5] = t[5] + calls
  redis.call('HSET', TOTALS, f, fmt(t[1], t[2]) .. ' ' .. fmt(t[3], t[4]) .. ' ' ..
             string.format('%d', t[5]))
end
local function move(claims, sd, sf, rd, rf, calls)
  for _, c in ipairs(claims) do bump(field(c), sd, sf, rd, rf, calls) end
end
local UNIT_S = {s = 1, m = 60, h = 3600, d = 86400}
local STEPS = 60
local LEAD = 2  -- steps after the claim's own (WINDOW_LEAD_STEPS)
-- A rolling window's step key "1h@1779357900": its label, length (s) and step start (s).
local function window(c)
  local n, u, start = string.match(c[2], '^([1-9]%d*)([smhd])@(%d+)$')
  if not n then return nil end
  return n .. u, tonumber(n) * UNIT_S[u], tonumber(start)
end
-- Where an open call is held: its period, or its rolling window's held key ("1h@open").
local function held_field(c)
  local label = window(c)
  if not label then return field(c) end
  return label .. '@open ' .. c[1]
end
-- A reservation: its worst case held, and counted, until the call closes.
local function hold(claims, wd, wf)
  for _, c in ipairs(claims) do bump(held_field(c), 0, 0, wd, wf, 1) end
end
-- A close: the worst case no longer held; what it cost (ad, af) charged where it was
-- reserved, and counted there if `counted` is 1 (settled, recovered) rather than 0 (released).
local function unhold(claims, wd, wf, ad, af, counted)
  local nd, nf = neg(wd, wf)
  for _, c in ipairs(claims) do
    local h, f = held_field(c), field(c)
    if h == f then
      bump(f, ad, af, nd, nf, counted - 1)
    else
      bump(h, 0, 0, nd, nf, -1)
      bump(f, ad, af, 0, 0, counted)
    end
  end
end
-- What a limit is checked against: the period's totals, or the window's last STEPS + 1 steps
-- and its held key (the calls still open, however old).
local function window_totals(c)
  local label, secs, start = window(c)
  if not label then
    local t = get_totals(field(c))
    return t[1], t[2], t[3], t[4], t[5]
  end
  local sd, sf, rd, rf, n = 0, 0, 0, 0, 0
  for back = -LEAD, STEPS do
    local t = get_totals(label .. '@' .. string.format('%d', start - back * (secs / STEPS))
                         .. ' ' .. c[1])
    sd, sf = add(sd, sf, t[1], t[2])
    rd, rf = add(rd, rf, t[3], t[4])
    n = n + t[5]
  end
  local t = get_totals(label .. '@open ' .. c[1])
  sd, sf = add(sd, sf, t[1], t[2])
  rd, rf = add(rd, rf, t[3], t[4])
  return sd, sf, rd, rf, n + t[5]
end
local function warning_field(c)
  local label, secs, start = window(c)
  if not label then return field(c) end
  return label .. '@' .. string.format('%d', start - start % secs) .. ' ' .. c[1]
end
-- Appends to the event log; returns the entry's id, the ledger's sequence.
local function event(id, kind, time, usd, detail)
  return redis.call('XADD', P .. 'events', '*', 'call', id, 'kind', kind, 'time', time,
                    'usd', usd, 'detail', detail or '')
end
-- Moves a call from the open reservations to the records (by its record time, reserved_at).
local function close(id, reserved_at, kind, time, usd, detail)
  redis.call('ZREM', P .. 'open', id)
  redis.call('ZADD', P .. 'records', reserved_at, id)
  return event(id, kind, time, usd, detail)
end
local function crossings(claims, time, out)
  for i, c in ipairs(claims) do
    if c[3] ~= '' and c[4] ~= '' then
      local sd, sf = window_totals(c)
      local wd, wf = parse(c[4])
      if not lt(sd, sf, wd, wf) and
          redis.call('HSETNX', P .. 'crossings', warning_field(c) .. ' ' .. c[4], time) == 1 then
        out[#out + 1] = tostring(i)
        out[#out + 1] = fmt(sd, sf)
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
      local wd, wf = parse(h[2])
      unhold(cjson.decode(h[3]), wd, wf, wd, wf, 1)
    else
      redis.call('ZREM', P .. 'open', id)
    end
  end
  return ids
end
"""

_RECOVER_BODY = r"""
begin(ARGV)
-- ARGV: prefix, now, most
return recover(ARGV[2], tonumber(ARGV[3]))
"""

_RESERVE_BODY = r"""
begin(ARGV)
if reset() then return {'reset'} end
-- ARGV: prefix, id, time, expires, worst, claims, rec, pid, host, exp_text, most_recovered
local id = ARGV[2]
local key = P .. 'call:' .. id
if redis.call('EXISTS', key) == 1 then return {'ok'} end
recover(ARGV[3], tonumber(ARGV[11]))
local claims = cjson.decode(ARGV[6])
local wd, wf = parse(ARGV[5])
local refused = false
for _, c in ipairs(claims) do
  local sd, sf, rd, rf, n = window_totals(c)
  if c[3] ~= '' then
    local ld, lf = parse(c[3])
    local hd, hf = add(sd, sf, rd, rf)
    if lt(ld, lf, add(hd, hf, wd, wf)) then refused = true end
  end
  if c[5] and c[5] ~= '' and n + 1 > tonumber(c[5]) then refused = true end
end
if refused then
  local seen = {'refused'}
  for _, c in ipairs(claims) do
    local sd, sf, rd, rf, n = window_totals(c)
    seen[#seen + 1] = fmt(sd, sf)
    seen[#seen + 1] = fmt(rd, rf)
    seen[#seen + 1] = string.format('%d', n)
  end
  return seen
end
redis.call('HSET', key, 'state', 'open', 'worst', ARGV[5], 'claims', ARGV[6], 'rec', ARGV[7],
           'time', ARGV[3], 'pid', ARGV[8], 'host', ARGV[9], 'exp_text', ARGV[10])
redis.call('ZADD', P .. 'open', ARGV[4], id)
event(id, 'reserve', ARGV[3], ARGV[5], '')
hold(claims, wd, wf)
return {'ok'}
"""

# {'ok', seq}, or {'ok', seq, claims, i, spent, ...} with the warning levels this settle reached
# (by the claim's 1-based index); seq is the settle's event id (the ledger's sequence); a
# settle already applied answers {'ok'}. A reply of {'recovered', worst, claims, rec} asks the
# client for a correction (ADJUST).
_SETTLE_BODY = r"""
begin(ARGV)
-- ARGV: prefix, id, actual, done, time, nonce
local id = ARGV[2]
local key = P .. 'call:' .. id
local h = redis.call('HMGET', key, 'state', 'worst', 'claims', 'closed_by', 'time')
if not h[1] then
  if reset() then return {'reset'} end
  return {'missing'}
end
if h[1] == 'recovered' then return {'recovered', h[2], h[3], redis.call('HGET', key, 'rec')} end
if h[1] ~= 'open' then
  if h[4] == ARGV[6] then return {'ok'} end
  return {'closed', h[1]}
end
redis.call('HSET', key, 'state', 'settled', 'actual', ARGV[3], 'done', ARGV[4],
           'closed_by', ARGV[6])
local seq = close(id, h[5], 'settle', ARGV[5], ARGV[3], '')
local claims = cjson.decode(h[3])
local ad, af = parse(ARGV[3])
local wd, wf = parse(h[2])
unhold(claims, wd, wf, ad, af, 1)
local out = crossings(claims, ARGV[5], {'ok', seq})
if #out > 2 then table.insert(out, 3, h[3]) end
return out
"""

_RELEASE_BODY = r"""
begin(ARGV)
-- ARGV: prefix, id, reason, time, nonce
local id = ARGV[2]
local key = P .. 'call:' .. id
local h = redis.call('HMGET', key, 'state', 'worst', 'claims', 'closed_by', 'time')
if not h[1] then
  if reset() then return {'reset'} end
  return {'missing'}
end
if h[1] == 'recovered' then return {'recovered', h[2], h[3], redis.call('HGET', key, 'rec')} end
if h[1] ~= 'open' then
  if h[4] == ARGV[5] then return {'ok'} end
  return {'closed', h[1]}
end
redis.call('HSET', key, 'state', 'released', 'actual', fmt(0, 0), 'note', ARGV[3],
           'closed_by', ARGV[5])
close(id, h[5], 'release', ARGV[4], fmt(0, 0), ARGV[3])
local wd, wf = parse(h[2])
unhold(cjson.decode(h[3]), wd, wf, 0, 0, 0)
return {'ok'}
"""

_ADJUST_BODY = r"""
begin(ARGV)
if reset() then return {'reset'} end
-- ARGV: prefix, id, time, amount, claims, rec, note, report_crossings
local id = ARGV[2]
local key = P .. 'call:' .. id
if redis.call('EXISTS', key) == 1 then return {'ok'} end
redis.call('HSET', key, 'state', 'adjustment', 'worst', fmt(0, 0), 'actual', ARGV[4],
           'claims', ARGV[5], 'rec', ARGV[6], 'time', ARGV[3], 'note', ARGV[7])
redis.call('ZADD', P .. 'records', ARGV[3], id)
event(id, 'adjust', ARGV[3], ARGV[4], ARGV[7])
local claims = cjson.decode(ARGV[5])
local ad, af = parse(ARGV[4])
move(claims, ad, af, 0, 0, 0)
if ARGV[8] == '1' then return crossings(claims, ARGV[3], {'ok'}) end
return {'ok'}
"""

# A call made and closed while Redis was unreachable (fail-open), replayed once it is back:
# its money is already spent, so no limit is checked; warnings come with the next settle.
_IMPORT_BODY = r"""
begin(ARGV)
if reset() then return {'reset'} end
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
local ad, af = parse(ARGV[6])
move(cjson.decode(ARGV[7]), ad, af, 0, 0, counted)
return {'ok'}
"""

# Each script's own part, after COMMON: the body of its function in a function library.
BODIES = {"reserve": _RESERVE_BODY, "settle": _SETTLE_BODY, "release": _RELEASE_BODY,
          "adjust": _ADJUST_BODY, "recover": _RECOVER_BODY, "import": _IMPORT_BODY}
# Each script whole, as EVAL runs it.
RESERVE = COMMON + _RESERVE_BODY
SETTLE = COMMON + _SETTLE_BODY
RELEASE = COMMON + _RELEASE_BODY
ADJUST = COMMON + _ADJUST_BODY
RECOVER = COMMON + _RECOVER_BODY
IMPORT = COMMON + _IMPORT_BODY

# Schema 1 -> 2, once, atomically: a rolling window's open calls move from the step they were
# reserved in to the window's held key (schema 2 keeps them there until they close). Run with
# EVAL (it is not part of the function library); its one key routes it on a cluster.
MIGRATE_2 = COMMON + r"""
begin(ARGV)
-- ARGV: prefix
local meta = P .. 'meta'
if redis.call('HGET', meta, 'schema') ~= '1' then return 0 end
for _, id in ipairs(redis.call('ZRANGE', P .. 'open', 0, -1)) do
  local h = redis.call('HMGET', P .. 'call:' .. id, 'state', 'worst', 'claims')
  if h[1] == 'open' then
    local wd, wf = parse(h[2])
    local nd, nf = neg(wd, wf)
    for _, c in ipairs(cjson.decode(h[3])) do
      local held, f = held_field(c), field(c)
      if held ~= f then
        bump(f, 0, 0, nd, nf, -1)
        bump(held, 0, 0, wd, wf, 1)
      end
    end
  end
end
redis.call('HSET', meta, 'schema', '2')
return 1
"""
